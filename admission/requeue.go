package admission

import (
	"context"
	"fmt"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
)

// Requeue sends an admitted visitor back to waiting when the admission could
// not complete (the admission hook said the seat service is full, or is
// down). The place keeps its admission, as a slot at its next checkpoint:
// the ledger holds it reserved until then, so no version of its token is
// judged again (nor the hook called again) before that checkpoint, and at
// it the place is admitted from its slot without taking another admission
// from the bucket. A place refused over and over so holds one admission,
// not one per attempt (Gate.holdAgain). admitted is the decision that
// admitted it.
func (g *Gate) Requeue(ctx context.Context, room *Room, admitted Decision, now time.Time) Decision {
	claims := admitted.Claims
	// The requeue runs to its end whether the visitor waits for its
	// answer or not: stopped between its steps it would leave the place
	// used without a pass delivered. Each store call has its own deadline.
	ctx = context.WithoutCancel(ctx)
	end, err := g.turns.take(ctx, claims.Place())
	if err != nil {
		return g.unavailable(err, claims)
	}
	defer end()
	view := room.View(now)
	next := g.recheck(&view, claims, now)
	// Used becomes reserved: two steps, as the ledger has no swap. Between
	// them a concurrent attempt of the place may be judged afresh; the
	// ledger's Hold still lets only one of them through.
	if err := g.ledger.Release(ctx, claims.Place()); err != nil {
		return g.unavailable(fmt.Errorf("releasing place: %w", err), claims)
	}
	next, undo, err := g.holdAgain(ctx, room, admitted.Slot, next, now)
	if err != nil {
		// Released, not held: the place is judged again at its next
		// attempt.
		return g.unavailable(err, claims)
	}
	held, fresh, err := g.ledger.Hold(ctx, claims.Place(), queue.Place{State: queue.PlaceReserved, Slot: next}, g.lastValid(&view, claims, next))
	if err == nil && !fresh {
		// On an error whether the place holds the slot is unknown: its
		// admission stays taken.
		undo()
	}
	switch {
	case err != nil:
		return g.unavailable(fmt.Errorf("holding refused place: %w", err), claims)
	case !fresh && held.State == queue.PlaceUsed:
		return Decision{Outcome: OutcomeReused, Claims: claims} // a concurrent attempt took the place in
	case !fresh:
		next = ceilMilli(held.Slot)
	}
	return g.wait(&view, claims, OutcomeWait, next, now)
}
