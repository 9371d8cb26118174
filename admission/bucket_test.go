package admission

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBucket(t *testing.T) {
	b := NewBucket(2, 3, t0)
	for i := range 3 {
		if !b.Take(t0) {
			t.Fatalf("take %d of a full bucket of 3 failed", i)
		}
	}
	if b.Take(t0) {
		t.Fatal("took from an empty bucket")
	}
	if empty, wait := b.Empty(t0); !empty || wait != 500*time.Millisecond {
		t.Fatalf("Empty = %v, %v", empty, wait)
	}
	if !b.Take(t0.Add(500 * time.Millisecond)) {
		t.Fatal("no token after refill")
	}
	if got := b.Level(t0.Add(time.Hour)); got != 3 {
		t.Fatalf("level capped at burst: %v", got)
	}
	b.SetRate(1, 1, t0.Add(time.Hour))
	if got := b.Level(t0.Add(time.Hour)); got != 1 {
		t.Fatalf("level after shrinking burst: %v", got)
	}
}

func TestWindowRate(t *testing.T) {
	w := NewWindow(10 * time.Second)
	for i := range 10 {
		w.Add(t0.Add(time.Duration(i)*time.Second), 5)
	}
	// The second in progress is not counted.
	if got := w.Rate(t0.Add(9 * time.Second)); got != 4.5 {
		t.Fatalf("Rate = %v, want 4.5", got)
	}
	if got := w.Rate(t0.Add(10 * time.Second)); got != 5 {
		t.Fatalf("Rate = %v, want 5", got)
	}
	if got := w.Rate(t0.Add(time.Minute)); got != 0 {
		t.Fatalf("stale seconds counted: %v", got)
	}
}

func TestController(t *testing.T) {
	c := DefaultController
	tests := []struct {
		name                                  string
		current, target, population, eligible float64
		want                                  float64
	}{
		{"little's law", 0.01, 10, 1000, 0, 0.01},
		{"rise is slew limited", 0.01, 10, 100, 0, 0.0125},
		{"fall is slew limited", 0.01, 10, 100000, 0, 0.005},
		{"nothing known keeps speed", 0.02, 10, 0, 0, 0.02},
		{"feedback on too many eligible", 0.01, 10, 1000, 40, 0.01 * 0.7071067811865476},
		{"bounded above", 0.9, 1e6, 1, 0, 1},
		{"bounded below", 1e-6, 1, 1e9, 0, 1.0 / 86400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.Next(tt.current, tt.target, tt.population, tt.eligible)
			if d := got - tt.want; d > 1e-12 || d < -1e-12 {
				t.Fatalf("Next = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMemoryLedger(t *testing.T) {
	now := t0
	l := NewMemoryLedger(2, func() time.Time { return now })
	ctx := context.Background()
	mustConsume := func(id string, until time.Time, want bool, wantErr error) {
		t.Helper()
		got, err := l.Consume(ctx, id, until)
		if got != want || !errors.Is(err, wantErr) {
			t.Fatalf("Consume(%s) = %v, %v; want %v, %v", id, got, err, want, wantErr)
		}
	}
	mustConsume("a", t0.Add(time.Minute), true, nil)
	mustConsume("a", t0.Add(time.Minute), false, nil)
	mustConsume("b", t0.Add(2*time.Minute), true, nil)
	mustConsume("c", t0.Add(time.Minute), false, ErrLedgerFull)
	if used, _ := l.Used(ctx, "b"); !used {
		t.Fatal("b forgotten")
	}
	now = t0.Add(90 * time.Second) // a has expired, b has not
	mustConsume("c", t0.Add(3*time.Minute), true, nil)
	if used, _ := l.Used(ctx, "a"); used || l.Len() != 2 {
		t.Fatalf("expired id kept: len %d", l.Len())
	}
}
