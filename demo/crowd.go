package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"strconv"
	"time"

	"github.com/fairgate/fairgate/admission/tokens"
	"go.uber.org/zap"
)

// runCrowd keeps n simulated visitors in the queue: 80% honest (they wait
// as the page says), 10% impatient (they ignore nxt and try every second),
// 10% scripted (they also refresh the page five times a second). Admitted
// visitors hold seats, half of them buy, and a new visitor takes their place.
func runCrowd(ctx context.Context, site string, n int, log *zap.Logger) {
	transport := &http.Transport{MaxIdleConnsPerHost: n, MaxIdleConns: n}
	sem := make(chan struct{}, n)
	for i := 0; ctx.Err() == nil; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		go func() {
			defer func() { <-sem }()
			v := newVisitor(site, transport, i)
			if err := v.run(ctx); err != nil && ctx.Err() == nil {
				log.Debug("simulated visitor gave up", zap.Int("visitor", i), zap.Error(err))
			}
		}()
		// Arrivals spread out rather than all in one instant.
		select {
		case <-time.After(time.Duration(rand.IntN(50)) * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
}

type visitor struct {
	site   string
	client *http.Client
	kind   string
	rng    *rand.Rand
}

func newVisitor(site string, t http.RoundTripper, i int) *visitor {
	jar, _ := cookiejar.New(nil)
	kind := "honest"
	switch r := rand.IntN(10); {
	case r == 0:
		kind = "impatient"
	case r == 1:
		kind = "scripted"
	}
	return &visitor{site: site, kind: kind, rng: rand.New(rand.NewPCG(uint64(i), 9)),
		client: &http.Client{Jar: jar, Transport: t, Timeout: 10 * time.Second}}
}

type ticketReply struct {
	Challenge  string  `json:"challenge"`
	Difficulty int     `json:"difficulty"`
	RetryAfter float64 `json:"retry_after"`
	Session    string  `json:"session"`
}

func (v *visitor) post(ctx context.Context, path string, body any, out any) (int, error) {
	return v.do(ctx, http.MethodPost, path, body, out)
}

func (v *visitor) do(ctx context.Context, method, path string, body any, out any) (int, error) {
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, method, v.site+path, bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Idempotency-Key", strconv.FormatUint(v.rng.Uint64(), 36))
	resp, err := v.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode, nil
}

func (v *visitor) run(ctx context.Context) error {
	var tk ticketReply
	if code, err := v.post(ctx, "/_fairgate/token", nil, &tk); err != nil || code != http.StatusOK {
		return fmt.Errorf("token: %d %v", code, err)
	}
	solved := map[string]string{}
	for attempt := 0; attempt < 2000 && ctx.Err() == nil; attempt++ {
		key := tk.Challenge + "/" + strconv.Itoa(tk.Difficulty)
		if _, ok := solved[key]; !ok {
			n, err := tokens.Solve(ctx, tk.Challenge, tk.Difficulty)
			if err != nil {
				return err
			}
			solved[key] = strconv.FormatUint(n, 10)
		}
		wait := time.Duration(tk.RetryAfter * float64(time.Second))
		if v.kind == "impatient" {
			wait = time.Second
		}
		if err := v.pause(ctx, wait); err != nil {
			return err
		}
		var next ticketReply
		code, err := v.post(ctx, "/_fairgate/admit", map[string]string{"nonce": solved[key]}, &next)
		switch {
		case err != nil:
			return err
		case code == http.StatusOK:
			return v.shop(ctx, next.Session)
		case code == http.StatusTooManyRequests && next.Challenge != "":
			tk = next
		case code == http.StatusTooManyRequests, code == http.StatusServiceUnavailable:
			tk.RetryAfter = 1 // busy or paused: same token, a little later
		default:
			return fmt.Errorf("admit: %d", code)
		}
	}
	return nil
}

// pause waits; a scripted visitor refreshes its place meanwhile.
func (v *visitor) pause(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		step := time.Until(deadline)
		if v.kind == "scripted" {
			step = min(step, 200*time.Millisecond)
			_, _ = v.post(ctx, "/_fairgate/token", nil, nil)
		}
		select {
		case <-time.After(step):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// shop holds a few seats somewhere and buys them half of the time.
func (v *visitor) shop(ctx context.Context, session string) error {
	if session == "" {
		return nil
	}
	base := "/api/sessions/" + session
	if err := v.pause(ctx, time.Duration(2+v.rng.IntN(8))*time.Second); err != nil {
		return err
	}
	hold := map[string]any{"best": map[string]any{"count": 1 + v.rng.IntN(4)}}
	if code, err := v.post(ctx, base+"/holds", hold, nil); err != nil || code != http.StatusOK {
		return err
	}
	if v.rng.IntN(2) == 0 {
		_, err := v.do(ctx, http.MethodDelete, base, nil, nil)
		return err
	}
	if code, err := v.post(ctx, base+"/checkout", nil, nil); err != nil || code != http.StatusOK {
		return err
	}
	if err := v.pause(ctx, time.Duration(3+v.rng.IntN(5))*time.Second); err != nil {
		return err
	}
	_, err := v.post(ctx, base+"/confirm", map[string]string{"payment_ref": "demo-" + strconv.Itoa(v.rng.IntN(1e6))}, nil)
	return err
}
