package proxy

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// matcher matches request paths against prefixes and globs: a pattern
// without `*` is a prefix; `*` matches within one segment; a trailing `/**`
// matches any depth below.
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
			m.prefixes = append(m.prefixes, strings.TrimSuffix(p, "**"))
		case strings.Contains(p, "*"):
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("path %q: %w", p, err)
			}
			m.globs = append(m.globs, p)
		default:
			m.prefixes = append(m.prefixes, p)
		}
	}
	return m, nil
}

func (m *matcher) match(p string) bool {
	for _, prefix := range m.prefixes {
		if strings.HasPrefix(p, prefix) {
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

type regexpMatcher = regexp.Regexp

func newRegexpMatcher(expr string) (*regexpMatcher, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", expr, err)
	}
	return re, nil
}
