package gateway

import (
	"net/http/httptest"
	"testing"
)

func TestClientIP(t *testing.T) {
	trusted := []string{"10.0.0.0/8"}
	s, _ := Config{TrustedProxies: trusted}.settle()
	for _, tt := range []struct{ remote, xff, want string }{
		{"192.0.2.1:5", "", "192.0.2.1"},
		{"192.0.2.1:5", "203.0.113.9", "192.0.2.1"}, // untrusted peer: its header is ignored
		{"10.1.1.1:5", "203.0.113.9", "203.0.113.9"},
		{"10.1.1.1:5", "203.0.113.9, 10.2.2.2", "203.0.113.9"},
		{"10.1.1.1:5", "spoofed, 203.0.113.9", "203.0.113.9"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tt.remote
		if tt.xff != "" {
			r.Header.Set("X-Forwarded-For", tt.xff)
		}
		got, ok := clientIP(r, s.trusted)
		if !ok || got.String() != tt.want {
			t.Errorf("%s / %q: %v, want %s", tt.remote, tt.xff, got, tt.want)
		}
	}
}
