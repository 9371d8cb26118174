package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestRefusalsKeepLedgerMemoryBounded: a visitor the admission hook turns away
// over and over holds and releases their place on every attempt; the
// ledger's memory must stay bounded by what it holds, not grow with the
// attempts until the records would have expired.
func TestRefusalsKeepLedgerMemoryBounded(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_900_000_000, 0)
	l := NewMemoryLedger(100, func() time.Time { return now })
	for i := range 10 {
		if _, fresh, err := l.Hold(ctx, fmt.Sprint("live-", i), Place{State: PlaceUsed}, now.Add(time.Hour)); err != nil || !fresh {
			t.Fatalf("hold: %v %v", fresh, err)
		}
	}
	for range 100_000 {
		now = now.Add(20 * time.Millisecond)
		if _, fresh, err := l.Hold(ctx, "refused", Place{State: PlaceUsed}, now.Add(11*time.Minute)); err != nil || !fresh {
			t.Fatalf("hold after release: %v %v", fresh, err)
		}
		if err := l.Release(ctx, "refused"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(l.order); n > 2*l.Len()+compactSlack+1 {
		t.Fatalf("%d expiry entries for %d records after 100,000 refusals", n, l.Len())
	}
	// Compaction forgets nothing live.
	for i := range 10 {
		if p, _ := l.Lookup(ctx, fmt.Sprint("live-", i)); p.State != PlaceUsed {
			t.Fatalf("live-%d forgotten", i)
		}
	}
	now = now.Add(2 * time.Hour)
	if _, _, err := l.Hold(ctx, "late", Place{State: PlaceUsed}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if l.Len() != 1 {
		t.Fatalf("%d records after every other expired, want 1", l.Len())
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
	if ok, err := l.Use(ctx, "a", Place{}); ok || err != nil {
		t.Fatalf("Use of a used place: %v, %v", ok, err)
	}
	if ok, err := l.Use(ctx, "b", Place{}); !ok || err != nil {
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

// TestMemoryLedgerLapse: a place lapses only while it holds the very slot
// reserved and unused; a lapsed place reads so, with its slot, and a hold
// replaces it.
func TestMemoryLedgerLapse(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_900_000_000, 0)
	slot := now.Add(time.Second)
	tests := []struct {
		name   string
		held   Place
		use    bool
		slot   time.Time
		lapsed bool
	}{
		{"reserved at the slot", Place{State: PlaceReserved, Slot: slot}, false, slot, true},
		{"reserved at another slot", Place{State: PlaceReserved, Slot: slot}, false, slot.Add(time.Millisecond), false},
		{"used", Place{State: PlaceReserved, Slot: slot}, true, slot, false},
		{"used outright", Place{State: PlaceUsed}, false, time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewMemoryLedger(10, func() time.Time { return now })
			if _, fresh, err := l.Hold(ctx, "p", tt.held, now.Add(time.Hour)); err != nil || !fresh {
				t.Fatalf("hold: %v %v", fresh, err)
			}
			if tt.use {
				if ok, err := l.Use(ctx, "p", Place{By: "v1"}); err != nil || !ok {
					t.Fatalf("use: %v %v", ok, err)
				}
			}
			before, _ := l.Lookup(ctx, "p")
			lapsed, err := l.Lapse(ctx, "p", tt.slot)
			if err != nil || lapsed != tt.lapsed {
				t.Fatalf("Lapse = %v, %v; want %v", lapsed, err, tt.lapsed)
			}
			after, _ := l.Lookup(ctx, "p")
			want := before
			if tt.lapsed {
				want = Place{State: PlaceLapsed, Slot: tt.slot}
			}
			if after != want {
				t.Fatalf("after the lapse the place reads %+v, want %+v", after, want)
			}
			again := Place{State: PlaceReserved, Slot: slot.Add(time.Minute)}
			if _, fresh, err := l.Hold(ctx, "p", again, now.Add(time.Hour)); err != nil || fresh != tt.lapsed {
				t.Fatalf("hold after the lapse: fresh %v, %v; want %v", fresh, err, tt.lapsed)
			}
		})
	}
	l := NewMemoryLedger(10, func() time.Time { return now })
	if lapsed, err := l.Lapse(ctx, "unknown", slot); err != nil || lapsed {
		t.Fatalf("Lapse of an unknown place = %v, %v", lapsed, err)
	}
}

// TestHoldReplacingALapsedPlaceNeedsNoRoom: Hold replaces a lapsed record
// (the holder is back and takes its turn on credit) in a full ledger: it
// adds no record.
func TestHoldReplacingALapsedPlaceNeedsNoRoom(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_900_000_000, 0)
	slot := now.Add(time.Second)
	for _, capacity := range []int{1, 3} {
		l := NewMemoryLedger(capacity, func() time.Time { return now })
		for i := range capacity - 1 {
			if _, fresh, err := l.Hold(ctx, string(rune('a'+i)), Place{State: PlaceUsed}, now.Add(time.Hour)); err != nil || !fresh {
				t.Fatalf("filling: %v %v", fresh, err)
			}
		}
		if _, fresh, err := l.Hold(ctx, "p", Place{State: PlaceReserved, Slot: slot}, now.Add(time.Hour)); err != nil || !fresh {
			t.Fatalf("hold: %v %v", fresh, err)
		}
		if ok, err := l.Lapse(ctx, "p", slot); err != nil || !ok {
			t.Fatalf("lapse: %v %v", ok, err)
		}
		again := Place{State: PlaceReserved, Slot: slot.Add(10 * time.Second)}
		if _, fresh, err := l.Hold(ctx, "p", again, now.Add(time.Hour)); err != nil || !fresh {
			t.Errorf("capacity %d, full: a hold replacing the lapsed place: fresh %v, %v; want it held (%d live before and after)", capacity, fresh, err, l.Len())
		}
	}
}
