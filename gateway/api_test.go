package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/room"
)

func TestSafeReturn(t *testing.T) {
	for in, want := range map[string]string{
		"/shop?x=1": "/shop?x=1", "": "/", "https://evil.example/": "/", "//evil.example": "/", "/\\evil": "/", "/a\r\nSet-Cookie: x": "/",
	} {
		if got := safeReturn(in); got != want {
			t.Errorf("safeReturn(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWaitingAnswerHeadersAreCanonical: the waiting answers carry every
// header they promise, each key in the canonical form Header.Get looks
// for; a key spelled otherwise would be a second, invisible header.
func TestWaitingAnswerHeadersAreCanonical(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue", Tau: Duration(30 * time.Minute), FixedSpeed: true}}, nil)
	tk := e.ticket()
	for _, c := range []struct{ path, body string }{
		{"/_fairgate/token", ""},
		{"/_fairgate/admit", `{"nonce":"` + solveFor(t, tk) + `"}`},
	} {
		req := httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept-Language", "de-DE,de;q=0.9")
		req.Header.Set("Cookie", "fairgate_wait_sale="+tk.Token)
		w := httptest.NewRecorder()
		e.gw.ServeHTTP(w, req)
		if w.Code != http.StatusOK && w.Code != http.StatusTooManyRequests {
			t.Fatalf("%s: %d %s", c.path, w.Code, w.Body)
		}
		for k := range w.Header() {
			if canon := http.CanonicalHeaderKey(k); canon != k {
				t.Errorf("%s: header %q is not canonical (%q)", c.path, k, canon)
			}
		}
		for _, k := range []string{"Content-Type", "Content-Length", "X-Content-Type-Options", "Cache-Control", "Set-Cookie", "Vary"} {
			if w.Header().Get(k) == "" {
				t.Errorf("%s: no %s", c.path, k)
			}
		}
		if w.Code == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "" {
			t.Errorf("%s: 429 without Retry-After", c.path)
		}
	}
}
