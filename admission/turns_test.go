package admission

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestATurnEndsForTheNextAttemptOrItsContext: a place's second attempt
// waits for the first's turn to end, or gives up when its context ends;
// another place's attempt does not wait.
func TestATurnEndsForTheNextAttemptOrItsContext(t *testing.T) {
	ctx := context.Background()
	tt := NewTurns()
	end, waited, err := tt.take(ctx, "a")
	if err != nil || waited {
		t.Fatalf("the first attempt: waited %v, %v", waited, err)
	}
	endB, waited, err := tt.take(ctx, "b")
	if err != nil || waited {
		t.Fatalf("another place: waited %v, %v", waited, err)
	}
	endB()
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := tt.take(gone, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a second attempt with its context ended: %v, want canceled", err)
	}
	taken := make(chan error, 1)
	bounded, cancelWait := context.WithTimeout(ctx, 10*time.Second) // a turn never ended fails, not hangs
	defer cancelWait()
	go func() {
		end2, _, err := tt.take(bounded, "a")
		if err == nil {
			end2()
		}
		taken <- err
	}()
	end()
	if err := <-taken; err != nil {
		t.Fatalf("the second attempt after the first ended: %v", err)
	}
	if n := len(tt.busy); n != 0 {
		t.Fatalf("%d turns left after every one ended", n)
	}
}
