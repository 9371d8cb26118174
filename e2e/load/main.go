// Command load is the fault suite's bounded load generator. For a fixed
// time it runs honest visitors through a waiting room (token, proof of
// work, waiting until nxt, admission, the shop with the pass, and one replay
// of the used token) and, optionally, plain workers sending GETs and POSTs
// to a site without the room. It prints one JSON line of counts:
//
//	load -site URL -room ROOM [-plain URL] [-visitors 20] [-workers 4] [-pace 20ms] [-for 15s] [-keepalive=false]
//	load -serve-hook ADDR [-hook-delay 3s]    an admission hook for the suite
//	load -site URL -replay FILE                replay admitted tokens (from -used FILE)
//
// With -used FILE every admitted token and its solution is appended to
// FILE; -replay posts each again and prints {"replayed":N,"again":M}: M
// used tokens admitted a second time (a 429 is asked again after its
// Retry-After, up to three times, so the ledger is what answers).
//
// failed: HTTP answers outside the documented set (5xx from the waiting
// room's own endpoints, unexpected statuses); conn_errors: requests whose
// connection failed (reset, EOF), which a reload causes on either side
// (plain_conn_errors) when Caddy switches listeners; origin_errors:
// 502/503/504 on the shop behind a pass (the origin's fault, the documented
// answer while it is down); deferred: admissions the room put off because
// the admission hook failed (429 "deferred", or 503 "unavailable", the
// place kept); lost: visitors whose waiting token was refused
// before they were admitted; double: a used token admitted again.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgate/fairgate/admission"
)

type counts struct {
	Requests     atomic.Int64 `json:"-"`
	Failed       atomic.Int64 `json:"-"`
	OriginErrors atomic.Int64 `json:"-"`
	Admitted     atomic.Int64 `json:"-"`
	Lost         atomic.Int64 `json:"-"`
	Double       atomic.Int64 `json:"-"`
	Deferred     atomic.Int64 `json:"-"`
	ConnErrors   atomic.Int64 `json:"-"`
	PlainReqs    atomic.Int64 `json:"-"`
	PlainFailed  atomic.Int64 `json:"-"`
	PlainConn    atomic.Int64 `json:"-"`
	mu           sync.Mutex
	samples      []string
	used         io.Writer // admitted tokens, one JSON line each
}

// failure records a failed request as an HTTP failure or, when the
// connection itself failed (reset, EOF), as a connection error.
func (c *counts) failure(plain bool, err error, what string) {
	switch {
	case plain && err != nil:
		c.fail(&c.PlainConn, what)
	case plain:
		c.fail(&c.PlainFailed, what)
	case err != nil:
		c.fail(&c.ConnErrors, what)
	default:
		c.fail(&c.Failed, what)
	}
}

// fail records a failure and keeps the first few for the report.
func (c *counts) fail(n *atomic.Int64, what string) {
	n.Add(1)
	c.mu.Lock()
	if len(c.samples) < 5 {
		c.samples = append(c.samples, what)
	}
	c.mu.Unlock()
}

func main() {
	site := flag.String("site", "", "the site behind the waiting room")
	room := flag.String("room", "", "the room's name (its pass cookie is fairgate_pass_ROOM)")
	plain := flag.String("plain", "", "a site without the waiting room, for comparison")
	visitors := flag.Int("visitors", 20, "concurrent visitors")
	workers := flag.Int("workers", 4, "concurrent plain workers")
	pace := flag.Duration("pace", 20*time.Millisecond, "pause between a plain worker's requests")
	length := flag.Duration("for", 15*time.Second, "how long to run")
	keepAlive := flag.Bool("keepalive", true, "reuse connections")
	hookAddr := flag.String("serve-hook", "", "serve an admission hook on this address instead")
	hookDelay := flag.Duration("hook-delay", 0, "how long the hook takes to answer")
	usedFile := flag.String("used", "", "append every admitted token and its solution to this file")
	replayFile := flag.String("replay", "", "replay the admitted tokens in this file (from -used) instead")
	flag.Parse()
	if *hookAddr != "" {
		fmt.Fprintln(os.Stderr, serveHook(*hookAddr, *hookDelay))
		os.Exit(1)
	}
	if *replayFile != "" && *site != "" {
		out, err := replay(*site, *replayFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		fmt.Println(out)
		return
	}
	if *site == "" || *room == "" {
		fmt.Fprintln(os.Stderr, "load: -site and -room are required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *length)
	defer cancel()
	c := &counts{}
	if *usedFile != "" {
		f, err := os.OpenFile(*usedFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		defer f.Close()
		c.used = f
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableKeepAlives: !*keepAlive}}
	var wg sync.WaitGroup
	for range *visitors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				visit(ctx, client, c, *site, *room)
			}
		}()
	}
	if *plain != "" {
		for range *workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// GETs and POSTs, as the visitors send: Go's client retries
				// an idempotent request on a connection closed under it, and
				// a POST it does not.
				for i := 0; ctx.Err() == nil; i++ {
					method := "GET"
					if i%2 == 1 {
						method = "POST"
					}
					status, _, err := do(ctx, client, method, *plain+"/", []byte("{}"), "")
					if ctx.Err() != nil {
						return
					}
					c.PlainReqs.Add(1)
					if err != nil || status != http.StatusOK {
						c.failure(true, err, fmt.Sprintf("plain %s: %d %v", method, status, err))
					}
					sleep(ctx, *pace)
				}
			}()
		}
	}
	wg.Wait()
	out, _ := json.Marshal(map[string]any{
		"requests": c.Requests.Load(), "failed": c.Failed.Load(), "origin_errors": c.OriginErrors.Load(),
		"admitted": c.Admitted.Load(), "lost": c.Lost.Load(), "double": c.Double.Load(), "deferred": c.Deferred.Load(),
		"conn_errors": c.ConnErrors.Load(), "plain_requests": c.PlainReqs.Load(), "plain_failed": c.PlainFailed.Load(), "plain_conn_errors": c.PlainConn.Load(), "samples": c.samples,
	})
	fmt.Println(string(out))
}

type ticket struct {
	Token      string  `json:"token"`
	Challenge  string  `json:"challenge"`
	Difficulty int     `json:"difficulty"`
	RetryAfter float64 `json:"retry_after"`
	Outcome    string  `json:"outcome"`
}

// visit is one honest visitor, from the waiting answer to the shop.
func visit(ctx context.Context, client *http.Client, c *counts, site, room string) {
	status, _, err := c.call(ctx, client, "GET", site+"/", nil, "")
	if ctx.Err() != nil {
		return
	}
	if err != nil || (status != http.StatusTooManyRequests && status != http.StatusOK) {
		c.failure(false, err, fmt.Sprintf("GET /: %d %v", status, err))
		sleep(ctx, time.Second)
		return
	}
	status, body, err := c.call(ctx, client, "POST", site+"/_fairgate/token", nil, "")
	var tk ticket
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &tk) != nil || tk.Token == "" {
		if ctx.Err() == nil {
			c.failure(false, err, fmt.Sprintf("token: %d %v %.80s", status, err, body))
			sleep(ctx, time.Second)
		}
		return
	}
	for ctx.Err() == nil {
		sleep(ctx, time.Duration(tk.RetryAfter*float64(time.Second)))
		n, err := admission.Solve(ctx, tk.Challenge, tk.Difficulty)
		if err != nil {
			return
		}
		req, _ := json.Marshal(map[string]string{"nonce": strconv.FormatUint(n, 10), "token": tk.Token})
		status, body, err := c.call(ctx, client, "POST", site+"/_fairgate/admit", req, "")
		if ctx.Err() != nil {
			return
		}
		switch {
		case status == http.StatusServiceUnavailable && bytes.Contains(body, []byte(`"unavailable"`)):
			// The documented answer while a dependency fails: the place is kept.
			c.Deferred.Add(1)
			tk.RetryAfter = 2
		case err != nil || status >= 500:
			// The place is kept: try again with the same token.
			c.failure(false, err, fmt.Sprintf("admit: %d %v %.80s", status, err, body))
			tk.RetryAfter = 1
		case status == http.StatusOK:
			var a struct{ Pass string }
			_ = json.Unmarshal(body, &a)
			c.Admitted.Add(1)
			if c.used != nil {
				c.mu.Lock()
				fmt.Fprintf(c.used, "%s\n", req)
				c.mu.Unlock()
			}
			if st, _, err := c.call(ctx, client, "POST", site+"/_fairgate/admit", req, ""); err == nil && st == http.StatusOK {
				c.fail(&c.Double, "a used token admitted again")
			}
			shop(ctx, client, c, site, room, a.Pass)
			return
		case status == http.StatusTooManyRequests:
			var next ticket
			_ = json.Unmarshal(body, &next)
			if next.Outcome == "deferred" {
				c.Deferred.Add(1)
			}
			if next.Token != "" {
				tk = next
			} else { // the prepared busy answer: same token, later
				tk.RetryAfter = next.RetryAfter
			}
		default:
			c.fail(&c.Lost, fmt.Sprintf("admit refused the place: %d %.120s", status, body))
			return
		}
	}
}

// shop browses with the pass for a few requests.
func shop(ctx context.Context, client *http.Client, c *counts, site, room, pass string) {
	for range 5 {
		status, body, err := c.call(ctx, client, "GET", site+"/shop", nil, "fairgate_pass_"+room+"="+pass)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil && status == http.StatusOK:
		case err == nil && (status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout):
			c.fail(&c.OriginErrors, fmt.Sprintf("shop: %d", status))
		default:
			c.failure(false, err, fmt.Sprintf("shop with a pass: %d %v %.80s", status, err, body))
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

func (c *counts) call(ctx context.Context, client *http.Client, method, url string, body []byte, cookie string) (int, []byte, error) {
	c.Requests.Add(1)
	return do(ctx, client, method, url, body, cookie)
}

func do(ctx context.Context, client *http.Client, method, url string, body []byte, cookie string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// serveHook is an admission hook that opens a session after delay.
func serveHook(addr string, delay time.Duration) error {
	var n atomic.Int64
	return http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sleep(r.Context(), delay)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"session":"s%d"}`, n.Add(1))
	}))
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// replay posts every admitted token in file (JSON lines of the admit
// body) once more to site and counts those admitted again.
func replay(site, file string) (string, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	var replayed, again atomic.Int64
	statuses := sync.Map{}
	lines := make(chan []byte)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for body := range lines {
				for attempt := 0; attempt < 4 && ctx.Err() == nil; attempt++ {
					status, resp, err := do(ctx, client, "POST", site+"/_fairgate/admit", body, "")
					if err != nil {
						break
					}
					if status == http.StatusTooManyRequests && attempt < 3 {
						var tk ticket
						_ = json.Unmarshal(resp, &tk)
						sleep(ctx, min(2*time.Second, time.Duration(tk.RetryAfter*float64(time.Second))+10*time.Millisecond))
						continue
					}
					replayed.Add(1)
					n, _ := statuses.LoadOrStore(status, new(atomic.Int64))
					n.(*atomic.Int64).Add(1)
					if status == http.StatusOK {
						again.Add(1)
					}
					break
				}
			}
		}()
	}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			lines <- line
		}
	}
	close(lines)
	wg.Wait()
	byStatus := map[string]int64{}
	statuses.Range(func(k, v any) bool { byStatus[strconv.Itoa(k.(int))] = v.(*atomic.Int64).Load(); return true })
	out, _ := json.Marshal(map[string]any{"replayed": replayed.Load(), "again": again.Load(), "statuses": byStatus})
	return string(out), nil
}
