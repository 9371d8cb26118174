package admission

import (
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
