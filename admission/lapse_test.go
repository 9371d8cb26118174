package admission

import (
	"context"
	"fmt"
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
			if want := map[bool]int64{true: 1, false: 0}[tt.lapsed]; h.room.SlotsLapsed() != want {
				t.Fatalf("SlotsLapsed %d, want %d", h.room.SlotsLapsed(), want)
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
// told, keeping whose admission its slot took as first watched; a place
// forgotten (its slot used) never does; at most n are taken at once, the
// earliest first.
func TestSlotWatch(t *testing.T) {
	w := newSlotWatch()
	slot := t0.Add(time.Second)
	held := heldSlot{slot: slot, charged: slot, shared: true}
	w.watch("early", held, slot)
	w.watch("told again", held, slot)
	w.watch("told again", heldSlot{slot: slot, charged: slot}, slot.Add(10*time.Second))
	w.watch("used", held, slot)
	w.forget("used")
	w.watch("late", held, slot.Add(time.Second))
	if got := w.due(slot.Add(slotGrace-time.Millisecond), 10); len(got) != 0 {
		t.Fatalf("before the grace: %v", got)
	}
	if got := w.due(slot.Add(slotGrace+time.Second), 1); len(got) != 1 || got[0].place != "early" {
		t.Fatalf("one at a time: %v, want early", got)
	}
	if got := w.due(slot.Add(slotGrace+time.Second), 10); len(got) != 1 || got[0].place != "late" {
		t.Fatalf("then: %v, want late", got)
	}
	if got := w.due(slot.Add(slotGrace+20*time.Second), 10); len(got) != 1 || got[0].place != "told again" || !got[0].shared {
		t.Fatalf("at last: %v, want told again, its admission the shared quota's as first watched", got)
	}
}

// spentQuota is a now-only shared quota (a capacity room's) whose window
// is spent until retry: asked for a slot before then it answers
// QuotaSpentError; from then on it gives the moment asked.
type spentQuota struct {
	retry  time.Time
	lapses []time.Time
}

func (q *spentQuota) Reserve(_ context.Context, at, now time.Time) (time.Time, bool, error) {
	if at = later(at, now); at.Before(q.retry) {
		return time.Time{}, false, &QuotaSpentError{Retry: q.retry}
	}
	return at, true, nil
}
func (q *spentQuota) Refund(time.Time)        {}
func (q *spentQuota) Lapse(slot, _ time.Time) { q.lapses = append(q.lapses, slot) }

// unreachableQuota is a shared quota under on_unavailable local whose
// store cannot be reached: it gives no slot and takes nothing, so the
// node's bucket gives the slot (roomstate.Quota.Reserve).
type unreachableQuota struct{ lapses []time.Time }

func (q *unreachableQuota) Reserve(_ context.Context, _, _ time.Time) (time.Time, bool, error) {
	return time.Time{}, false, nil
}
func (q *unreachableQuota) Refund(time.Time)        {}
func (q *unreachableQuota) Lapse(slot, _ time.Time) { q.lapses = append(q.lapses, slot) }

// ctxLedger is a ledger that, as every store does (boltstore's bounded,
// the DynamoDB SDK), fails a write asked with a context already done.
type ctxLedger struct{ *queue.MemoryLedger }

func (l ctxLedger) Lapse(ctx context.Context, id string, slot time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return l.MemoryLedger.Lapse(ctx, id, slot)
}

// TestAHolderToldLaterByAnotherNodeGoesInWhenTold: node A gives a place
// its slot and watches it; at the slot the holder reaches node B, whose
// pacer re-spaces it and tells it to come well past the slot's grace.
// Node A's watch knows nothing of B's answer and lapses the slot; the
// holder, coming to B on time for the moment B told it, on a now-only
// quota whose window is spent (a capacity room), still goes in then: its
// turn is its slot, on credit, and its admission the next window's.
func TestAHolderToldLaterByAnotherNodeGoesInWhenTold(t *testing.T) {
	ctx := context.Background()
	h := holdingASlot(t, Visitor{}) // h.room is node A: it told the slot
	place := h.busy.Claims.Place()
	slot := h.busy.Next.Claims.NextAttempt()
	nodeB := testRoom(t, func(c *RoomConfig) { c.Rate = 1; c.Burst = 1 })
	for i := range 10 { // ten holders ahead of it at B: B's pacer binds
		nodeB.paceSlot(fmt.Sprintf("other-%d", i), slot, slot)
	}
	h.now = slot
	atB := h.gate.Decide(ctx, nodeB, Attempt{Token: h.busy.Next.Token, Nonce: h.nonce, Now: slot})
	told := atB.Next.Claims.NextAttempt()
	if atB.Outcome != OutcomeBusy || !told.After(slot.Add(slotGrace+time.Second)) {
		t.Fatalf("at its slot at node B: %v, told %v; want busy, re-spaced past the grace", atB.Outcome, told.Sub(slot))
	}
	// A second before the moment B told it, node A serves any attempt:
	// the slot lapses there.
	mid := told.Add(-time.Second)
	h.now = mid
	view := h.room.View(mid)
	h.gate.lapseSlots(ctx, h.room, &view, mid)
	if held, _ := h.ledger.Lookup(ctx, place); held.State != queue.PlaceLapsed {
		t.Fatalf("%v after its slot, the place reads %+v; want lapsed by node A", mid.Sub(slot), held)
	}
	// It comes at the moment told, to B, on a now-only quota whose
	// window is spent.
	nodeB.SetQuota(&spentQuota{retry: told.Add(time.Second)})
	h.now = told
	d := h.gate.Decide(ctx, nodeB, Attempt{Token: atB.Next.Token, Nonce: h.nonce, Now: told})
	if d.Outcome != OutcomeAdmit {
		t.Errorf("on time at the moment node B told it: %v (%v), retry in %v; want admitted at its slot", d.Outcome, d.Err, d.RetryAfter)
	}
}

// TestALapsedHolderGoesInOnCreditOnASpentQuota: a holder coming back after
// its slot lapsed loses its lateness and nothing else: on a now-only
// quota (every capacity room's) whose current window is spent, it goes in
// at once, on credit, taking the next window's admission, rather than
// being told to come back and ask for one.
func TestALapsedHolderGoesInOnCreditOnASpentQuota(t *testing.T) {
	ctx := context.Background()
	h := holdingASlot(t, Visitor{})
	slot := h.busy.Next.Claims.NextAttempt()
	q := &spentQuota{}
	h.room.SetQuota(q)
	at := slot.Add(slotGrace)
	h.now = at
	view := h.room.View(at)
	h.gate.lapseSlots(ctx, h.room, &view, at)
	if held, _ := h.ledger.Lookup(ctx, h.busy.Claims.Place()); held.State != queue.PlaceLapsed {
		t.Fatalf("setup: the place reads %+v; want lapsed", held)
	}
	for _, late := range []time.Duration{10 * time.Second, 30 * time.Second} {
		back := slot.Add(late)
		h.now = back
		q.retry = back.Add(time.Second)
		d := h.gate.Decide(ctx, h.room, Attempt{Token: h.busy.Next.Token, Nonce: h.nonce, Now: back})
		if d.Outcome != OutcomeAdmit {
			t.Errorf("back %v late: %v (%v), retry in %v; want admitted at its slot, on credit", late, d.Outcome, d.Err, d.RetryAfter)
		}
	}
}

// TestALapseIsNotLostWithTheRequestThatCarriedItOut: lapses are carried out
// inside whatever attempt reaches the node; that its visitor closed the
// tab (its request's context cancelled) loses no lapse.
func TestALapseIsNotLostWithTheRequestThatCarriedItOut(t *testing.T) {
	h := holdingASlot(t, Visitor{})
	place := h.busy.Claims.Place()
	slot := h.busy.Next.Claims.NextAttempt()
	gate := NewGate(testRing(t, "k1", "k1"), Policy{}, ctxLedger{h.ledger.MemoryLedger}, WithRandom(newSeeded(9)))
	other, err := gate.Issue(h.room, Visitor{}, slot)
	if err != nil {
		t.Fatal(err)
	}
	nonce := solve(t, other.Claims)
	gone, cancel := context.WithCancel(context.Background())
	cancel() // its visitor closed the tab
	at := slot.Add(slotGrace + time.Second)
	h.now = at
	gate.Decide(gone, h.room, Attempt{Token: other.Token, Nonce: nonce, Now: at})
	for _, later := range []time.Duration{time.Second, time.Minute} {
		now := at.Add(later)
		h.now = now
		gate.Decide(context.Background(), h.room, Attempt{Token: other.Token, Nonce: nonce, Now: now})
	}
	held, _ := h.ledger.Lookup(context.Background(), place)
	if held.State != queue.PlaceLapsed {
		t.Errorf("a minute after an attempt whose request was cancelled carried out its lapse, the place reads %+v; want lapsed", held)
	}
}

// TestALapseGivesBackWhereTheSlotWasTaken: under on_unavailable local a
// slot given while the store is out of reach is the node's bucket's
// (roomstate.Quota.Reserve answers shared false); when it lapses, its
// admission goes back to the bucket, not to the shared budget, which
// never granted it.
func TestALapseGivesBackWhereTheSlotWasTaken(t *testing.T) {
	ctx := context.Background()
	q := &unreachableQuota{}
	h := &slotHolder{now: t0}
	h.ledger = &racingLedger{MemoryLedger: queue.NewMemoryLedger(100, func() time.Time { return h.now })}
	h.gate = NewGate(testRing(t, "k1", "k1"), Policy{}, h.ledger, WithRandom(newSeeded(7)))
	h.room = testRoom(t, func(c *RoomConfig) { c.Rate = 1; c.Burst = 1 })
	h.room.SetQuota(q)
	tk, err := h.gate.Issue(h.room, Visitor{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	h.first, h.nonce = tk, solve(t, tk.Claims)
	token, at := tk.Token, tk.Claims.NextAttempt()
	for range 1000 {
		h.now = at
		for h.room.BucketLevel(at) > -1 {
			h.room.reserveAdmission(at, at)
		}
		h.busy = h.gate.Decide(ctx, h.room, Attempt{Token: token, Nonce: h.nonce, Now: at})
		if h.busy.Outcome != OutcomeWait {
			break
		}
		token, at = h.busy.Next.Token, h.busy.Next.Claims.NextAttempt()
	}
	if h.busy.Outcome != OutcomeBusy {
		t.Fatalf("want a slot of the bucket: %v (%v)", h.busy.Outcome, h.busy.Err)
	}
	slot := h.busy.Next.Claims.NextAttempt()
	now := slot.Add(slotGrace)
	h.now = now
	for h.room.BucketLevel(now) > -2 { // a crowd waits
		h.room.reserveAdmission(now, now)
	}
	before := h.room.BucketLevel(now)
	view := h.room.View(now)
	h.gate.lapseSlots(ctx, h.room, &view, now)
	if held, _ := h.ledger.Lookup(ctx, h.busy.Claims.Place()); held.State != queue.PlaceLapsed {
		t.Fatalf("setup: the place reads %+v, want lapsed", held)
	}
	if gain := h.room.BucketLevel(now) - before; gain != 1 || len(q.lapses) != 0 {
		t.Errorf("a lapsed slot taken from the bucket: the bucket got %v back and the shared quota %d; want 1 and 0", gain, len(q.lapses))
	}
}
