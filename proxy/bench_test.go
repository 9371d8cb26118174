package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"
)

// BenchmarkPassedRequest is the gateway's own cost on the admitted path: a
// request with a valid (cached) pass, forwarded to a handler that does nothing.
func BenchmarkPassedRequest(b *testing.B) {
	clock := newFakeClock()
	cfg := Config{Room: "sale", Keys: testKeys, Bypass: Bypass{Paths: []string{"/static/", "/api/events/*/sections/*"}},
		Cache: &Cache{Paths: []string{"/api/sections/*"}}}
	shared, err := NewShared(cfg, clock.Now)
	if err != nil {
		b.Fatal(err)
	}
	gw, err := New(cfg, shared, Options{Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer gw.Close()
	room, _ := admission.NewRoom(admission.RoomConfig{Name: "sale", State: admission.StateOpen, Rate: 1e6, Burst: 1e6, Tau: time.Second}, clock.Now())
	tk, _ := gw.gate.Issue(room, admission.Visitor{}, clock.Now())
	d := gw.gate.Decide(context.Background(), room, admission.Attempt{Token: tk.Token, Nonce: "0", Now: clock.Now()})
	if d.Outcome != admission.OutcomeAdmit {
		b.Fatal(d.Outcome)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	req := httptest.NewRequest("GET", "/shop/page", nil)
	req.Header.Set("Cookie", "session=abc; fairgate_pass_sale="+d.Pass+"; theme=dark")
	req.Header.Set("User-Agent", "Mozilla/5.0")
	req.Header.Set("Accept", "text/html")
	w := httptest.NewRecorder()
	gw.Handle(w, req, next)
	time.Sleep(10 * time.Millisecond) // ristretto applies its Set asynchronously
	b.ReportAllocs()
	for b.Loop() {
		gw.Handle(w, req, next)
	}
}

// BenchmarkWaitingPage is a visitor without a pass getting the waiting
// page, as it is sent plain and gzipped (the return path spliced in).
func BenchmarkWaitingPage(b *testing.B) {
	clock := newFakeClock()
	cfg := Config{Room: "sale", State: "queue", Keys: testKeys}
	shared, err := NewShared(cfg, clock.Now)
	if err != nil {
		b.Fatal(err)
	}
	gw, err := New(cfg, shared, Options{Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer gw.Close()
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
