package cache

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzCacheControl: directive parsing of upstream headers never panics and
// never yields a negative lifetime.
func FuzzCacheControl(f *testing.F) {
	f.Add("public, s-maxage=3, max-age=10")
	f.Add(`s-maxage="-1"`)
	f.Fuzz(func(t *testing.T, cc string) {
		for _, name := range []string{"s-maxage", "max-age"} {
			if d, ok := directive(strings.ToLower(cc), name); ok && d < 0 {
				t.Fatalf("negative %s from %q", name, cc)
			}
		}
		h := http.Header{}
		h.Set("Retry-After", cc)
		if d, ok := retryAfter(h); ok && d <= 0 {
			t.Fatalf("non-positive Retry-After from %q", cc)
		}
	})
}
