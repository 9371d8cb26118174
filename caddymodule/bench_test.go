package caddymodule

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
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

// gatewayHandler is a Handler over a gateway built without Caddy, with
// the module's options, its room "sale" in state.
func gatewayHandler(tb testing.TB, state string) *Handler {
	tb.Helper()
	cfg := gateway.Config{Config: room.Config{Room: "sale", State: state, Keys: testKeys, Tau: gateway.Duration(30 * time.Minute), FixedSpeed: true}}
	shared, err := gateway.NewShared(cfg, time.Now)
	if err != nil {
		tb.Fatal(err)
	}
	gw, err := gateway.New(cfg, shared, gateway.Options{OnDisposition: setOutcome, ClientIP: clientIP, ReturnURI: originalURI, HookURL: expandPlaceholders})
	if err != nil {
		tb.Fatal(err)
	}
	if err := gw.ApplyConfig(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(gw.Close)
	return &Handler{room: "sale", roomValue: "sale", gw: gw}
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct {
	h      http.Header
	status int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(status int)      { d.status = status }
