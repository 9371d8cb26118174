package pass

import (
	"encoding/base64"
	"testing"
)

// fake is a pass with the given payload, an HS256 header and a signature
// nobody checks.
func fake(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"HS256"}`)) + "." + enc([]byte(payload)) + ".sig"
}

func TestClaims(t *testing.T) {
	for _, tc := range []struct {
		pass     string
		id       string
		issuedAt int64
	}{
		{fake(`{"jti":"p-1","sub":"x","iat":1700000005,"exp":1700000905}`), "p-1", 1700000005},
		{fake(`{"jti":"p-2","exp":1}`), "p-2", 0},
		{fake(`{"jti":"p-3"}`)[len("x"):], "", 0}, // a broken header
		{"h." + base64.RawURLEncoding.EncodeToString([]byte(`{"jti":"p-4"}`)), "", 0},
		{"a.!!!.c", "", 0},
		{"not a token", "", 0},
		{"", "", 0},
	} {
		if got := ID(tc.pass); got != tc.id {
			t.Errorf("ID(%q) = %q, want %q", tc.pass, got, tc.id)
		}
		if got := IssuedAt(tc.pass); got != tc.issuedAt {
			t.Errorf("IssuedAt(%q) = %d, want %d", tc.pass, got, tc.issuedAt)
		}
	}
}
