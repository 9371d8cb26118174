package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// errAmbiguousPath refuses a request path with a dot segment: see
// canonicalPath.
var errAmbiguousPath = errors.New("the path has a dot segment (. or ..), plain or percent-encoded")

// canonicalPath is the path bypass and cache rules are matched on: the path
// the origin will serve, as nginx and most static servers resolve it.
//
// A dot segment (`.` or `..`, also as %2e, also between encoded slashes or
// backslashes) is refused (errAmbiguousPath, answered 400): browsers resolve
// dot segments before sending, so only a crafted request carries one, and
// origins disagree on resolving them. Forwarding a cleaned path instead would
// change what an origin that does not resolve them serves; refusing is the
// one answer every origin agrees with.
//
// Otherwise the path is percent-decoded and duplicate slashes are merged.
// exact is false when the path holds an encoded slash (%2F), a backslash or
// an encoded backslash: origins disagree on whether those separate segments,
// so such a path never matches a bypass or cache rule (it still reaches the
// site with a pass or while the room is open). Case is kept: an origin that
// is case-insensitive must list each spelling it serves (see docs/SECURITY.md).
func canonicalPath(u *url.URL) (p string, exact bool, err error) {
	exact = true
	var b strings.Builder
	raw := u.EscapedPath()
	segments := strings.Split(raw, "/")
	for i, seg := range segments {
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return "", false, fmt.Errorf("the path is not validly percent-encoded: %w", err)
		}
		if strings.ContainsAny(dec, `/\`) {
			exact = false
		}
		for _, part := range strings.FieldsFunc(dec, func(r rune) bool { return r == '/' || r == '\\' }) {
			if part == "." || part == ".." {
				return "", false, errAmbiguousPath
			}
		}
		switch {
		case dec != "":
			b.WriteByte('/')
			b.WriteString(dec)
		case i == len(segments)-1 && i > 0:
			b.WriteByte('/') // keep a trailing slash
		}
	}
	if b.Len() == 0 {
		return "/", exact, nil
	}
	return b.String(), exact, nil
}

// matcher matches canonical request paths (see canonicalPath) against
// prefixes and globs. A pattern without `*` is a prefix on segment
// boundaries: `/healthz` matches `/healthz` and `/healthz/x`, not
// `/healthzX`. `*` matches within one segment and never a dot segment; a
// trailing `/**` matches any depth below.
type matcher struct {
	prefixes []string
	globs    []string
}

func newMatcher(patterns []string) (*matcher, error) {
	m := &matcher{}
	for _, p := range patterns {
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("path %q must start with /", p)
		}
		switch {
		case strings.HasSuffix(p, "/**") && !strings.Contains(strings.TrimSuffix(p, "/**"), "*"):
			m.prefixes = append(m.prefixes, strings.TrimSuffix(p, "/**"))
		case strings.Contains(p, "*"):
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("path %q: %w", p, err)
			}
			m.globs = append(m.globs, p)
		default:
			m.prefixes = append(m.prefixes, strings.TrimSuffix(p, "/"))
		}
	}
	return m, nil
}

// match reports whether the canonical path p matches a pattern. It refuses
// dot segments itself too, so no caller can make it match one.
func (m *matcher) match(p string) bool {
	if hasDotSegment(p) {
		return false
	}
	for _, prefix := range m.prefixes {
		if rest, ok := strings.CutPrefix(p, prefix); ok && (rest == "" || rest[0] == '/' || prefix == "") {
			return true
		}
	}
	for _, g := range m.globs {
		if ok, _ := path.Match(g, p); ok {
			return true
		}
	}
	return false
}

// checkPath refuses what canonicalPath refuses. A path without '%', '\'
// or '.' can hold neither a bad escape nor a dot segment, so the common
// request is not decoded twice.
func checkPath(u *url.URL) error {
	if !strings.ContainsAny(u.EscapedPath(), `%\.`) {
		return nil
	}
	_, _, err := canonicalPath(u)
	return err
}

// matchRequest matches r's canonical path; a path that is not exact (see
// canonicalPath) matches nothing.
func matchRequest(m *matcher, r *http.Request) bool {
	p, exact, err := canonicalPath(r.URL)
	return err == nil && exact && m.match(p)
}

func hasDotSegment(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

type regexpMatcher = regexp.Regexp

func newRegexpMatcher(expr string) (*regexpMatcher, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", expr, err)
	}
	return re, nil
}
