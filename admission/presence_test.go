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
