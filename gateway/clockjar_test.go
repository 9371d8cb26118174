package gateway

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// clockJar is a cookie jar that judges expiry by the tests' injected clock.
// net/http/cookiejar uses the real time, so cookies that the gateway dates
// from the fake clock would expire (or outlive) by the calendar instead.
// The tests talk to one host, so cookies are kept by name and path.
type clockJar struct {
	now func() time.Time

	mu      sync.Mutex
	cookies map[string]jarCookie // by path + "\x00" + name
}

type jarCookie struct {
	cookie  *http.Cookie
	expires time.Time // zero: a session cookie
}

func newClockJar(now func() time.Time) *clockJar {
	return &clockJar{now: now, cookies: map[string]jarCookie{}}
}

func (j *clockJar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.now()
	for _, c := range cookies {
		path := c.Path
		if path == "" {
			path = "/"
		}
		key := path + "\x00" + c.Name
		var expires time.Time
		switch {
		case c.MaxAge < 0:
			delete(j.cookies, key)
			continue
		case c.MaxAge > 0:
			expires = now.Add(time.Duration(c.MaxAge) * time.Second)
		case !c.Expires.IsZero():
			expires = c.Expires
		}
		if !expires.IsZero() && !expires.After(now) {
			delete(j.cookies, key)
			continue
		}
		stored := *c
		stored.Path = path
		j.cookies[key] = jarCookie{cookie: &stored, expires: expires}
	}
}

func (j *clockJar) Cookies(u *url.URL) []*http.Cookie {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.now()
	var out []*http.Cookie
	for key, jc := range j.cookies {
		if !jc.expires.IsZero() && !jc.expires.After(now) {
			delete(j.cookies, key)
			continue
		}
		if jc.cookie.Secure && u.Scheme != "https" {
			continue
		}
		if !pathMatches(u.Path, jc.cookie.Path) {
			continue
		}
		out = append(out, &http.Cookie{Name: jc.cookie.Name, Value: jc.cookie.Value})
	}
	return out
}

// pathMatches is RFC 6265's path-match.
func pathMatches(requestPath, cookiePath string) bool {
	if requestPath == "" {
		requestPath = "/"
	}
	if requestPath == cookiePath {
		return true
	}
	if !strings.HasPrefix(requestPath, cookiePath) {
		return false
	}
	return strings.HasSuffix(cookiePath, "/") || requestPath[len(cookiePath)] == '/'
}
