package room

import (
	"fmt"
	"strings"
	"time"

	"github.com/fairgate/fairgate/internal/duration"
)

// Duration is a time.Duration that reads from JSON as a string such as
// "1m30s" or a number of nanoseconds, as Caddy's durations do.
type Duration = duration.Duration

// OptionError is a config value that is wrong on its own, named by its
// option, so the Caddyfile adapter can point at the line that set it.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string {
	if msg := e.Err.Error(); strings.HasPrefix(msg, e.Option+" ") {
		return msg
	}
	return e.Option + ": " + e.Err.Error()
}
func (e *OptionError) Unwrap() error { return e.Err }

// OptionErr is an *OptionError of option with a formatted message.
func OptionErr(option string, format string, args ...any) error {
	return &OptionError{Option: option, Err: fmt.Errorf(format, args...)}
}

// SetDuration sets *d to def when it is unset (zero or negative).
func SetDuration(d *Duration, def time.Duration) {
	if *d <= 0 {
		*d = Duration(def)
	}
}
