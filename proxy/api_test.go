package proxy

import (
	"testing"
)

func TestSafeReturn(t *testing.T) {
	for in, want := range map[string]string{
		"/shop?x=1": "/shop?x=1", "": "/", "https://evil.example/": "/", "//evil.example": "/", "/\\evil": "/", "/a\r\nSet-Cookie: x": "/",
	} {
		if got := safeReturn(in); got != want {
			t.Errorf("safeReturn(%q) = %q, want %q", in, got, want)
		}
	}
}
