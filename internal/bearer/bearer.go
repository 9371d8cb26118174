// Package bearer checks the shared-secret tokens of fairgate's operator
// endpoints (the admin API, the seat API's event creation, the demo's
// operator page) in one way: constant time, and no token configured
// matches nothing.
package bearer

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// Token is the token of r's `Authorization: Bearer` header.
func Token(r *http.Request) (string, bool) {
	return strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// Equal reports whether got is want, in time independent of where they
// differ. An empty want equals nothing: a missing secret opens nothing.
func Equal(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// Matches reports whether r carries want as its bearer token.
func Matches(r *http.Request, want string) bool {
	got, ok := Token(r)
	return ok && Equal(got, want)
}
