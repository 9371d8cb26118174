package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// pageTiming is the waiting page script's timing, read from the script
// itself so the probe's visitors keep doing what the real page does.
type pageTiming struct {
	// OneWayCap bounds the half round trip the page subtracts from
	// retry_after, so an attempt arrives at nxt.
	OneWayCap time.Duration `json:"one_way_cap"`
	// RateLimitJitter is the most the page adds to Retry-After when a 429
	// carries no token (a rate limit in front of the room).
	RateLimitJitter time.Duration `json:"rate_limit_jitter"`
	// ClosedWait is how long the page waits on a closed room.
	ClosedWait time.Duration `json:"closed_wait"`
	// TroubleWait is the page's wait after an unexpected answer without
	// Retry-After, and NetworkRetry the Retry-After it assumes when a
	// request fails outright.
	TroubleWait  time.Duration `json:"trouble_wait"`
	NetworkRetry time.Duration `json:"network_retry"`
}

// pagePatterns are the script's statements the probe depends on; each
// must match exactly once. The formula patterns have no value: they
// check that the page still waits retry_after minus the half round trip,
// and follows a 429 that carries a token.
var pagePatterns = []struct {
	name string
	re   *regexp.Regexp
	unit time.Duration
	set  func(*pageTiming, time.Duration)
}{
	{"one-way cap", regexp.MustCompile(`oneWay = Math\.min\(\(performance\.now\(\) - sent\) / 2, (\d+)\)`), time.Millisecond,
		func(p *pageTiming, d time.Duration) { p.OneWayCap = d }},
	{"rate-limit jitter", regexp.MustCompile(`await sleep\(a\.retry \* 1000 \+ Math\.random\(\) \* (\d+)\)`), time.Millisecond,
		func(p *pageTiming, d time.Duration) { p.RateLimitJitter = d }},
	{"closed wait", regexp.MustCompile(`countdown\((\d+)\);\s*await sleep\((\d+)\);\s*t = await post\("/token"\)`), time.Millisecond,
		func(p *pageTiming, d time.Duration) { p.ClosedWait = d }},
	{"trouble wait", regexp.MustCompile(`const backoff = \(t\.retry \|\| (\d+)\) \* 1000`), time.Second,
		func(p *pageTiming, d time.Duration) { p.TroubleWait = d }},
	{"network retry", regexp.MustCompile(`return \{ status: 0, data: null, retry: (\d+) \}`), time.Second,
		func(p *pageTiming, d time.Duration) { p.NetworkRetry = d }},
	{"wait formula", regexp.MustCompile(`const wait = Math\.max\(0, d\.retry_after \* 1000 - oneWay\)`), 0, nil},
	{"follows a 429 with a token", regexp.MustCompile(`t\.status === 429 && t\.data && t\.data\.challenge`), 0, nil},
	{"new token on 401/403/409/400", regexp.MustCompile(`t\.status === 401 \|\| t\.status === 403 \|\| t\.status === 409 \|\| t\.status === 400`), 0, nil},
}

// pageAssets is where the waiting page's scripts are, from the
// repository's root.
const pageAssets = "gateway/pages/assets"

// readPageTiming reads the timing from the page's scripts in dir
// (pageAssets/*.js); a pattern that matches nowhere, or more than once,
// is an error naming it: the page changed and the probe must follow.
func readPageTiming(dir string) (pageTiming, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.js"))
	if err != nil || len(files) == 0 {
		return pageTiming{}, fmt.Errorf("no page scripts in %s", dir)
	}
	var src []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return pageTiming{}, fmt.Errorf("reading the page script: %w", err)
		}
		src = append(append(src, b...), '\n')
	}
	return parsePageTiming(src)
}

func parsePageTiming(src []byte) (pageTiming, error) {
	var p pageTiming
	for _, pat := range pagePatterns {
		m := pat.re.FindAllSubmatch(src, -1)
		if len(m) != 1 {
			return pageTiming{}, fmt.Errorf("waiting page script: %q found %d times, want once (pattern %s)", pat.name, len(m), pat.re)
		}
		if pat.set == nil {
			continue
		}
		n, err := strconv.Atoi(string(m[0][1]))
		if err != nil {
			return pageTiming{}, fmt.Errorf("waiting page script: %s: %w", pat.name, err)
		}
		if len(m[0]) > 2 && string(m[0][2]) != string(m[0][1]) {
			return pageTiming{}, fmt.Errorf("waiting page script: %s: counts down %s ms but sleeps %s ms", pat.name, m[0][1], m[0][2])
		}
		pat.set(&p, time.Duration(n)*pat.unit)
	}
	return p, nil
}
