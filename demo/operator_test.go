package demo

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestOperatorGuard: the operator page and API answer only a loopback client
// holding the token printed at start.
func TestOperatorGuard(t *testing.T) {
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"room":"sale"}`)
	}))
	defer admin.Close()
	u, _ := url.Parse(admin.URL)
	s := newShop(nil, "sale", "e", u, "secret", &demoPaymentProvider{})
	for _, tc := range []struct {
		name, method, target, xff string
		header                    []string
		want                      int
	}{
		{"no token", "POST", "/operator/api/rooms/sale", "", nil, 401},
		{"wrong token", "POST", "/operator/api/rooms/sale", "", []string{"Authorization", "Bearer nope"}, 401},
		{"bearer token", "POST", "/operator/api/rooms/sale", "", []string{"Authorization", "Bearer secret"}, 200},
		{"cookie", "GET", "/operator/api/rooms", "", []string{"Cookie", operatorCookie + "=secret"}, 200},
		{"from the network", "POST", "/operator/api/rooms/sale", "192.0.2.7", []string{"Authorization", "Bearer secret"}, 403},
		{"printed URL", "GET", "/operator?token=secret", "", nil, 303},
		{"page without token", "GET", "/operator", "", nil, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(`{"rate":2}`))
			r.RemoteAddr = "127.0.0.1:5555"
			if tc.xff != "" {
				r.Header.Set("X-Forwarded-For", "127.0.0.1, "+tc.xff)
			}
			for i := 0; i+1 < len(tc.header); i += 2 {
				r.Header.Set(tc.header[i], tc.header[i+1])
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("%s %s: %d, want %d", tc.method, tc.target, w.Code, tc.want)
			}
		})
	}
}

// TestRunRefusesTakenPort: a second demo on the same port fails clearly
// instead of sharing it.
func TestRunRefusesTakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = Run(context.Background(), Options{Listen: ln.Addr().String(), Admin: "127.0.0.1:0", Out: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "--listen "+ln.Addr().String()+" is not free") {
		t.Fatalf("got %v", err)
	}
}
