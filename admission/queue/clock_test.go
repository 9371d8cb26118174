package queue

import (
	"math"
	"testing"
	"time"
)

func TestClockAt(t *testing.T) {
	sec := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Second))) }
	// Frozen until 10s, speed 0.1 until 20s, paused until 30s, speed 0.5 after.
	c := Clock{Origin: t0}.Then(sec(10), 0.1).Then(sec(20), 0).Then(sec(30), 0.5)
	tests := []struct {
		at, want float64
	}{
		{-5, 0}, {0, 0}, {10, 0}, {15, 0.5}, {20, 1}, {25, 1}, {30, 1}, {32, 2},
	}
	for _, tt := range tests {
		if got := c.At(sec(tt.at)); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("At(%vs) = %v, want %v", tt.at, got, tt.want)
		}
	}
	for _, tt := range []struct{ target, want float64 }{{0, 0}, {0.5, 15}, {1, 20}, {2, 32}} {
		when, ok := c.When(t0, tt.target)
		if !ok || math.Abs(when.Sub(t0).Seconds()-tt.want) > 1e-6 {
			t.Errorf("When(%v) = %v, %v, want %vs", tt.target, when.Sub(t0), ok, tt.want)
		}
	}
	if _, ok := (Clock{Origin: t0}).Then(t0, 0).When(t0, 1); ok {
		t.Error("a frozen clock reached 1")
	}
	if got := c.SpeedAt(sec(25)); got != 0 {
		t.Errorf("SpeedAt(25s) = %v", got)
	}
}

// TestClockFromNeverReorders: changing speed keeps the past and only changes
// how fast the clock runs from now on.
func TestClockFromNeverReorders(t *testing.T) {
	c := Clock{Origin: t0}.Then(t0, 0.2)
	mid := t0.Add(10 * time.Second)
	d := c.From(mid, 1)
	if d.At(mid) != c.At(mid) {
		t.Fatalf("From moved the clock: %v != %v", d.At(mid), c.At(mid))
	}
	if got := d.At(mid.Add(time.Second)); math.Abs(got-3) > 1e-9 {
		t.Fatalf("after the change: %v, want 3", got)
	}
	if len(d.Segments) != 1 {
		t.Fatalf("From kept %d segments", len(d.Segments))
	}
	// Deterministic: the same control state gives the same reading.
	if d.At(mid.Add(7*time.Second)) != d.From(mid, 1).At(mid.Add(7*time.Second)) {
		t.Fatal("equal clocks disagree")
	}
}
