package gateway

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/fairgate/fairgate/room"
)

// FuzzAdmitBody: whatever a client posts to the admission endpoint, the
// answer is a JSON error or decision with a docs/DESIGN.md status, never a panic
// or a 500.
func FuzzAdmitBody(f *testing.F) {
	clock := newFakeClock()
	cfg := Config{Config: room.Config{Room: "sale", Keys: testKeys, Difficulty: intp(0)}}
	shared, err := NewShared(cfg, clock.Now)
	if err != nil {
		f.Fatal(err)
	}
	gw, err := New(cfg, shared, Options{Now: clock.Now})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(gw.Close)
	f.Add(`{"nonce":"0"}`, "")
	f.Add(`{"nonce":"1","token":"a.b.c","return":"//x"}`, "eyJhbGciOiJub25lIn0.e30.")
	f.Add(`[]`, "%%%")
	f.Fuzz(func(t *testing.T, body, cookie string) {
		req := httptest.NewRequest("POST", "/_fairgate/admit", strings.NewReader(body))
		if cookie != "" {
			req.Header.Set("Cookie", "fairgate_wait_sale="+cookie)
		}
		rec := httptest.NewRecorder()
		gw.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 400, 401, 403, 409, 413, 429:
		default:
			t.Fatalf("status %d for body %q cookie %q: %s", rec.Code, body, cookie, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("content type %q", ct)
		}
	})
}

// FuzzClientIP: any X-Forwarded-For yields a valid address or the peer's.
func FuzzClientIP(f *testing.F) {
	s, _ := Config{TrustedProxies: []string{"127.0.0.0/8", "10.0.0.0/8"}}.settle()
	f.Add("203.0.113.1, 10.0.0.1", "127.0.0.1:1")
	f.Add("", "[::1]:80")
	f.Add(",,,", "garbage")
	f.Fuzz(func(t *testing.T, xff, remote string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		r.Header.Set("X-Forwarded-For", xff)
		if ip, ok := clientIP(r, s.trusted); ok && !ip.IsValid() {
			t.Fatalf("invalid address reported valid for %q / %q", xff, remote)
		}
	})
}

// FuzzCheckPath: the quick check refuses exactly what canonicalPath does.
func FuzzCheckPath(f *testing.F) {
	for _, p := range []string{"/", "/_fairgate/admit", "/a/../b", "/%2e%2E/x", "/a%zz", `/a\..\b`, "/a.b/c.", "/x?y=..", "//a//b/"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.ParseRequestURI(raw)
		if err != nil {
			return
		}
		_, _, want := canonicalPath(u)
		if got := checkPath(u); (got == nil) != (want == nil) {
			t.Fatalf("%q: checkPath %v, canonicalPath %v", raw, got, want)
		}
	})
}
