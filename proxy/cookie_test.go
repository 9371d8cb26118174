package proxy

import (
	"net/http"
	"testing"
	"time"
)

// TestCookieLine: the line built directly is http.Cookie.String's, for
// plain and unusual names and values, deletion, TLS and odd dates.
func TestCookieLine(t *testing.T) {
	at := time.Date(2031, 3, 9, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, name := range []string{"fairgate_wait_sale", "fairgate_pass_big-sale.2031", "fairgate_wait_säle", "fairgate wait"} {
		for _, value := range []string{"", "eyJhbGciOiJIUzI1NiJ9.eyJqdGkiOiIxIn0.c2lnbmF0dXJl-_", "a b", `x"y`, "a,b", "ü"} {
			for _, expires := range []time.Time{at, time.Unix(0, 0), {}, time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
				for _, secure := range []bool{false, true} {
					c := &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secure, Expires: expires}
					if value == "" {
						c.MaxAge = -1
					}
					if got, want := cookieLine(name, value, expires, secure), c.String(); got != want {
						t.Errorf("cookieLine(%q, %q, %v, %v)\n got %s\nwant %s", name, value, expires, secure, got, want)
					}
				}
			}
		}
	}
}
