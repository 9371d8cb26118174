// Package etag makes and matches the strong entity tags of fairgate's
// cacheable answers (the gateway's response cache, the seat API's maps).
package etag

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Of is a strong ETag for body: a quoted hash of its bytes.
func Of(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
}

// Matches reports whether an If-None-Match header value names tag: "*",
// or tag in its comma-separated list, compared weakly (RFC 9110, 13.1.2),
// so a W/ form added by a compressing proxy still matches.
func Matches(ifNoneMatch, tag string) bool {
	if ifNoneMatch == "" || tag == "" {
		return false
	}
	want := strings.TrimPrefix(tag, "W/")
	for t := range strings.SplitSeq(ifNoneMatch, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == want {
			return true
		}
	}
	return false
}
