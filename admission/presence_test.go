package admission

import (
	"testing"
	"time"
)

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

func TestWindowRecentRate(t *testing.T) {
	w := NewWindow(10 * time.Second)
	// 1 a second for 7 s, then 10 a second for 3 s.
	for i := range 10 {
		x := 1.0
		if i >= 7 {
			x = 10
		}
		w.Add(t0.Add(time.Duration(i)*time.Second), x)
	}
	now := t0.Add(10 * time.Second)
	for _, c := range []struct {
		span time.Duration
		want float64
	}{
		{3 * time.Second, 10},
		{5 * time.Second, (2 + 30) / 5.0},
		{0, 10},                        // at least a second
		{time.Minute, (7 + 30) / 10.0}, // at most the window: Rate
		{1500 * time.Millisecond, 10},
	} {
		if got := w.RecentRate(now, c.span); got != c.want {
			t.Errorf("RecentRate(%v) = %v, want %v", c.span, got, c.want)
		}
	}
	if got, want := w.RecentRate(now, time.Minute), w.Rate(now); got != want {
		t.Errorf("RecentRate over the window %v, Rate %v", got, want)
	}
}
