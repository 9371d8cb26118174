package gateway

import (
	"net/http"
	"strings"
)

// passHeader carries the verified pass to the upstream. Client-sent
// headers starting with headerPrefix are always removed first.
const (
	passHeader   = "Fairgate-Pass"
	headerPrefix = "Fairgate-"
)

// EndSessionHeader on the origin's answer to a request with a pass ends
// the visitor's session: the pass stops counting as active at once and its
// cookie is cleared. The gateway removes it; the visitor never sees it.
const EndSessionHeader = "Fairgate-End-Session"

// stripOwnHeaders removes every client-sent header in fairgate's namespace,
// in either spelling: CGI, WSGI and Rack origins read `Fairgate_Pass` and
// `Fairgate-Pass` alike as HTTP_FAIRGATE_PASS, so a forged underscore
// spelling must not reach them either.
func stripOwnHeaders(h http.Header) {
	for name := range h {
		// Every request pays this loop: a first byte other than the
		// prefix's F or f (no other character folds to them) rules a name
		// out before the prefix is compared.
		if len(name) >= len(headerPrefix) && name[0]|0x20 == headerPrefix[0]|0x20 &&
			strings.EqualFold(strings.ReplaceAll(name[:len(headerPrefix)], "_", "-"), headerPrefix) {
			delete(h, name)
		}
	}
}

// hasOwnHeader reports whether h has the named fairgate header in either
// spelling (see stripOwnHeaders).
func hasOwnHeader(h http.Header, name string) bool {
	for k := range h {
		if strings.EqualFold(strings.ReplaceAll(k, "_", "-"), name) {
			return true
		}
	}
	return false
}

// answerHeaders adds headers to an answer by their canonical keys, as
// Header.Add and Set would after canonicalizing each again. The values it
// adds to headers the answer does not have yet share one array, as
// reply.Raw's do, each header a slice capped at its own value (so another
// handler's append copies it): the waiting answer's three are one
// allocation instead of three.
type answerHeaders struct {
	h http.Header
	v []string
}

// add is h.Add(key, value).
func (a *answerHeaders) add(key, value string) {
	if old := a.h[key]; len(old) > 0 {
		a.h[key] = append(old, value)
		return
	}
	a.set(key, value)
}

// set is h.Set(key, value).
func (a *answerHeaders) set(key, value string) {
	a.v = append(a.v, value)
	n := len(a.v)
	a.h[key] = a.v[n-1 : n : n]
}
