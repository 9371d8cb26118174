package pass

import (
	"encoding/base64"
	"testing"
)

func TestID(t *testing.T) {
	payload := base64.RawURLEncoding.EncodeToString([]byte(`{"jti":"p-1","sub":"x"}`))
	for _, tc := range []struct{ pass, want string }{
		{"h." + payload + ".s", "p-1"},
		{"h." + payload, ""},
		{"h.!!!.s", ""},
		{"", ""},
	} {
		if got := ID(tc.pass); got != tc.want {
			t.Errorf("ID(%q) = %q, want %q", tc.pass, got, tc.want)
		}
	}
}
