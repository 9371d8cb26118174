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
	slot, err := g.charge(ctx, room, later(missed, now), now)
	if err != nil {
		room.refundAdmission(now)
		return g.unavailable(err, claims)
	}
	if slot.After(now) || backdated {
		want = Place{State: PlaceReserved, Slot: slot}
	}
	due := later(slot, now)
	undo := func() {
		room.refundAdmission(now)
		refundQuota(room, slot)
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
// had, missed, may take its turn on credit). The slot took its admission
// of the room's shared budget when it was given (Gate.charge). The ledger
// holds the place reserved at slot until its pass is recorded.
func (g *Gate) useSlot(ctx context.Context, room *Room, view *View, claims *tokens.WaitClaims, token string, slot, missed, now time.Time) Decision {
	if due, ok := room.paceSlot(claims.Place(), missed, now); !ok {
		return g.respaced(view, claims, slot, ceilMilli(due), now)
	}
	used, err := g.usedBy(token, now)
	if err != nil {
		room.unpaceSlot(claims.Place(), now)
		return g.unavailable(err, claims)
	}
	ok, err := g.ledger.Use(ctx, claims.Place(), used)
	switch {
	case err != nil:
		room.unpaceSlot(claims.Place(), now)
		return g.unavailable(fmt.Errorf("using reserved place: %w", err), claims)
	case !ok:
		// Another version of the place got there first: the login's
		// other tab, or the answer to this one's lost attempt. The
		// place's one admission of the shared budget went with it.
		room.unpaceSlot(claims.Place(), now)
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

// charge takes the admission of a slot at or after at from the room's
// shared budget, if it has one: the slot it returns is at, or the start of
// the first later budget window with an admission left.
func (g *Gate) charge(ctx context.Context, room *Room, at, now time.Time) (time.Time, error) {
	q := room.sharedQuota()
	if q == nil {
		return at, nil
	}
	slot, err := q.Reserve(ctx, at, now)
	if err != nil {
		return time.Time{}, fmt.Errorf("taking admission budget: %w", err)
	}
	return slot, nil
}

func refundQuota(room *Room, slot time.Time) {
	if q := room.sharedQuota(); q != nil {
		q.Refund(slot)
	}
}
