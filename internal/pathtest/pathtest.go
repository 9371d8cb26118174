// Package pathtest is the tests' reference for how an origin reads a request
// path: as nginx does, percent-decoding everything (%2F included), merging
// duplicate slashes and resolving dot segments. The gateway's bypass rules
// are tested against it, so a bypassed request can never be served as a
// protected page by such an origin.
package pathtest

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Resolve returns the path an nginx-like origin serves for the escaped
// request path, and false where nginx answers 400 (bad escapes, `..` above
// the root).
func Resolve(escaped string) (string, bool) {
	dec, err := url.PathUnescape(escaped)
	if err != nil {
		return "", false
	}
	var out []string
	for _, seg := range strings.Split(dec, "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(out) == 0 {
				return "", false
			}
			out = out[:len(out)-1]
		default:
			out = append(out, seg)
		}
	}
	p := "/" + strings.Join(out, "/")
	if strings.HasSuffix(dec, "/") && p != "/" {
		p += "/"
	}
	return p, true
}

// Secret is the body of the origin's protected page.
const Secret = "THE PROTECTED PAGE"

// Origin serves /secret (and anything under /secret/) as the protected page
// and every other path as "page <resolved path>", reading paths as Resolve
// does. It also echoes the fairgate headers it received.
func Origin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := Resolve(r.URL.EscapedPath())
		if !ok {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		if p == "/secret" || strings.HasPrefix(p, "/secret/") {
			fmt.Fprint(w, Secret)
			return
		}
		fmt.Fprintf(w, "page %s", p)
		for name, v := range r.Header {
			if strings.HasPrefix(strings.ToLower(strings.ReplaceAll(name, "_", "-")), "fairgate-") {
				fmt.Fprintf(w, "\n%s: %s", name, strings.Join(v, ","))
			}
		}
	})
}
