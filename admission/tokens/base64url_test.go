package tokens

import (
	"bytes"
	"encoding/base64"
	"testing"
)

// TestAppendBase64URL: every length around the eight-byte step, after
// an empty and a non-empty prefix, as base64.RawURLEncoding writes it.
func TestAppendBase64URL(t *testing.T) {
	src := make([]byte, 64)
	for i := range src {
		src[i] = byte(i*97 + 13) // every sextet value turns up
	}
	for _, tc := range []struct {
		name   string
		prefix []byte
		src    []byte
	}{
		{"empty", nil, nil},
		{"zeros", nil, make([]byte, 17)},
		{"ones", []byte("x."), bytes.Repeat([]byte{0xff}, 17)},
		{"a signature", []byte("header.payload."), src[:32]},
		{"prefix with room", make([]byte, 3, 200), src[:50]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := base64.RawURLEncoding.AppendEncode(bytes.Clone(tc.prefix), tc.src)
			if got := appendBase64URL(bytes.Clone(tc.prefix), tc.src); !bytes.Equal(got, want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
	for n := range len(src) + 1 {
		want := base64.RawURLEncoding.AppendEncode([]byte("p"), src[:n])
		if got := appendBase64URL([]byte("p"), src[:n]); !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: got %q, want %q", n, got, want)
		}
	}
}

// FuzzAppendBase64URL holds appendBase64URL to base64.RawURLEncoding.
func FuzzAppendBase64URL(f *testing.F) {
	f.Add([]byte("p"), []byte{})
	f.Add([]byte{}, []byte("\x00\xff\x10\x83\xef\xbf\xbe\x7f\x80"))
	f.Fuzz(func(t *testing.T, prefix, src []byte) {
		want := base64.RawURLEncoding.AppendEncode(bytes.Clone(prefix), src)
		if got := appendBase64URL(bytes.Clone(prefix), src); !bytes.Equal(got, want) {
			t.Fatalf("appendBase64URL(%q, %q) = %q, want %q", prefix, src, got, want)
		}
	})
}
