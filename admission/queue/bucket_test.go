package queue

import (
	"testing"
	"time"
)

func TestBucket(t *testing.T) {
	b := newBucket(2, 3, t0)
	for i := range 3 {
		if got := b.reserve(t0); !got.Equal(t0) {
			t.Fatalf("reservation %d of a full bucket of 3 due at %v", i, got)
		}
	}
	// Empty: reservations queue up in the order made, 1/rate apart.
	if got := b.reserve(t0); got != t0.Add(500*time.Millisecond) {
		t.Fatalf("first reservation past the burst due at %v", got.Sub(t0))
	}
	if got := b.reserve(t0.Add(100 * time.Millisecond)); got != t0.Add(time.Second) {
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

// TestBucketOpenAt: a queue opening at t starts with one admission in its
// bucket, so its first admissions come at the rate after the first; before
// t the bucket is as it was, and a debt at t is kept.
func TestBucketOpenAt(t *testing.T) {
	opens := t0.Add(time.Hour)
	tests := []struct {
		name    string
		before  int           // reservations made at t0
		raced   bool          // one made at opens+at before the bucket is told of the opening
		at      time.Duration // when the next one is asked, from opens
		wantDue time.Duration // from opens
	}{
		{"full bucket, asked at the opening: one is kept", 0, false, 0, 0},
		{"full bucket, asked a second after", 0, false, time.Second, time.Second},
		{"asked before the opening: the burst is there", 0, false, -time.Second, -time.Second},
		{"a debt past the opening is kept", 7205, false, 0, 1500 * time.Millisecond},
		// The reservation that got in first took the one kept; the next
		// waits for the refill (it had the rest of the burst).
		{"told after a reservation at the opening", 0, true, 0, 500 * time.Millisecond},
		{"told after a reservation past the opening", 0, true, time.Millisecond, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewRememberingBucket(2, 3, t0)
			for range tt.before {
				b.reserve(t0)
			}
			if tt.raced {
				b.reserve(opens.Add(tt.at))
			}
			b.OpenAt(opens)
			if got := b.reserve(opens.Add(tt.at)).Sub(opens); got != tt.wantDue {
				t.Fatalf("due %v after the opening, want %v", got, tt.wantDue)
			}
		})
	}
}

// TestBucketLevelChangesNothing: reading the level during a queue that
// then closes, unseen by any admission, drops nothing: an open room after
// it has its whole burst (a read that refilled made the queue's opening
// stick, and an open room's admit moments after was busy).
func TestBucketLevelChangesNothing(t *testing.T) {
	opens := t0.Add(time.Hour)
	read := opens.Add(time.Second)
	b := newBucket(2, 5, t0)
	b.OpenAt(opens)
	if got := b.Level(read); got != 3 {
		t.Fatalf("level a second into the queue: %v, want 3 (one carried, two refilled)", got)
	}
	b.OpenAt(time.Time{}) // the room opens: no queue
	for i := range 5 {
		if due := b.reserve(read); due.After(read) {
			t.Fatalf("reservation %d of the burst of 5 due %v later", i+1, due.Sub(read))
		}
	}
}

// TestBucketReserveFor: a reservation asked late is served where it would
// have been had it been asked when due, and still takes its admission, so
// later reservations move back one; nothing is made up without memory.
func TestBucketReserveFor(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	type step struct {
		found, now, want int  // milliseconds after t0
		backdated        bool // want before the slot of a reservation asked now
	}
	tests := []struct {
		name     string
		remember time.Duration
		steps    []step
	}{
		{"in time", time.Minute, []step{{0, 0, 0, false}, {100, 100, 1000, false}, {200, 200, 2000, false}}},
		{"late, before the slot it missed", time.Minute, []step{
			{0, 0, 0, false},           // the burst
			{100, 100, 1000, false},    // A
			{200, 200, 2000, false},    // B
			{150, 300, 2000, true},     // due at 150: before B, so B's slot (shared with B)
			{400, 400, 4000, false},    // the next one after both
			{5000, 5000, 5000, false}}, // the debt paid off
		},
		{"late past the slot it missed", time.Minute, []step{
			{0, 0, 0, false}, {100, 100, 1000, false},
			{50, 1500, 1000, true},     // due at 50: A's slot at 1000, passed: due at once (asked now: 2000)
			{1600, 1600, 3000, false}}, // behind it: the bucket gave one more
		},
		{"nothing given since due", time.Minute, []step{
			{0, 0, 0, false}, {100, 100, 1000, false},
			{500, 700, 2000, false}}, // as if asked now
		},
		{"no memory", 0, []step{
			{0, 0, 0, false}, {100, 100, 1000, false}, {200, 200, 2000, false},
			{150, 300, 3000, false}}, // as if asked now
		},
		{"later than the memory", 500 * time.Millisecond, []step{
			{0, 0, 0, false}, {100, 100, 1000, false}, {200, 200, 2000, false}, {900, 900, 3000, false},
			{50, 1000, 3000, true}}, // A and B forgotten: the oldest kept, 900's slot
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBucket(1, 1, t0)
			b.granted.memory = tt.remember
			for i, s := range tt.steps {
				got, backdated := b.ReserveFor(ms(s.found), ms(s.now))
				if !got.Equal(ms(s.want)) || backdated != s.backdated {
					t.Fatalf("step %d (due %dms, asked %dms): slot at %v (backdated %v), want %dms (%v)", i, s.found, s.now, got.Sub(t0), backdated, s.want, s.backdated)
				}
			}
		})
	}
}

// TestBucketKeepsSlotsInOrder: an admission given back never puts a later
// reservation's slot at or before one given earlier; what was given back
// is used half a spacing apart until the bucket's own slots catch up, a
// burst at one moment is still taken together, and a new rate starts the
// order afresh.
func TestBucketKeepsSlotsInOrder(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	type step struct {
		at      int // milliseconds after t0
		refunds int // admissions given back at at, before the reservation
		rate    float64
		want    int // slot, milliseconds after t0
	}
	tests := []struct {
		name  string
		burst float64
		steps []step
	}{
		{"a burst is taken together", 3, []step{{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 1000}}},
		{"given back while slots are still to come", 1, []step{
			{0, 0, 0, 0}, {0, 0, 0, 1000}, {0, 0, 0, 2000},
			{500, 1, 0, 2500},  // the bucket's own next is 2000, given
			{600, 0, 0, 3000},  // caught up
			{700, 0, 0, 4000}}, // at the rate again
		},
		{"a faster rate starts afresh", 1, []step{
			{0, 0, 0, 0}, {0, 0, 0, 1000}, {0, 0, 0, 2000},
			{0, 0, 4, 750},   // the slots given at 1/s keep their moments
			{0, 0, 0, 1000},  // at 4/s
			{0, 1, 0, 1125}}, // given back: still in order
		},
		{"a slower rate keeps the order", 1, []step{
			{0, 0, 0, 0}, {0, 0, 0, 1000}, {0, 0, 0, 2000},
			{0, 2, 0.5, 3000}}, // at 0.5/s the bucket would give 2000 again: half its spacing after
		},
		{"nothing still to come: not moved", 1, []step{
			{0, 0, 0, 0}, {0, 0, 0, 1000}, {1500, 1, 0, 1500}}, // the slot at 1000 passed
		},
	}
	t.Run("several given back: in order, used sooner", func(t *testing.T) {
		b := NewRememberingBucket(1, 1, t0)
		for range 4 {
			b.reserve(t0) // 0, 1 s, 2 s, 3 s
		}
		at := t0.Add(100 * time.Millisecond)
		for range 3 {
			b.Refund(at)
		}
		prev := t0.Add(3 * time.Second)
		for i := range 4 {
			got := b.reserve(at)
			if !got.After(prev) {
				t.Fatalf("reservation %d after the refunds at %v, not after %v", i, got.Sub(t0), prev.Sub(t0))
			}
			prev = got
		}
		// Half a spacing each would end at 5 s; the bucket's own line,
		// without the refunds, at 7 s.
		if end := prev.Sub(t0); end >= 5*time.Second {
			t.Fatalf("the four after the refunds end at %v, want before 5s", end)
		}
	})
	t.Run("the pacer's bucket keeps none", func(t *testing.T) {
		b := newBucket(1, 1, t0)
		b.reserve(t0)
		b.reserve(t0)
		b.Refund(t0.Add(500 * time.Millisecond))
		if got := b.reserve(t0.Add(500 * time.Millisecond)); !got.Equal(t0.Add(time.Second)) {
			t.Fatalf("slot at %v, want the bucket's own, 1s", got.Sub(t0))
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewRememberingBucket(1, tt.burst, t0)
			for i, s := range tt.steps {
				for range s.refunds {
					b.Refund(ms(s.at))
				}
				if s.rate > 0 {
					b.SetRate(s.rate, tt.burst, ms(s.at))
				}
				if got := b.reserve(ms(s.at)); !got.Equal(ms(s.want)) {
					t.Fatalf("step %d at %dms: slot at %v, want %dms", i, s.at, got.Sub(t0), s.want)
				}
			}
		})
	}
}
