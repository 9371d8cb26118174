package admission

import (
	"math"
	"sync/atomic"
	"time"
)

// shows counts, per second, the places the clock passed that came to be
// admitted and those found gone (Room.showShare).
type shows struct{ came, gone *rateWindow }

func newShows() shows {
	return shows{came: newRateWindow(showWindow), gone: newRateWindow(showWindow)}
}

// showWindow is how far back Room.showShare looks.
const showWindow = 10 * time.Second

// minShowShare bounds the clock's lead to four times its size however
// many places walk away.
const minShowShare = 0.25

// missedAfter is how long after the moment it was told a place that has
// not come counts as gone (passedKeys): a page comes at its moment, its
// request on the way for its network's delay. One that comes later is
// counted again from then.
const missedAfter = lotteryTick

// noteDue records when a judged place was told to come next (its
// presence's due), and returns d.
func (r *Room) noteDue(place string, d Decision) Decision {
	if d.Next.Claims != nil {
		r.presence.setDue(place, d.Next.Claims.NextAttempt())
	}
	return d
}

// passedKeys is how many of the places presented here the clock passed
// by the reading s and did not admit are expected to come, how many of
// those were not found eligible yet, and the keys of those it has still to
// pass, in order. A
// place that did not come when told (by missedAfter) is not expected, nor
// is one whose moment is unknown passed at or before the reading from; of
// the others, the share that came lately (showShare). Both orders keep a
// lead of passed places coming: one that walked away would hold its part
// of the lead until forgotten, and the visitors who stay would go in
// slower than the rate. Callers hold r.mu.
func (r *Room) passedKeys(v *View, from, s float64, now time.Time) (expected float64, unfound int, ahead []float64) {
	split := r.presence.keysFrom(now, from, s, v.PreQueue, now.Add(-missedAfter))
	if split.newlyMissed > 0 {
		r.shows.gone.add(now, float64(split.newlyMissed))
	}
	return float64(split.passed) * r.showShare(now), split.unfound, split.ahead
}

// showShare is the share of the places the clock passed that came to be
// admitted, over the last showWindow: admitted over admitted and found
// gone, in the room (this node's counts now, and the other nodes' as last
// noted: NoteOtherShows), else at this node. Counting each passed place as
// that share keeps the lead's worth of places coming, so the visitors who
// stay are admitted at the rate; fifo's predictions pass keys at the rate
// over it (View.fifoWhen), so a node that sees few places predicts about
// as the others do, not from a handful of its own. The counts are of
// visits: a place that presented at several nodes counts at each. 1 while
// none was found gone; at least minShowShare.
func (r *Room) showShare(now time.Time) float64 {
	came, gone := r.ShowRates(now)
	if otherCame, otherGone, ok := r.otherShows.fresh(now); ok {
		came, gone = came+otherCame, gone+otherGone
	}
	if gone == 0 {
		return 1
	}
	return math.Max(minShowShare, came/(came+gone))
}

// ShowRates is how many of the places the clock passed came to be
// admitted at this node per second over the last showWindow, and how many
// were found gone here, for the room's sums (NoteOtherShows).
func (r *Room) ShowRates(now time.Time) (came, gone float64) {
	return r.shows.came.rate(now), r.shows.gone.rate(now)
}

// NoteOtherShows tells the room the sums of the other nodes' ShowRates:
// this node's own counts are read afresh each time (showShare).
func (r *Room) NoteOtherShows(came, gone float64, now time.Time) {
	r.otherShows.note(math.Max(0, came), math.Max(0, gone), now)
}

// roomSums is two sums over the nodes sharing a room, as last noted, and
// when: a note older than roomSumsFresh stands for nothing.
type roomSums struct {
	a, b atomic.Uint64 // math.Float64bits
	at   atomic.Int64  // Unix nanoseconds; 0: never noted
}

// roomSumsFresh is how long a noted sum stands: three ticks, as long as a
// node's published value lives in the store.
const roomSumsFresh = 3 * lotteryTick

// note records a and b at now, unless either is negative or not finite.
func (s *roomSums) note(a, b float64, now time.Time) {
	valid := func(x float64) bool { return x >= 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }
	if !valid(a) || !valid(b) {
		return
	}
	s.a.Store(math.Float64bits(a))
	s.b.Store(math.Float64bits(b))
	s.at.Store(now.UnixNano())
}

// fresh is the sums, when they were noted within roomSumsFresh of now.
func (s *roomSums) fresh(now time.Time) (a, b float64, ok bool) {
	at := s.at.Load()
	if at == 0 || now.Sub(time.Unix(0, at)) > roomSumsFresh {
		return 0, 0, false
	}
	return math.Float64frombits(s.a.Load()), math.Float64frombits(s.b.Load()), true
}

// Passed is how many places presented at this node the clock passed and
// did not admit are expected to come (passedKeys; fifoKeys in fifo), and
// how many places hold the fifo counter at the pre-queue's end
// (holdingEnd; 0 in a lottery room), for the room's sums (NoteRoomPassed).
func (r *Room) Passed(now time.Time) (expected, holding float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.View(now)
	if r.fifo == nil {
		expected, _, _ = r.passedKeys(&v, math.Inf(-1), v.Clock.At(r.speedFrom(&v, now)), now)
		return expected, 0
	}
	expected, n, ahead := r.fifoKeys(&v, now)
	return expected, float64(holdingEnd(&v, n, ahead))
}

// NoteRoomPassed tells the room the sums of every node's Passed: its
// clock then keeps its lead over the room's admissions, not over its
// node's scaled up, and fifo's counter holds at the pre-queue's end until
// no node has a place holding it there.
func (r *Room) NoteRoomPassed(n, holding float64, now time.Time) {
	r.roomPassed.note(n, holding, now)
}

// roomPassedNow is the sum of every node's passed places, and of their
// places holding the fifo counter at the pre-queue's end (holdingEnd),
// when they were noted lately.
func (r *Room) roomPassedNow(now time.Time) (expected, holding float64, ok bool) {
	return r.roomPassed.fresh(now)
}
