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
		if got := b.Reserve(t0); !got.Equal(t0) {
			t.Fatalf("reservation %d of a full bucket of 3 due at %v", i, got)
		}
	}
	// Empty: reservations queue up in the order made, 1/rate apart.
	if got := b.Reserve(t0); got != t0.Add(500*time.Millisecond) {
		t.Fatalf("first reservation past the burst due at %v", got.Sub(t0))
	}
	if got := b.Reserve(t0.Add(100 * time.Millisecond)); got != t0.Add(time.Second) {
		t.Fatalf("second due at %v", got.Sub(t0))
	}
	b.Refund(t0.Add(time.Second))
	if got := b.Level(t0.Add(time.Second)); got != 1 {
		t.Fatalf("level after the debt and a refund: %v", got)
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
	hold := func(id string, p Place, until time.Time, want Place, wantFresh bool, wantErr error) {
		t.Helper()
		got, fresh, err := l.Hold(ctx, id, p, until)
		if got != want || fresh != wantFresh || !errors.Is(err, wantErr) {
			t.Fatalf("Hold(%s) = %v, %v, %v; want %v, %v, %v", id, got, fresh, err, want, wantFresh, wantErr)
		}
	}
	used, reserved := Place{State: PlaceUsed}, Place{State: PlaceReserved, Slot: t0.Add(time.Second)}
	hold("a", used, t0.Add(time.Minute), used, true, nil)
	hold("a", reserved, t0.Add(time.Minute), used, false, nil)
	hold("b", reserved, t0.Add(2*time.Minute), reserved, true, nil)
	hold("c", used, t0.Add(time.Minute), Place{}, false, ErrLedgerFull)
	if ok, err := l.Use(ctx, "a"); ok || err != nil {
		t.Fatalf("Use of a used place: %v, %v", ok, err)
	}
	if ok, err := l.Use(ctx, "b"); !ok || err != nil {
		t.Fatalf("Use of a reserved place: %v, %v", ok, err)
	}
	if p, _ := l.Lookup(ctx, "b"); p.State != PlaceUsed {
		t.Fatalf("b after Use: %v", p)
	}
	now = t0.Add(90 * time.Second) // a has expired, b has not
	hold("c", used, t0.Add(3*time.Minute), used, true, nil)
	if p, _ := l.Lookup(ctx, "a"); p.State != PlaceWaiting || l.Len() != 2 {
		t.Fatalf("expired place kept: len %d", l.Len())
	}
	if err := l.Release(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if p, _ := l.Lookup(ctx, "c"); p.State != PlaceWaiting {
		t.Fatalf("released place kept: %v", p)
	}
}
