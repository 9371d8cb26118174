package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/room"
)

// BenchmarkPassedRequest is the gateway's own cost on the admitted path: a
// request with a valid (cached) pass, forwarded to a handler that does nothing.
func BenchmarkPassedRequest(b *testing.B) {
	gw, req, next := passedEnv(b)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		gw.Handle(w, req, next)
	}
}

// passedEnv is a gateway with a protected request carrying a valid pass,
// already cached, and a handler that does nothing.
func passedEnv(b *testing.B) (*Gateway, *http.Request, http.Handler) {
	gw, clock := benchGateway(b, Config{
		Config: room.Config{Room: "sale", Keys: testKeys},
		Bypass: Bypass{Paths: []string{"/static/", "/api/events/*/sections/*"}},
		Cache:  &Cache{Paths: []string{"/api/sections/*"}},
	})
	// A pass from an open room of its own, signed with the gateway's keys.
	ring, err := testKeys.Load(tokens.Environment{})
	if err != nil {
		b.Fatal(err)
	}
	gate := admission.NewGate(ring, admission.DefaultPolicy, queue.NewMemoryLedger(16, clock.Now))
	open, _ := admission.NewRoom(admission.RoomConfig{Name: "sale", State: admission.StateOpen, Rate: 1e6, Burst: 1e6, Tau: time.Second}, clock.Now())
	tk, _ := gate.Issue(open, admission.Visitor{}, clock.Now())
	d := gate.Decide(context.Background(), open, admission.Attempt{Token: tk.Token, Nonce: "0", Now: clock.Now()})
	if d.Outcome != admission.OutcomeAdmit {
		b.Fatal(d.Outcome)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	req := httptest.NewRequest("GET", "/shop/page", nil)
	req.Header.Set("Cookie", "session=abc; fairgate_pass_sale="+d.Pass+"; theme=dark")
	req.Header.Set("User-Agent", "Mozilla/5.0")
	req.Header.Set("Accept", "text/html")
	gw.Handle(httptest.NewRecorder(), req, next)
	time.Sleep(10 * time.Millisecond) // ristretto applies its Set asynchronously
	return gw, req, next
}

// benchGateway is a gateway on an injected clock, closed after the benchmark.
func benchGateway(b *testing.B, cfg Config) (*Gateway, *fakeClock) {
	b.Helper()
	clock := newFakeClock()
	shared, err := NewShared(cfg, clock.Now)
	if err != nil {
		b.Fatal(err)
	}
	gw, err := New(cfg, shared, Options{Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	if err := gw.ApplyConfig(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(gw.Close)
	return gw, clock
}

// The admit poll is what a million waiting visitors cost:
// these benchmarks run the token and admit endpoints through the gateway's
// real handler, as a browser calls them, with a realistic request (cookies,
// Accept-Language, a user agent) and the default difficulty.
//
//	go test -run XXX -bench 'Poll|Token' -benchtime 1s -cpu 1 -count 6 ./gateway

// pollEnv is a gateway in a queue with a half-hour wait (the clock stands
// still), and a token that is not eligible at its first checkpoint, with
// its solved challenge.
func pollEnv(b *testing.B) (*Gateway, *fakeClock, string, string) {
	b.Helper()
	gw, clock := benchGateway(b, Config{Config: room.Config{Room: "sale", Keys: testKeys, Tau: Duration(30 * time.Minute), FixedSpeed: true}})
	var (
		tk  admission.WaitToken
		err error
	)
	for range 100 {
		if tk, err = gw.door.Issue(context.Background(), "", admission.Visitor{}, clock.Now()); err != nil {
			b.Fatal(err)
		}
		if queue.Threshold(gw.door.Codec().Keys().Lottery(tk.Claims.Lot)) > 0.1 {
			break
		}
	}
	nonce, err := tokens.Solve(context.Background(), tk.Claims.Ch, tk.Claims.Dif)
	if err != nil {
		b.Fatal(err)
	}
	return gw, clock, tk.Token, strconv.FormatUint(nonce, 10)
}

// browserRequest is a request as the waiting page's script sends it. It
// returns a function making a fresh copy with its own body, so the
// benchmarks measure the handler, not httptest's request parsing.
func browserRequest(path, body, cookie string) func() *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, nil)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json")
	r.Header.Set("Accept-Language", "en-GB,en;q=0.9,de;q=0.8")
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36")
	if cookie != "" {
		r.Header.Set("Cookie", cookie)
	}
	r.ContentLength = int64(len(body))
	return func() *http.Request {
		c := *r
		c.Body = io.NopCloser(strings.NewReader(body))
		return &c
	}
}

// discardWriter is a ResponseWriter that keeps nothing, as a server's
// buffered connection writer costs little next to the handler.
type discardWriter struct {
	h      http.Header
	status int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(status int)      { d.status = status }

func benchServe(b *testing.B, gw *Gateway, want int, req func() *http.Request) {
	b.Helper()
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		w.status = 0
		gw.ServeHTTP(w, req())
		if w.status != want {
			b.Fatalf("status %d, want %d", w.status, want)
		}
	}
}

// BenchmarkPollWait is the honest poll: an attempt at the token's
// checkpoint, not eligible, answered 429 with the next version of the token.
func BenchmarkPollWait(b *testing.B) {
	gw, clock, token, nonce := pollEnv(b)
	cookie := "fairgate_wait_sale=" + token
	body := `{"nonce":"` + nonce + `"}`
	claims, err := gw.door.Codec().ParseWait(token, "sale", clock.Now())
	if err != nil {
		b.Fatal(err)
	}
	clock.Set(claims.NextAttempt())
	benchServe(b, gw, http.StatusTooManyRequests, browserRequest("/_fairgate/admit", body, cookie))
}

// BenchmarkPollEarly is an attempt before the checkpoint: the same token
// back, nothing judged.
func BenchmarkPollEarly(b *testing.B) {
	gw, _, token, nonce := pollEnv(b)
	cookie := "fairgate_wait_sale=" + token
	body := `{"nonce":"` + nonce + `"}`
	benchServe(b, gw, http.StatusTooManyRequests, browserRequest("/_fairgate/admit", body, cookie))
}

// BenchmarkTokenNew is a first visit: a new waiting token.
func BenchmarkTokenNew(b *testing.B) {
	gw, _, _, _ := pollEnv(b)
	benchServe(b, gw, http.StatusOK, browserRequest("/_fairgate/token", "", ""))
}

// BenchmarkTokenRefresh is a reloaded page: the token held, verified and
// returned unchanged.
func BenchmarkTokenRefresh(b *testing.B) {
	gw, _, token, _ := pollEnv(b)
	cookie := "fairgate_wait_sale=" + token
	benchServe(b, gw, http.StatusOK, browserRequest("/_fairgate/token", "", cookie))
}

// BenchmarkWaitingPage is a visitor without a pass getting the waiting
// page, as it is sent plain and gzipped (the return path spliced in).
func BenchmarkWaitingPage(b *testing.B) {
	gw, _ := benchGateway(b, Config{Config: room.Config{Room: "sale", State: "queue", Keys: testKeys}})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { b.Fatal("the origin was reached") })
	for _, ae := range []string{"", "gzip, deflate, br, zstd"} {
		name := "plain"
		if ae != "" {
			name = "gzip"
		}
		b.Run(name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/shop/seats?event=final-2026", nil)
			req.Header.Set("Accept", "text/html")
			req.Header.Set("Accept-Encoding", ae)
			w := httptest.NewRecorder()
			gw.Handle(w, req, next)
			b.ReportMetric(float64(w.Body.Len()), "bytes/page")
			b.ReportAllocs()
			for b.Loop() {
				w.Body.Reset()
				gw.Handle(w, req, next)
			}
		})
	}
}
