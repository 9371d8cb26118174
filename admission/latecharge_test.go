package admission

import (
	"context"
	"testing"
	"time"
)

// windowBudget is a shared budget whose every slot is at one moment, open,
// recording the slots it is given back.
type windowBudget struct {
	open    time.Time
	refunds []time.Time
}

func (b *windowBudget) Reserve(_ context.Context, at, now time.Time) (time.Time, bool, error) {
	return later(later(at, now), b.open), true, nil
}

func (b *windowBudget) Refund(slot time.Time) { b.refunds = append(b.refunds, slot) }

// TestALatePresenterRefusedGivesBackTheSlotItWasCharged: on a shared quota
// a place presenting late takes the slot it would have had (here passed:
// admitted at once), while its admission is charged to the quota's next
// slot. Refused by the hook and requeued, it gives back the admission of
// the window it was charged, not of the moment it was admitted.
func TestALatePresenterRefusedGivesBackTheSlotItWasCharged(t *testing.T) {
	ctx := context.Background()
	const late = 10 * time.Second
	setup := func() (*Gate, *Room, WaitToken, string) {
		ledger := NewMemoryLedger(100, func() time.Time { return t0 })
		gate := NewGate(testRing(t, "k1", "k1"), Policy{}, ledger, WithRandom(newSeeded(7)))
		room := testRoom(t, func(c *RoomConfig) { c.Rate = 1; c.Burst = 1 })
		tk, err := gate.Issue(room, Visitor{}, t0)
		if err != nil {
			t.Fatal(err)
		}
		return gate, room, tk, solve(t, tk.Claims)
	}
	// The checkpoint at which the place is found eligible, presented on time.
	gate, room, tk, nonce := setup()
	room.SetQuota(&windowBudget{})
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
	// The same place again, presenting late for that checkpoint.
	gate, room, tk, nonce = setup()
	budget := &windowBudget{}
	room.SetQuota(budget)
	token, at := tk.Token, tk.Claims.NextAttempt()
	for range steps {
		d := gate.Decide(ctx, room, Attempt{Token: token, Nonce: nonce, Now: at})
		token, at = d.Next.Token, d.Next.Claims.NextAttempt()
	}
	now := at.Add(late)
	room.sharedSlot(at.Add(time.Second), at.Add(2*time.Second), at.Add(time.Second)) // another place's slot, given since
	budget.open = now.Add(time.Minute)
	d := gate.Decide(ctx, room, Attempt{Token: token, Nonce: nonce, Now: now})
	if d.Outcome != OutcomeAdmit {
		t.Fatalf("presented %v late: %v (%v), want admitted at the slot it would have had", late, d.Outcome, d.Err)
	}
	gate.Requeue(ctx, room, d, now)
	if len(budget.refunds) != 1 || !budget.refunds[0].Equal(budget.open) {
		t.Fatalf("requeued: gave back %v, want the slot charged, %v", budget.refunds, budget.open)
	}
}
