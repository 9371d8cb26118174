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
	end, err := tt.take(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	endB, err := tt.take(ctx, "b")
	if err != nil {
		t.Fatalf("another place waited: %v", err)
	}
	endB()
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := tt.take(gone, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a second attempt with its context ended: %v, want canceled", err)
	}
	taken := make(chan error, 1)
	bounded, cancelWait := context.WithTimeout(ctx, 10*time.Second) // a turn never ended fails, not hangs
	defer cancelWait()
	go func() {
		end2, err := tt.take(bounded, "a")
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
