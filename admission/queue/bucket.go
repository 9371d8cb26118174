package queue

import (
	"math"
	"sync"
	"time"
)

// Bucket is a token bucket: it refills at Rate tokens per second up to Burst
// and caps how many visitors are admitted, whatever the clock says.
//
// It is not golang.org/x/time/rate's Limiter, though Reserve is the same
// idea: admissions need a fractional burst, a rate change that keeps the
// debt reservations ran up, and a refund after the reserved moment has
// passed (the admission hook refuses a visitor after their slot), which
// Reservation.CancelAt no longer gives back at that point.
type Bucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64 // negative while reservations are outstanding
	last   time.Time
	// opens is when the queue the bucket serves opened (OpenAt): the
	// bucket holds nothing it refilled before then.
	opens time.Time
	// ordered keeps the slots in the order asked for (inOrder), and
	// latest is the latest slot given.
	ordered bool
	latest  time.Time
	// granted keeps the slots handed out (for LateMemory in
	// NewRememberingBucket's, none in newBucket's).
	granted grants
}

// newBucket returns a full bucket.
func newBucket(rate, burst float64, now time.Time) *Bucket {
	return &Bucket{rate: rate, burst: burst, tokens: burst, last: now}
}

// reserve takes one token, going into debt if there is none, and returns
// when the token is (or was) there: now if the bucket had one. Reservations
// are served in the order they are made, so whoever asks first, not most
// often, goes first.
func (b *Bucket) reserve(now time.Time) time.Time {
	due, _ := b.ReserveFor(now, now)
	return due
}

// ReserveFor takes one token for a reservation that was due at found
// (before now: asked late) and returns when it is due. A reservation asked
// late is served where it would have been had it been asked at found: the
// slot of the first reservation made since found (which it would have
// preceded), which may have passed (due before now: due at once, and
// presented late for); without one, as one asked now.
// backdated reports that due, or now if later, is before the slot a
// reservation asked now gets: the token it takes is one the bucket has not refilled yet, so the
// caller must space such reservations itself when they fall due (the
// room's pacer does). It still takes a token now, so every reservation
// after it moves back one, as it would have had it been asked in time: the
// bucket hands out as many as before. Asking late never gains: the slot is
// the one asked at found would have had, or later. How late is made up is
// bounded by the bucket's memory (nothing is made up without it).
func (b *Bucket) ReserveFor(found, now time.Time) (due time.Time, backdated bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	b.tokens--
	slot := now
	if b.tokens < 0 {
		slot = now.Add(durationOf(-b.tokens / b.rate))
	}
	slot = b.inOrder(slot, now)
	if b.granted.memory <= 0 {
		return slot, false
	}
	return b.granted.take(found, slot, now)
}

// inOrder keeps the slots in the order they are asked for. An admission
// given back (Refund: a slot lapsed, an attempt undone) puts the bucket's
// next slot at or before one it already gave, ahead of a place asked for
// earlier. So a slot that would not come after the latest one still to
// come goes just after it instead: half a spacing for one given back,
// closer together the more the bucket's own line lags the latest slot
// (never under a millisecond, as places are told their slots to the
// millisecond), so what was given back is used about as fast as it comes
// back, and places go in in the order they were found. While no slot is
// still to come a reservation is not moved: a burst is taken together. A
// room's admission bucket keeps its slots in order; the pacer's does not,
// as it spaces holders by when they present, and one it spaced out ahead
// must not hold back a holder who presents at its slot when an admission
// comes back.
func (b *Bucket) inOrder(slot, now time.Time) time.Time {
	if !b.ordered {
		return slot
	}
	if b.rate > 0 && b.latest.After(now) && !slot.After(b.latest) {
		behind := b.latest.Sub(slot).Seconds() * b.rate // admissions given back, beyond the one
		slot = b.latest.Add(max(time.Millisecond, durationOf(1/(b.rate*(2+behind)))))
	}
	b.latest = later(b.latest, slot)
	return slot
}

// Refund gives back a token a reservation took and did not use.
func (b *Bucket) Refund(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	b.tokens = math.Min(b.burst, b.tokens+1)
}

// Level is the number of tokens available at now (negative: the debt of
// reservations not yet due).
func (b *Bucket) Level(now time.Time) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	tokens, _ := b.at(now)
	return tokens
}

// SetRate changes the refill rate and burst from now on, keeping any debt.
// A faster rate starts the order of slots afresh (inOrder): slots given
// at the slower rate keep their moments, and those given from now on come
// at the new one, not behind them, so a capacity room that raises its
// rate uses it at once (a place found later may then go in before one
// found earlier, by at most the old rate's line).
func (b *Bucket) SetRate(rate, burst float64, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	if rate > b.rate {
		b.latest = time.Time{}
	}
	b.rate, b.burst = rate, burst
	b.tokens = math.Min(b.tokens, burst)
}

// OpenAt says the queue the bucket serves opens (or opened) at t: of what
// the bucket refilled before t, no more than one admission is carried past
// it, so a sale's first admissions come at the rate (the first at once)
// instead of in a burst saved while the room waited for its start (it was
// a tenth of the first 10 seconds' admissions at full scale). Debt is
// kept. The zero time: no queue, nothing dropped.
//
// A bucket told of an opening after it refilled up to or past it (a
// reservation stamped at or after the opening got in first: the room reads
// the clock before its lock) drops now what it could not have held: one
// admission and the refill since the opening, less the reservations made
// since, which it remembers (without memory, at most one more than told in
// time).
func (b *Bucket) OpenAt(t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !t.IsZero() && !t.Equal(b.opens) && !b.last.Before(t) {
		since := float64(b.granted.countSince(t))
		b.tokens = math.Min(b.tokens, 1+b.last.Sub(t).Seconds()*b.rate-since)
	}
	b.opens = t
}

func (b *Bucket) refill(now time.Time) { b.tokens, b.last = b.at(now) }

// at is what the bucket holds at now, refilled since it last was, and
// when that is: a read changes nothing (Level), so a queue that opened and
// closed again unseen by any admission drops nothing (OpenAt).
func (b *Bucket) at(now time.Time) (tokens float64, last time.Time) {
	tokens, last = b.tokens, b.last
	fill := func(to time.Time) {
		if to.After(last) {
			tokens = math.Min(b.burst, tokens+to.Sub(last).Seconds()*b.rate)
			last = to
		}
	}
	if last.Before(b.opens) && !now.Before(b.opens) {
		fill(b.opens)
		tokens = math.Min(tokens, 1)
	}
	fill(now)
	return tokens, last
}

// Burst is the most tokens the bucket holds.
func (b *Bucket) Burst() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.burst
}

// NewRememberingBucket is a room's admission bucket: full, keeping its slots
// for LateMemory, and in the order they are asked for (inOrder).
func NewRememberingBucket(rate, burst float64, now time.Time) *Bucket {
	b := newBucket(rate, burst, now)
	b.granted.memory = LateMemory
	b.ordered = true
	return b
}
