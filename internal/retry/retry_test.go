package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

var errAgain = errors.New("again")

func TestDo(t *testing.T) {
	p := Policy{Tries: 4, Base: time.Microsecond, Max: 4 * time.Microsecond}
	fatal := errors.New("fatal")
	tests := []struct {
		name      string
		failures  []error // op's answers, then nil
		wantErr   error
		wantTries int
	}{
		{"first try", nil, nil, 1},
		{"wins on the third", []error{errAgain, errAgain}, nil, 3},
		{"tries spent", []error{errAgain, errAgain, errAgain, errAgain, errAgain}, errAgain, 4},
		{"not retryable", []error{fatal, errAgain}, fatal, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tries := 0
			err := Do(context.Background(), p, func(err error) bool { return errors.Is(err, errAgain) }, func(try int) error {
				if try != tries {
					t.Fatalf("try %d, want %d", try, tries)
				}
				tries++
				if try < len(tt.failures) {
					return tt.failures[try]
				}
				return nil
			})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) || tries != tt.wantTries {
				t.Fatalf("err %v after %d tries, want %v after %d", err, tries, tt.wantErr, tt.wantTries)
			}
		})
	}
}

func TestDoStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tries := 0
	err := Do(ctx, Policy{Tries: 1000, Base: time.Hour, Max: time.Hour}, func(error) bool { return true }, func(int) error {
		tries++
		cancel()
		return errAgain
	})
	if !errors.Is(err, context.Canceled) || tries != 1 {
		t.Fatalf("err %v after %d tries", err, tries)
	}
}

func TestPause(t *testing.T) {
	p := Policy{Base: 10 * time.Millisecond, Max: 40 * time.Millisecond}
	for _, tt := range []struct {
		try  int
		want time.Duration // the middle of the jitter range
	}{{1, 10 * time.Millisecond}, {2, 20 * time.Millisecond}, {3, 40 * time.Millisecond}, {9, 40 * time.Millisecond}} {
		for range 100 {
			if d := p.Pause(tt.try); d < tt.want/2 || d >= tt.want*3/2 {
				t.Fatalf("Pause(%d) = %v, want in [%v, %v)", tt.try, d, tt.want/2, tt.want*3/2)
			}
		}
	}
	if d := (Policy{}).Pause(3); d != 0 {
		t.Fatalf("zero policy paused %v", d)
	}
}
