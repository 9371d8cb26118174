package admission

import (
	"context"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
)

// TestASlotLapsesWhenItsHolderDoesNotCome: a slot holder that has not come
// slotGrace after the moment it was told loses the slot in the ledger, and
// its admission goes back to the bucket for the places waiting; one that
// comes within the grace, or whose room is paused, keeps it; one that
// comes back after the lapse is admitted on credit, at the slot it held,
// once.
func TestASlotLapsesWhenItsHolderDoesNotCome(t *testing.T) {
	tests := []struct {
		name   string
		after  time.Duration // after the slot, when the lapses are carried out
		paused bool
		lapsed bool
	}{
		{"comes within the grace", slotGrace - time.Millisecond, false, false},
		{"walks away", slotGrace, false, true},
		{"walks away from a paused room", slotGrace, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			h := holdingASlot(t, Visitor{})
			slot := h.busy.Next.Claims.NextAttempt()
			at := slot.Add(tt.after)
			h.now = at
			if tt.paused {
				if err := h.room.SetState(StatePaused, time.Time{}, at); err != nil {
					t.Fatal(err)
				}
			}
			// A crowd found eligible just before the slot holds the
			// next 40 s of slots.
			crowd := slot.Add(-500 * time.Millisecond)
			for h.room.BucketLevel(crowd) > -40 {
				h.room.reserveAdmission(crowd, crowd)
			}
			before := h.room.BucketLevel(at)
			view := h.room.View(at)
			h.gate.lapseSlots(ctx, h.room, &view, at)
			held, err := h.ledger.Lookup(ctx, h.busy.Claims.Place())
			if err != nil {
				t.Fatal(err)
			}
			if got := held.State == queue.PlaceLapsed; got != tt.lapsed {
				t.Fatalf("after %v the ledger holds %+v; lapsed %v, want %v", tt.after, held, got, tt.lapsed)
			}
			gain := h.room.BucketLevel(at) - before
			if want := map[bool]float64{true: 1, false: 0}[tt.lapsed]; gain != want {
				t.Fatalf("the bucket gained %v admissions, want %v", gain, want)
			}
			if !tt.lapsed {
				return
			}
			// Back 30 s late, while the slots given since its own are
			// still ahead: in on credit, at the slot it held.
			back := slot.Add(30 * time.Second)
			h.now = back
			d := h.gate.Decide(ctx, h.room, Attempt{Token: h.busy.Next.Token, Nonce: h.nonce, Now: back})
			if d.Outcome != OutcomeAdmit {
				t.Fatalf("back after its lapse: %v (%v), want admitted on credit", d.Outcome, d.Err)
			}
			again := h.gate.Decide(ctx, h.room, Attempt{Token: h.first.Token, Nonce: h.nonce, Now: back})
			if again.Outcome != OutcomeReused {
				t.Fatalf("its first token after: %v, want reused", again.Outcome)
			}
		})
	}
}

// TestSlotWatch: a place lapses slotGrace after the latest moment it was
// told; a place forgotten (its slot used) never does; at most n are taken
// at once, the earliest first.
func TestSlotWatch(t *testing.T) {
	w := newSlotWatch()
	slot := t0.Add(time.Second)
	w.watch("early", slot, slot, slot)
	w.watch("told again", slot, slot, slot)
	w.watch("told again", slot, slot, slot.Add(10*time.Second))
	w.watch("used", slot, slot, slot)
	w.forget("used")
	w.watch("late", slot, slot, slot.Add(time.Second))
	if got := w.due(slot.Add(slotGrace-time.Millisecond), 10); len(got) != 0 {
		t.Fatalf("before the grace: %v", got)
	}
	if got := w.due(slot.Add(slotGrace+time.Second), 1); len(got) != 1 || got[0].place != "early" {
		t.Fatalf("one at a time: %v, want early", got)
	}
	if got := w.due(slot.Add(slotGrace+time.Second), 10); len(got) != 1 || got[0].place != "late" {
		t.Fatalf("then: %v, want late", got)
	}
	if got := w.due(slot.Add(slotGrace+20*time.Second), 10); len(got) != 1 || got[0].place != "told again" {
		t.Fatalf("at last: %v, want told again", got)
	}
}
