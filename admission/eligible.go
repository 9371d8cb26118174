package admission

import (
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
)

// preQueueFirst is a pre-queue place's first checkpoint, at least a
// MinBackoff after its claim: as for every fifo place (fifoNext), the
// moment the counter is expected to pass its key, from the pre-queue as it
// stands, approached from the start. The pre-queue only grows until the
// start, and the key with it, so a place comes early (and is told again)
// or on time: the holders of the first keys come at the start, in the
// order of their draws. A place whose moment lies more than a MaxBackoff
// after the start comes in the first MinBackoff after it, spread by its
// draw, and learns its moment then: the whole pre-queue would otherwise
// be due in the start's first grid points.
func (g *Gate) preQueueFirst(view *View, claims *tokens.WaitClaims, now time.Time) time.Time {
	target := view.SaleStart.Add(durationOf(g.codec.Keys().Draw(claims.Lot).Phase * g.policy.MinBackoff.Seconds()))
	key := g.fifoKey(view, claims, g.codec.Keys().Lottery(claims.Lot))
	if when, ok := view.fifoWhen(now, key); ok {
		from := later(now, view.SaleStart)
		if near := fifoApproach(when, from, g.policy, fifoReachPre); near.Before(from.Add(g.policy.MaxBackoff)) {
			target = near
		}
	}
	return g.pointFrom(view, claims, target, now.Add(g.policy.MinBackoff))
}

// walk judges the place at each checkpoint from its nxt up to now. It
// returns the first checkpoint at which it was eligible, or the first
// checkpoint after now if there was none. Eligibility only grows with time
// (the clock never runs backwards), so the checkpoints between are
// searched, not walked one by one.
func (g *Gate) walk(view *View, claims *tokens.WaitClaims, phase, from, threshold float64, now time.Time) (time.Time, bool) {
	first := claims.NextAttempt()
	if view.State == StateOpen {
		return first, true
	}
	eligible := func(at time.Time) bool {
		return !view.Opens.After(at) && view.ClockAt(at)-from >= threshold
	}
	grid := g.gridOf(view, phase)
	// Checkpoints are grid points: index n is at grid.at(n). The
	// checkpoints to judge are lo to hi, the last at or before now.
	lo := grid.index(first)
	loAt := grid.at(lo)
	if now.Before(loAt) {
		return loAt, false
	}
	hi, hiAt, next := lo, loAt, grid.at(lo+1)
	if !next.After(now) { // presented late: the points since count too
		hi = grid.after(now) - 1
		hiAt, next = grid.at(hi), grid.at(hi+1)
	}
	if !eligible(hiAt) {
		return next, false
	}
	if eligible(first) {
		return first, true
	}
	for hi-lo > 1 { // eligible at hi, not at lo
		mid := lo + (hi-lo)/2
		if eligible(grid.at(mid)) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return grid.at(hi), true
}

// fifoFound is when a fifo place became eligible: the first moment since
// its token was first issued (and the queue opened) at which the counter
// had reached its key, read from the room's memory of its clock. It
// depends on the place's key and the counter alone, not on the version
// presented nor on when: asking often, late or with an old version finds
// the same moment, and the place takes the slot it would have had then
// (Gate.reserve). ok is false while the counter has not reached the key.
func fifoFound(view *View, claims *tokens.WaitClaims, key float64, now time.Time) (time.Time, bool) {
	if view.ClockAt(now) < key {
		return time.Time{}, false
	}
	lo := later(time.Unix(claims.IssuedAt, 0), view.Opens)
	if !lo.Before(now) {
		return now, true
	}
	if view.ClockAt(lo) >= key {
		return lo, true
	}
	// The clock never runs backwards: search the milliseconds between.
	l, h := lo.UnixMilli(), now.UnixMilli()
	if view.ClockAt(time.UnixMilli(h)) < key {
		return now, true
	}
	for h-l > 1 {
		m := l + (h-l)/2
		if view.ClockAt(time.UnixMilli(m)) >= key {
			h = m
		} else {
			l = m
		}
	}
	return time.UnixMilli(h), true
}

// threshold is where the place's distance on the serving clock counts from,
// and the distance: it is eligible once S − from ≥ threshold.
func (g *Gate) threshold(view *View, claims *tokens.WaitClaims, v float64) (from, threshold float64) {
	if view.Order == OrderFIFO {
		return view.RankZero, g.fifoKey(view, claims, v)
	}
	return claims.Srv, queue.Threshold(v)
}
