package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/fairgate/fairgate/admission/tokens"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// pollRequest is `targets poll SITE ROOM`: a waiting token from SITE's
// token endpoint whose checkpoint has passed and at which it is not
// eligible, with its solved challenge, printed as two lines: the Cookie
// header, and the admit body. Presented again and again, it makes the
// gateway judge it every time, and answer 429 "wait" with the next version,
// as an honest page's poll does. It fails if the room admits every token
// it tries (the room should wait long: tau of hours, fixed_speed).
func pollRequest(site, room string) error {
	client := &http.Client{Timeout: 10 * time.Second}
	cookie := "fairgate_wait_" + room
	for range 20 {
		resp, err := client.Post(site+"/_fairgate/token", "application/json", nil)
		if err != nil {
			return err
		}
		var tk struct {
			Token       string `json:"token"`
			Challenge   string `json:"challenge"`
			Difficulty  int    `json:"difficulty"`
			NextAttempt int64  `json:"next_attempt"`
		}
		err = json.NewDecoder(resp.Body).Decode(&tk)
		resp.Body.Close()
		if err != nil || tk.Token == "" {
			return fmt.Errorf("token endpoint: %d, %v", resp.StatusCode, err)
		}
		nonce, err := tokens.Solve(context.Background(), tk.Challenge, tk.Difficulty)
		if err != nil {
			return err
		}
		time.Sleep(time.Until(time.UnixMilli(tk.NextAttempt)) + 10*time.Millisecond)
		body := fmt.Sprintf(`{"nonce":"%d"}`, nonce)
		req, err := http.NewRequest(http.MethodPost, site+"/_fairgate/admit", strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Cookie", cookie+"="+tk.Token)
		resp, err = client.Do(req)
		if err != nil {
			return err
		}
		var answer struct {
			Outcome string `json:"outcome"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests && answer.Outcome == "wait" {
			fmt.Printf("Cookie: %s=%s\n%s\n", cookie, tk.Token, body)
			return nil
		}
	}
	return fmt.Errorf("%s admitted (or refused) 20 tokens in a row: give the room a long tau and fixed_speed", site)
}

// openLoop is `targets open [flags] URL`: load at a fixed arrival rate, as
// wrk2 does, for the latency a server gives at a load it can carry. Each
// request is timed from when it was due, not from when a connection was
// free to send it, so a server that falls behind shows it in the latency
// (no coordinated omission). It prints "achieved/s p50 p99 errors", the
// latencies in milliseconds.
func openLoop(args []string) error {
	fs := flag.NewFlagSet("open", flag.ContinueOnError)
	rate := fs.Float64("rate", 10000, "requests per second")
	dur := fs.Duration("d", 10*time.Second, "duration")
	conns := fs.Int("c", 64, "connections (requests in flight at most)")
	method := fs.String("method", http.MethodGet, "method")
	body := fs.String("body", "", "request body")
	var headers headerFlags
	fs.Var(&headers, "H", "header `Name: value` (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *rate <= 0 || *conns <= 0 {
		return fmt.Errorf("usage: targets open [-rate N] [-d DUR] [-c CONNS] [-method M] [-body B] [-H 'Name: value']... URL")
	}
	url := fs.Arg(0)
	transport := &http.Transport{MaxIdleConnsPerHost: *conns, MaxConnsPerHost: *conns, DisableCompression: true}
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	total := int(*rate * dur.Seconds())
	interval := time.Duration(float64(time.Second) / *rate)
	due := make(chan time.Time, total)
	start := time.Now().Add(50 * time.Millisecond)
	for i := range total {
		due <- start.Add(time.Duration(i) * interval)
	}
	close(due)
	var (
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, total)
		errors    int
	)
	var wg sync.WaitGroup
	for range *conns {
		wg.Go(func() {
			for at := range due {
				time.Sleep(time.Until(at))
				req, err := http.NewRequest(*method, url, strings.NewReader(*body))
				if err == nil {
					for _, h := range headers {
						name, value, ok := strings.Cut(h, ":")
						if !ok {
							continue // an empty -H: no header
						}
						req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
					}
					var resp *http.Response
					if resp, err = client.Do(req); err == nil {
						_, err = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
				took := time.Since(at)
				mu.Lock()
				if err != nil {
					errors++
				} else {
					latencies = append(latencies, took)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(latencies) == 0 {
		return fmt.Errorf("no request succeeded (%d errors)", errors)
	}
	slices.Sort(latencies)
	q := func(p float64) float64 {
		return float64(latencies[min(len(latencies)-1, int(p*float64(len(latencies))))].Microseconds()) / 1000
	}
	fmt.Printf("%.0f %.3f %.3f %d\n", float64(len(latencies))/elapsed.Seconds(), q(0.50), q(0.99), errors)
	return nil
}

type headerFlags []string

func (h *headerFlags) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlags) Set(v string) error { *h = append(*h, v); return nil }
