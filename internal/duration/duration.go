// Package duration is a time.Duration that reads from JSON as a string such
// as "1m30s" or as nanoseconds, as Caddy's durations do.
package duration

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration with Caddy's JSON form.
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := Parse(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration must be a string like \"30s\" or nanoseconds: %s", b)
	}
	*d = Duration(n)
	return nil
}

// days is a number of days in a duration such as "1d12h".
var days = regexp.MustCompile(`([0-9]*\.?[0-9]+)d`)

// Parse reads a duration as Caddy does: Go's units, and `d` for 24 hours.
func Parse(s string) (time.Duration, error) {
	var bad error
	expanded := days.ReplaceAllStringFunc(s, func(m string) string {
		n, err := strconv.ParseFloat(strings.TrimSuffix(m, "d"), 64)
		if err != nil {
			bad = err
		}
		return strconv.FormatFloat(n*24, 'f', -1, 64) + "h"
	})
	if bad != nil {
		return 0, fmt.Errorf("duration %q: %w", s, bad)
	}
	return time.ParseDuration(expanded)
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Or is d, or def when d is not positive.
func (d Duration) Or(def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return time.Duration(d)
}
