package admission

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fairgate/fairgate/admission/tokens"
)

// reserve takes the eligible place's admission from the bucket and records
// it in the ledger: admitted now, or holding the slot the bucket gave. found
// is the checkpoint at which the place was found eligible: a place that
// presented late for it takes the slot it would have had then (it loses its
// lateness, not the slots given meanwhile; Room.reserveAdmission). Such a
// slot comes before the bucket's own next one, so when it is due the place
// passes the pacer like every slot holder: a crowd presenting late at once
// is spaced at the rate, not admitted beside the bucket.
func (g *Gate) reserve(ctx context.Context, room *Room, view *View, claims *tokens.WaitClaims, token string, found, now time.Time) Decision {
	want, err := g.usedBy(token, now)
	if err != nil {
		return g.unavailable(err, claims)
	}
	missed, backdated := room.reserveAdmission(found, now)
	slot := later(missed, now)
	if slot.After(now) || backdated {
		want = Place{State: PlaceReserved, Slot: slot}
	}
	due := now
	if slot.After(now) {
		due = slot
	} else if !backdated {
		retry, ok, err := g.quota(ctx, room, now)
		if err != nil {
			room.refundAdmission(now)
			return g.unavailable(err, claims)
		}
		if !ok {
			// Admitted now by this node's bucket, but the room's shared
			// budget is spent: the place holds its admission as a slot at
			// the budget's next window, like a bucket slot, so it is
			// answered from its slot and never judged again.
			slot = ceilMilli(retry)
			due, want = slot, Place{State: PlaceReserved, Slot: slot}
		}
	}
	// An admission now holds a unit of the shared budget until the ledger
	// records it.
	admitting := want.State == PlaceUsed
	undo := func() {
		room.refundAdmission(now)
		if admitting {
			refundQuota(room, now)
		}
	}
	held, fresh, err := g.ledger.Hold(ctx, claims.Place(), want, g.lastValid(view, claims, due))
	if err != nil {
		undo()
		return g.unavailable(fmt.Errorf("recording place: %w", err), claims)
	}
	if !fresh { // a concurrent attempt for the place got there first
		undo()
		if held.State == PlaceUsed {
			return g.reused(room, held, token, claims, now)
		}
		return g.wait(view, claims, OutcomeBusy, ceilMilli(held.Slot), now)
	}
	room.observeEligible(now)
	switch {
	case want.State == PlaceUsed:
		return g.pass(room, claims, want, now)
	case slot.After(now):
		return g.wait(view, claims, OutcomeBusy, ceilMilli(slot), now)
	}
	return g.useSlot(ctx, room, view, claims, token, slot, missed, now)
}

// useSlot admits a place whose slot is due: at the rate the room has now
// (the pacer; the slot was given at the rate of its moment, and may now
// lie further ahead; a place presenting late for the slot it would have
// had, missed, may take its turn on credit) and within the room's shared
// budget. The ledger holds the place reserved at slot until its pass is
// recorded.
func (g *Gate) useSlot(ctx context.Context, room *Room, view *View, claims *tokens.WaitClaims, token string, slot, missed, now time.Time) Decision {
	if due, ok := room.paceSlot(claims.Place(), missed, now); !ok {
		return g.respaced(view, claims, slot, ceilMilli(due), now)
	}
	if d, ok := g.takeQuota(ctx, room, view, claims, now); !ok {
		room.unpaceSlot(claims.Place(), now)
		return d // the place keeps its slot and asks again
	}
	used, err := g.usedBy(token, now)
	if err != nil {
		room.unpaceSlot(claims.Place(), now)
		refundQuota(room, now)
		return g.unavailable(err, claims)
	}
	ok, err := g.ledger.Use(ctx, claims.Place(), used)
	switch {
	case err != nil:
		room.unpaceSlot(claims.Place(), now)
		refundQuota(room, now)
		return g.unavailable(fmt.Errorf("using reserved place: %w", err), claims)
	case !ok:
		// Another version of the place got there first: the login's
		// other tab, or the answer to this one's lost attempt.
		room.unpaceSlot(claims.Place(), now)
		refundQuota(room, now)
		held, err := g.ledger.Lookup(ctx, claims.Place())
		if err != nil {
			return g.unavailable(fmt.Errorf("looking up place: %w", err), claims)
		}
		switch held.State {
		case PlaceUsed:
			return g.reused(room, held, token, claims, now)
		case PlaceReserved:
			return g.wait(view, claims, OutcomeBusy, ceilMilli(later(held.Slot, now)), now)
		}
		// Released since its look-up: a requeue under way (Gate.Requeue
		// holds it again at once). The place is kept; it asks again.
		return g.unavailable(errPlaceReleased, claims)
	}
	return g.pass(room, claims, used, now)
}

// errPlaceReleased is why a version whose place was released while it used
// it is asked to come back: its place is kept.
var errPlaceReleased = errors.New("place released while it was being used")

// takeQuota takes the admission from the room's shared budget, if it has
// one. Without budget the answer is busy until the budget's next window;
// when the budget cannot be reached, unavailable.
func (g *Gate) takeQuota(ctx context.Context, room *Room, view *View, claims *tokens.WaitClaims, now time.Time) (Decision, bool) {
	retry, ok, err := g.quota(ctx, room, now)
	switch {
	case err != nil:
		return g.unavailable(err, claims), false
	case !ok:
		return g.wait(view, claims, OutcomeBusy, ceilMilli(retry), now), false
	}
	return Decision{}, true
}

// quota takes one admission from the room's shared budget, if it has one;
// refused, retry is when the budget has some again.
func (g *Gate) quota(ctx context.Context, room *Room, now time.Time) (retry time.Time, ok bool, err error) {
	q := room.sharedQuota()
	if q == nil {
		return time.Time{}, true, nil
	}
	ok, retry, err = q.Take(ctx, now)
	switch {
	case err != nil:
		return time.Time{}, false, fmt.Errorf("taking admission budget: %w", err)
	case !ok:
		room.observeBudgetRefused(now)
		if !retry.After(now) {
			retry = now.Add(unavailableRetry)
		}
		return retry, false, nil
	}
	return time.Time{}, true, nil
}

func refundQuota(room *Room, at time.Time) {
	if q := room.sharedQuota(); q != nil {
		q.Refund(at)
	}
}
