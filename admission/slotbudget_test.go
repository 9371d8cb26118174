package admission

import (
	"context"
	"errors"
	"testing"
	"time"
)

// budgetUntil is a shared budget spent until open; err, when set, is what
// it answers instead.
type budgetUntil struct {
	open          time.Time
	err           error
	took, refunds int
}

func (b *budgetUntil) Take(_ context.Context, now time.Time) (bool, time.Time, error) {
	if b.err != nil {
		return false, time.Time{}, b.err
	}
	if now.Before(b.open) {
		return false, b.open, nil
	}
	b.took++
	return true, time.Time{}, nil
}

func (b *budgetUntil) Refund(time.Time) { b.refunds++ }

// TestASlotRefusedByTheBudgetKeepsItsSlot: the pacer runs at the room's
// whole rate on every node, and the shared budget caps the nodes together.
// A slot holder that passes the pacer and is refused by the budget (spent,
// or out of reach) gives its pacer token back, holds its slot in the
// ledger, and is admitted once the budget has some again, taking one.
func TestASlotRefusedByTheBudgetKeepsItsSlot(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want Outcome
	}{
		{"spent", nil, OutcomeBusy},
		{"out of reach", errors.New("store down"), OutcomeUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			h := holdingASlot(t, Visitor{})
			slot := h.busy.Next.Claims.NextAttempt()
			budget := &budgetUntil{open: slot.Add(time.Second), err: tt.err}
			h.room.SetQuota(budget)
			h.now = slot
			level := h.room.pacer.bucket.level(slot)
			d := h.gate.Decide(ctx, h.room, Attempt{Token: h.busy.Next.Token, Nonce: h.nonce, Now: slot})
			if d.Outcome != tt.want {
				t.Fatalf("refused by the budget: %v (%v), want %v", d.Outcome, d.Err, tt.want)
			}
			if got := h.room.pacer.bucket.level(slot); got != level || len(h.room.pacer.inflight) != 0 {
				t.Fatalf("the pacer went from %.3f to %.3f, %d places in flight; want its token back", level, got, len(h.room.pacer.inflight))
			}
			held, err := h.ledger.Lookup(ctx, h.busy.Next.Claims.Place())
			if err != nil || held.State != PlaceReserved || !held.Slot.Equal(slot) {
				t.Fatalf("the ledger holds %+v (%v), want the place reserved at its slot", held, err)
			}
			budget.err = nil
			at := budget.open
			h.now = at
			token := h.busy.Next.Token
			if d.Outcome == OutcomeBusy {
				token = d.Next.Token
			}
			if d := h.gate.Decide(ctx, h.room, Attempt{Token: token, Nonce: h.nonce, Now: at}); d.Outcome != OutcomeAdmit {
				t.Fatalf("with budget again: %v (%v), want admitted", d.Outcome, d.Err)
			}
			if budget.took != 1 || budget.refunds != 0 {
				t.Fatalf("the budget gave %d and got %d back, want 1 and 0", budget.took, budget.refunds)
			}
		})
	}
}

// TestARacingVersionGetsAnotherVersionsPassOnlyForItsLogin: two versions of
// a place holding a slot present at it on two nodes (each its own pacer)
// and both pass; the one losing the ledger's Use is given the winner's
// pass only when both are a login's (its other tab): another anonymous
// version, whose token is not the one admitted, is told its token is used.
func TestARacingVersionGetsAnotherVersionsPassOnlyForItsLogin(t *testing.T) {
	for _, tt := range []struct {
		name string
		who  Visitor
		want Outcome
	}{
		{"anonymous", Visitor{}, OutcomeReused},
		{"login", Visitor{Subject: "user-1"}, OutcomeAdmit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			h := holdingASlot(t, tt.who)
			other := testRoom(t, func(c *RoomConfig) { c.Rate = 1; c.Burst = 1 })
			slot := h.busy.Next.Claims.NextAttempt()
			h.now = slot
			var winner Decision
			h.ledger.race = func() {
				winner = h.gate.Decide(ctx, other, Attempt{Token: h.first.Token, Nonce: h.nonce, Visitor: tt.who, Now: slot})
			}
			loser := h.gate.Decide(ctx, h.room, Attempt{Token: h.busy.Next.Token, Nonce: h.nonce, Visitor: tt.who, Now: slot})
			if winner.Outcome != OutcomeAdmit {
				t.Fatalf("the version on the other node: %v (%v), want admitted", winner.Outcome, winner.Err)
			}
			if loser.Outcome != tt.want {
				t.Fatalf("the version losing the Use: %v, want %v", loser.Outcome, tt.want)
			}
			if loser.Outcome == OutcomeAdmit && loser.PassClaims.ID != winner.PassClaims.ID {
				t.Fatalf("the login's other version got pass %s, want the winner's %s", loser.PassClaims.ID, winner.PassClaims.ID)
			}
			if n := len(h.room.pacer.inflight); n != 0 {
				t.Fatalf("%d places in flight on the losing node", n)
			}
		})
	}
}
