// Package retry runs an operation again, after a jittered pause that
// doubles with each try, while it fails in a way its caller calls
// retryable: for the races a conditional write loses (another writer
// changed the item first), which the next try, reading afresh, usually
// wins. Throttling and network errors are the SDK client's own retryer's
// business, not this.
package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy bounds the tries.
type Policy struct {
	// Tries is the most times the operation runs (at least 1).
	Tries int
	// Base is the pause before the second try; each pause after it is
	// twice the one before, up to Max, and is drawn from [d/2, 3d/2).
	Base, Max time.Duration
}

// Do runs op(try), with try counting from 0, until it returns nil or an
// error retryable rejects, the policy's tries are spent, or ctx ends. It
// returns op's last error, or ctx's if ctx ended during a pause.
func Do(ctx context.Context, p Policy, retryable func(error) bool, op func(try int) error) error {
	var err error
	for try := 0; ; try++ {
		if err = op(try); err == nil || !retryable(err) || try+1 >= p.Tries {
			return err
		}
		t := time.NewTimer(p.Pause(try + 1))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Pause is the jittered pause before try (1 for the second run).
func (p Policy) Pause(try int) time.Duration {
	d := p.Base
	for i := 1; i < try && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d)
}
