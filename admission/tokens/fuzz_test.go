package tokens

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseWait: no input panics the parser, and nothing but a token the
// ring signed verifies.
func FuzzParseWait(f *testing.F) {
	ring := testRing(f, "k1", "k1")
	codec := NewCodec(ring, time.Second)
	good, err := codec.Sign(validWait(t0))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add("")
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Fuzz(func(t *testing.T, token string) {
		claims, err := codec.ParseWait(token, "sale", t0)
		if err != nil {
			return
		}
		if strings.Trim(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.") != "" {
			t.Fatalf("accepted token %q has bytes outside base64url and dots (WaitToken.Token)", token)
		}
		if token != good {
			// Only a signature the ring made can verify; re-signing the
			// parsed claims must reproduce an equally valid token.
			resigned, err := codec.Sign(claims)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := codec.ParseWait(resigned, "sale", t0); err != nil {
				t.Fatalf("re-signed claims of an accepted token fail: %v", err)
			}
		}
	})
}

// FuzzParsePass is FuzzParseWait for passes.
func FuzzParsePass(f *testing.F) {
	codec := NewCodec(testRing(f, "k1", "k1"), time.Second)
	f.Add("")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, token string) {
		_, _ = codec.ParsePass(token, "sale", t0)
	})
}

// FuzzVerifyWork: malformed solutions are errors, never panics, and an
// accepted nonce is canonical.
func FuzzVerifyWork(f *testing.F) {
	f.Add("Y2hhbGxlbmdl", 4, "17")
	f.Add("", 0, "0")
	f.Add("x", 300, "-1")
	f.Fuzz(func(t *testing.T, ch string, dif int, nonce string) {
		if VerifyWork(ch, dif, nonce) == nil && !canonicalDecimal(nonce) {
			t.Fatalf("accepted non-canonical nonce %q", nonce)
		}
	})
}
