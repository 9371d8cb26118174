package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/gateway"
	"github.com/fairgate/fairgate/room"
)

// BenchmarkServeHTTPTokenNew is a new token through the handler as Caddy
// calls it, a replacer in the request's context: gateway's
// BenchmarkTokenNew and what the module adds around it.
//
//	go test -run XXX -bench ServeHTTP -benchmem -cpu 1 ./caddymodule
func BenchmarkServeHTTPTokenNew(b *testing.B) {
	h := gatewayHandler(b, "queue")
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		b.Fatal("the route went on past the waiting room")
		return nil
	})
	proto := httptest.NewRequest(http.MethodPost, "/_fairgate/token", nil)
	proto.Header.Set("Content-Type", "application/json")
	proto.Header.Set("Accept-Language", "en-GB,en;q=0.9")
	proto.ContentLength = 2
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		w.status = 0
		r := *proto
		r.Body = io.NopCloser(strings.NewReader("{}"))
		// Caddy's server gives each request a replacer in its context.
		req := r.WithContext(context.WithValue(context.Background(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
		if err := h.ServeHTTP(w, req, next); err != nil || w.status != http.StatusOK {
			b.Fatalf("status %d, error %v", w.status, err)
		}
	}
}

// BenchmarkServeHTTPPollWait is the admit poll through the handler as
// Caddy calls it, answered "keep waiting": gateway's BenchmarkPollWait and
// what the module adds around it.
func BenchmarkServeHTTPPollWait(b *testing.B) {
	var now atomic.Pointer[time.Time]
	start := time.Date(2031, 3, 9, 12, 0, 0, 0, time.UTC)
	now.Store(&start)
	h := gatewayHandlerOn(b, "queue", func() time.Time { return *now.Load() })
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		b.Fatal("the route went on past the waiting room")
		return nil
	})
	serve := func(proto *http.Request, body string, w *discardWriter) {
		clear(w.h)
		w.status = 0
		r := *proto
		r.Body = io.NopCloser(strings.NewReader(body))
		// Caddy's server gives each request a replacer in its context.
		req := r.WithContext(context.WithValue(context.Background(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
		if err := h.ServeHTTP(w, req, next); err != nil {
			b.Fatal(err)
		}
	}
	post := func(path, cookie string, length int64) *http.Request {
		r := httptest.NewRequest(http.MethodPost, path, nil)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept-Language", "en-GB,en;q=0.9")
		if cookie != "" {
			r.Header.Set("Cookie", cookie)
		}
		r.ContentLength = length
		return r
	}
	// A token whose first checkpoint does not admit it, at that checkpoint.
	w := &discardWriter{h: http.Header{}, keep: true}
	for range 100 {
		now.Store(&start)
		var answer struct {
			Token       string `json:"token"`
			Challenge   string `json:"challenge"`
			Difficulty  int    `json:"difficulty"`
			NextAttempt int64  `json:"next_attempt"`
		}
		w.body.Reset()
		serve(post("/_fairgate/token", "", 2), "{}", w)
		if err := json.Unmarshal(w.body.Bytes(), &answer); err != nil {
			b.Fatal(err)
		}
		nonce, err := tokens.Solve(context.Background(), answer.Challenge, answer.Difficulty)
		if err != nil {
			b.Fatal(err)
		}
		at := time.UnixMilli(answer.NextAttempt)
		now.Store(&at)
		body := `{"nonce":"` + strconv.FormatUint(nonce, 10) + `"}`
		proto := post("/_fairgate/admit", "fairgate_wait_sale="+answer.Token, int64(len(body)))
		w.body.Reset()
		if serve(proto, body, w); w.status != http.StatusTooManyRequests {
			continue // admitted at its first checkpoint: another draw
		}
		if !strings.Contains(w.body.String(), `"outcome":"wait"`) {
			// An early answer is a 429 too, and cheaper: judged, or no row.
			b.Fatalf("the poll was not judged at its checkpoint: %s", w.body.String())
		}
		w.keep = false
		b.ReportAllocs()
		for b.Loop() {
			if serve(proto, body, w); w.status != http.StatusTooManyRequests {
				b.Fatalf("status %d", w.status)
			}
		}
		return
	}
	b.Fatal("no draw kept waiting")
}

// gatewayHandler is a Handler over a gateway built without Caddy, with
// the module's options, its room "sale" in state.
func gatewayHandler(tb testing.TB, state string) *Handler {
	return gatewayHandlerOn(tb, state, time.Now)
}

// gatewayHandlerOn is gatewayHandler on the clock now.
func gatewayHandlerOn(tb testing.TB, state string, now func() time.Time) *Handler {
	tb.Helper()
	cfg := gateway.Config{Config: room.Config{Room: "sale", State: state, Keys: testKeys, Tau: gateway.Duration(30 * time.Minute), FixedSpeed: true}}
	shared, err := gateway.NewShared(cfg, now)
	if err != nil {
		tb.Fatal(err)
	}
	gw, err := gateway.New(cfg, shared, gateway.Options{Now: now, OnDisposition: setOutcome, ClientIP: clientIP, ReturnURI: originalURI, HookURL: expandPlaceholders})
	if err != nil {
		tb.Fatal(err)
	}
	if err := gw.ApplyConfig(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(gw.Close)
	return &Handler{room: "sale", roomValue: "sale", gw: gw}
}

// discardWriter is a ResponseWriter that keeps nothing, unless keep is
// set: then the body.
type discardWriter struct {
	h      http.Header
	status int
	keep   bool
	body   bytes.Buffer
}

func (d *discardWriter) Header() http.Header { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) {
	if d.keep {
		d.body.Write(p)
	}
	return len(p), nil
}
func (d *discardWriter) WriteHeader(status int) { d.status = status }
