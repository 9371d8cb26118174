package duration

import (
	"encoding/json"
	"testing"
	"time"
)

// TestUnmarshal: Go's units, Caddy's days and nanoseconds read; nonsense
// does not.
func TestUnmarshal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{`"1m30s"`, 90 * time.Second, true},
		{`"1d"`, 24 * time.Hour, true},
		{`"1.5d2h"`, 38 * time.Hour, true},
		{`2000000000`, 2 * time.Second, true},
		{`"soon"`, 0, false},
		{`"d"`, 0, false},
		{`true`, 0, false},
	} {
		var d Duration
		err := json.Unmarshal([]byte(tc.in), &d)
		if (err == nil) != tc.ok || (tc.ok && time.Duration(d) != tc.want) {
			t.Errorf("%s: got %v, %v; want %v (ok %v)", tc.in, time.Duration(d), err, tc.want, tc.ok)
		}
	}
}
