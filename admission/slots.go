package admission

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
)

// reserve gives the eligible place its slot (Gate.slot) and records it in
// the ledger: admitted now, or holding the slot, with the slot charged
// when that is another (Place.Charged). A place whose slot lapsed
// (lapsed, else zero) takes its turn at that slot. When it is due the place
// passes the pacer like every slot holder: a crowd presenting late at once
// is spaced at the rate, not admitted beside the bucket.
func (g *Gate) reserve(ctx context.Context, room *Room, view *View, claims *tokens.WaitClaims, token string, found, lapsed, now time.Time) Decision {
	want, err := g.usedBy(token, now)
	if err != nil {
		return g.unavailable(err, claims)
	}
	gv, err := g.slot(ctx, room, found, claims.NextAttempt(), now, now)
	var spent *QuotaSpentError
	if errors.As(err, &spent) && !lapsed.IsZero() {
		// Its turn is due (its slot, on credit): it takes the budget's
		// next window's admission rather than wait to ask for one.
		gv, err = g.slot(ctx, room, found, claims.NextAttempt(), spent.Retry, now)
	}
	switch {
	case errors.As(err, &spent):
		// No slot ahead: the place holds nothing and is judged again
		// when the budget has an admission.
		return g.wait(view, claims, OutcomeBusy, ceilMilli(spent.Retry), now)
	case err != nil:
		return g.unavailable(err, claims)
	}
	if !lapsed.IsZero() && lapsed.Before(gv.missed) {
		// Its slot lapsed while it was away: its turn is that slot, on
		// credit, as a late holder's (lapse.go).
		gv.missed, gv.slot, gv.backdated = lapsed, later(lapsed, now), true
	}
	slot, charged := gv.slot, gv.charged
	if slot.After(now) || gv.backdated {
		want = queue.Place{State: queue.PlaceReserved, Slot: slot}
		if !charged.Equal(slot) {
			want.Charged = charged
		}
	}
	due := later(slot, now)
	held, fresh, err := g.ledger.Hold(ctx, claims.Place(), want, g.lastValid(view, claims, due))
	if err != nil {
		// Whether the place now holds the slot is unknown: its admission
		// stays taken, as given back another place could take it too.
		return g.unavailable(fmt.Errorf("recording place: %w", err), claims)
	}
	room.observeFound(claims.Place())
	if !fresh { // a concurrent attempt for the place got there first
		gv.undo()
		if held.State == queue.PlaceUsed {
			return g.reused(room, held, token, claims, now)
		}
		return g.wait(view, claims, OutcomeBusy, ceilMilli(held.Slot), now)
	}
	room.observeEligible(now)
	switch {
	case want.State == queue.PlaceUsed:
		d := g.pass(room, claims, want, now)
		d.Slot = charged
		return d
	case slot.After(now):
		room.slots.watch(claims.Place(), gv.heldSlot, ceilMilli(slot))
		return g.wait(view, claims, OutcomeBusy, ceilMilli(slot), now)
	}
	return g.useSlot(ctx, room, view, claims, token, gv.heldSlot, gv.missed, now)
}

// useSlot admits a place whose slot is due: at the rate the room has now
// (the pacer; the slot was given at the rate of its moment, and may now
// lie further ahead; a place presenting late for the slot it would have
// had, missed, may take its turn on credit). The slot took its admission
// of the room's shared budget when it was given, that of the slot charged
// (Gate.slot), which the decision names for a Requeue to give back. The
// ledger holds the place reserved at slot until its pass is recorded.
func (g *Gate) useSlot(ctx context.Context, room *Room, view *View, claims *tokens.WaitClaims, token string, held heldSlot, missed, now time.Time) Decision {
	slot, charged := held.slot, held.charged
	if due, ok := room.paceSlot(claims.Place(), missed, now); !ok {
		room.slots.watch(claims.Place(), held, ceilMilli(due))
		return g.respaced(view, claims, slot, ceilMilli(due), now)
	}
	used, err := g.usedBy(token, now)
	if err != nil {
		room.unpaceSlot(now)
		return g.unavailable(err, claims)
	}
	ok, err := g.ledger.Use(ctx, claims.Place(), used)
	switch {
	case err != nil:
		room.unpaceSlot(now)
		return g.unavailable(fmt.Errorf("using reserved place: %w", err), claims)
	case !ok:
		// Another version of the place got there first: the login's
		// other tab, or the answer to this one's lost attempt. The
		// place's one admission of the shared budget went with it.
		room.unpaceSlot(now)
		held, err := g.ledger.Lookup(ctx, claims.Place())
		if err != nil {
			return g.unavailable(fmt.Errorf("looking up place: %w", err), claims)
		}
		switch held.State {
		case queue.PlaceUsed:
			return g.reused(room, held, token, claims, now)
		case queue.PlaceReserved:
			return g.wait(view, claims, OutcomeBusy, ceilMilli(later(held.Slot, now)), now)
		}
		// Released since its look-up: a requeue under way at another node
		// (Gate.Requeue holds it again at once). The place is kept; it
		// asks again.
		return g.unavailable(errPlaceReleased, claims)
	}
	room.slots.forget(claims.Place())
	d := g.pass(room, claims, used, now)
	d.Slot = charged
	return d
}

// errPlaceReleased is why a version whose place was released while it used
// it is asked to come back: its place is kept.
var errPlaceReleased = errors.New("place released while it was being used")

// slot gives a place found eligible at found its admission's slot, and
// how to give it back. With a shared quota (every room on a state store)
// the slot is the quota's: its first budget window with an admission left
// from now, so slots go in the order places are found eligible at every
// node, at the room's rate. Without one, or while it cannot be reached
// under on_unavailable local, the slot is this node's bucket's. Either
// way a place that presented late for found (on a shared quota: for found,
// or the moment it was told, told, if later) takes the slot it would have
// had then, missed (it loses its lateness, not the slots given meanwhile;
// Room.sharedSlot, Room.reserveAdmission), which may come before the
// quota's or the bucket's own next one. charged is the slot whose
// admission was taken: the quota's, whatever slot the place is given
// (shared), from the quota's first window with an admission from at on.
func (g *Gate) slot(ctx context.Context, room *Room, found, told, at, now time.Time) (given, error) {
	if q := room.sharedQuota(); q != nil {
		slot, shared, err := q.Reserve(ctx, at, now)
		var spent *QuotaSpentError
		switch {
		case errors.As(err, &spent):
			return given{}, err
		case err != nil:
			return given{}, fmt.Errorf("taking admission budget: %w", err)
		}
		if shared {
			// Late is late for the moment it was told: a node tells a
			// moment from its view of the clock, which lags the clock
			// by up to a poll, so a place found eligible before it was
			// told to come is on time at that moment.
			missed, backdated := room.sharedSlot(later(found, told), slot, now)
			return given{heldSlot: heldSlot{slot: later(missed, now), charged: slot, shared: true},
				missed: missed, backdated: backdated, undo: func() { q.Refund(slot) }}, nil
		}
	}
	missed, backdated := room.reserveAdmission(found, now)
	slot := later(missed, now)
	return given{heldSlot: heldSlot{slot: slot, charged: slot},
		missed: missed, backdated: backdated, undo: func() { room.refundAdmission(now) }}, nil
}

// given is a slot Gate.slot gave: the slot held; missed, the slot the
// place would have had when it presented late (at or before the slot);
// backdated, whether it lies before the slot's own moment; undo, which
// gives the admission back.
type given struct {
	heldSlot
	missed    time.Time
	backdated bool
	undo      func()
}

// holdAgain moves the admission of a place the hook refused, taken for
// its slot used, to a slot at or after next. With a shared quota the
// admission of used's window goes back and the slot takes one of its own
// window; with the node's bucket the place keeps the admission it has.
// undo gives the slot's admission back when the place is not held there
// after all.
func (g *Gate) holdAgain(ctx context.Context, room *Room, used, next, now time.Time) (slot time.Time, undo func(), err error) {
	giveBack := func() { room.refundAdmission(now) }
	if q := room.sharedQuota(); q != nil {
		giveBack = func() {
			if !used.IsZero() {
				q.Refund(used)
			}
		}
		slot, shared, err := q.Reserve(ctx, next, now)
		switch {
		case err != nil:
			giveBack()
			return time.Time{}, nil, fmt.Errorf("taking admission budget: %w", err)
		case shared:
			giveBack()
			return slot, func() { q.Refund(slot) }, nil
		}
	}
	return next, giveBack, nil
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// chargedSlot is the slot whose admission a reserved place took.
func chargedSlot(p queue.Place) time.Time {
	if p.Charged.IsZero() {
		return p.Slot
	}
	return p.Charged
}
