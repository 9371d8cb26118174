package admission

import (
	"context"
	"testing"
	"time"
)

// windowBudget is a shared budget whose every slot is at one moment, open
// (the start of its first window with an admission left), recording the
// slots it is given back.
type windowBudget struct {
	open    time.Time
	refunds []time.Time
}

func (b *windowBudget) Reserve(_ context.Context, at, now time.Time) (time.Time, bool, error) {
	return later(later(at, now), b.open), true, nil
}

func (b *windowBudget) Refund(slot time.Time) { b.refunds = append(b.refunds, slot) }

// TestALatePresenterRefusedGivesBackTheSlotItWasCharged: on a shared quota
// a place presenting late takes the slot it would have had, passed
// (admitted at once) or still ahead (held in the ledger until then), while
// its admission is charged to the quota's next slot, a later window.
// Refused by the hook and requeued, it gives back the admission of the
// window it was charged, not of the slot it was admitted at.
func TestALatePresenterRefusedGivesBackTheSlotItWasCharged(t *testing.T) {
	const late = 10 * time.Second
	for _, tt := range []struct {
		name string
		// given is the slot of another place's grant, given a second
		// after the late place's checkpoint, relative to the moment the
		// late place presents: the slot the late place would have had.
		given time.Duration
		first Outcome // the late presentation's answer
	}{
		{"the slot it would have had passed", -8 * time.Second, OutcomeAdmit},
		{"the slot it would have had still ahead", 5 * time.Second, OutcomeBusy},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			gate, room, token, nonce, found := eligibleOnAQuota(t)
			budget := &windowBudget{}
			room.SetQuota(budget)
			now := found.Add(late)
			missed := now.Add(tt.given)
			room.sharedSlot(found.Add(time.Second), missed, found.Add(time.Second))
			budget.open = now.Add(time.Minute)

			d := gate.Decide(ctx, room, Attempt{Token: token, Nonce: nonce, Now: now})
			if d.Outcome != tt.first {
				t.Fatalf("presented %v late: %v (%v), want %v", late, d.Outcome, d.Err, tt.first)
			}
			if d.Outcome == OutcomeBusy {
				if next := d.Next.Claims.NextAttempt(); !next.Equal(ceilMilli(missed)) {
					t.Fatalf("told to come back at %v, want the slot it would have had, %v", next, missed)
				}
				held, err := gate.ledger.Lookup(ctx, d.Claims.Place())
				if err != nil || held.State != PlaceReserved || !held.Slot.Equal(missed) || !held.charged().Equal(budget.open) {
					t.Fatalf("the ledger holds %+v (%v), want the slot %v, charged %v", held, err, missed, budget.open)
				}
				now = ceilMilli(missed)
				if d = gate.Decide(ctx, room, Attempt{Token: d.Next.Token, Nonce: nonce, Now: now}); d.Outcome != OutcomeAdmit {
					t.Fatalf("at the slot it would have had: %v (%v), want admitted", d.Outcome, d.Err)
				}
			}
			gate.Requeue(ctx, room, d, now)
			if len(budget.refunds) != 1 || !budget.refunds[0].Equal(budget.open) {
				t.Fatalf("requeued: gave back %v, want the slot charged, %v", budget.refunds, budget.open)
			}
			if !d.Slot.Equal(budget.open) {
				t.Fatalf("the decision names slot %v, want the slot charged, %v", d.Slot, budget.open)
			}
		})
	}
}

// eligibleOnAQuota returns a place's token found eligible at its
// checkpoint found, not yet presented there: the checkpoints before it
// are presented on time, as the same place with a room of its own is seen
// to be found eligible at found.
func eligibleOnAQuota(t *testing.T) (gate *Gate, room *Room, token, nonce string, found time.Time) {
	t.Helper()
	ctx := context.Background()
	setup := func() (*Gate, *Room, WaitToken, string) {
		gate := NewGate(testRing(t, "k1", "k1"), Policy{}, NewMemoryLedger(100, func() time.Time { return t0 }), WithRandom(newSeeded(7)))
		room := testRoom(t, func(c *RoomConfig) { c.Rate = 1; c.Burst = 1 })
		room.SetQuota(&windowBudget{})
		tk, err := gate.Issue(room, Visitor{}, t0)
		if err != nil {
			t.Fatal(err)
		}
		return gate, room, tk, solve(t, tk.Claims)
	}
	gate, room, tk, nonce := setup()
	steps := 0
	for token, at := tk.Token, tk.Claims.NextAttempt(); ; steps++ {
		d := gate.Decide(ctx, room, Attempt{Token: token, Nonce: nonce, Now: at})
		if d.Outcome != OutcomeWait {
			break
		}
		if steps > 1000 {
			t.Fatal("never eligible")
		}
		token, at = d.Next.Token, d.Next.Claims.NextAttempt()
	}
	gate, room, tk, nonce = setup()
	token, found = tk.Token, tk.Claims.NextAttempt()
	for range steps {
		d := gate.Decide(ctx, room, Attempt{Token: token, Nonce: nonce, Now: found})
		token, found = d.Next.Token, d.Next.Claims.NextAttempt()
	}
	return gate, room, token, nonce, found
}
