package bearer

import (
	"net/http/httptest"
	"testing"
)

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		header, want string
		ok           bool
	}{
		{"Bearer s3cret", "s3cret", true},
		{"Bearer s3cret", "other", false},
		{"Bearer s3cre", "s3cret", false},
		{"bearer s3cret", "s3cret", false},
		{"s3cret", "s3cret", false},
		{"", "s3cret", false},
		{"Bearer ", "", false},
		{"", "", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		if got := Matches(r, tc.want); got != tc.ok {
			t.Errorf("Authorization %q, token %q: %v, want %v", tc.header, tc.want, got, tc.ok)
		}
	}
}
