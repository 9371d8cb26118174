package reply

import "net/http"

// Headers writes the header values of one answer into its header map with
// one allocation: Header.Set and Header.Add canonicalize their key on
// every call and allocate a one-value slice per header, which was a tenth
// of the admit poll's cost (the answer every waiting visitor asks for
// every few seconds). Keys given to Headers must be in canonical form
// already (textproto.CanonicalMIMEHeaderKey of themselves), as constants
// written so are.
//
// Each value gets its own slice of the shared array, capped at that one
// value, so a later Add by another handler (Caddy's header directive)
// appends to a copy, never over the next header's value.
type Headers struct {
	h    http.Header
	vals []string
}

// NewHeaders is a writer of up to n values into h (more still work, in
// another array).
func NewHeaders(h http.Header, n int) Headers {
	return Headers{h: h, vals: make([]string, 0, n)}
}

// Set is h.Set(key, value) for a canonical key.
func (hs *Headers) Set(key, value string) {
	hs.vals = append(hs.vals, value)
	n := len(hs.vals)
	hs.h[key] = hs.vals[n-1 : n : n]
}

// Add is h.Add(key, value) for a canonical key.
func (hs *Headers) Add(key, value string) {
	if old := hs.h[key]; len(old) > 0 {
		hs.h[key] = append(old, value)
		return
	}
	hs.Set(key, value)
}

// Get is h.Get(key) for a canonical key.
func (hs *Headers) Get(key string) string {
	if v := hs.h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
