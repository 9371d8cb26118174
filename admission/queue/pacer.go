package queue

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Pacer re-validates admission slots when they fall due, at the rate the
// room has now (docs/FAIRNESS.md, "Slots and rate changes").
//
// A slot is a time, fixed when the bucket gave it at the rate of that
// moment. Cut the rate and the slots already given would still come due
// at the old spacing. So a place arriving at its slot also takes one from
// the pacer, a second bucket at the current rate: while the slots come at
// the rate (the bucket's own spacing), it always has one, as it holds the
// network's spread of the arrivals and the holders a stall bunched
// (pacerStall); after a cut it re-spaces the remaining slot holders at the
// new rate, each in the order it presented at its slot, so nobody
// overtakes a slot due before theirs (they cannot present before it). A
// re-spaced due time is remembered per place, so every version of its
// token is given the same one, and each place takes from the pacer once.
//
// Every token taken is held by one thing at a time: a re-spaced slot still
// to come (due), or the one attempt that passed, until its place is
// admitted or the attempt gives it back (GiveBack). A place's attempts are
// judged one at a time at a node (admission.Turns), so a version presented
// beside another finds the place admitted rather than taking a token of
// its own: a place is one admission, never re-spaced behind itself.
type Pacer struct {
	mu     sync.Mutex
	bucket *Bucket
	due    map[string]time.Time // re-spaced slots still to come
	purged time.Time
	// rate and burst as last set (the bucket holds pacerCap of them).
	rate, burst float64
}

// PacerSlack is how much of the rate the pacer's burst holds at least: the
// spread of slot holders' arrivals (their network) that it absorbs, and
// the credit a late holder may take (without it, a holder presenting late
// is re-spaced behind holders on time: gateway.TestLatePresenterLosesItsLateness,
// gateway.TestLateSlotHolderTakesItsTurnOnCredit). Its cost: a rate cut
// admits two seconds more at the old spacing.
const PacerSlack = 2 * time.Second

// pacerStall is how much of the rate the pacer's bucket holds beyond its
// burst: the slot holders a stall bunched (a node, or its visitors,
// starved of CPU for seconds, whose holders then come together), on top
// of the network's spread. The bucket refills during the stall like any
// lull, so holders of slots given at the rate pass together however they
// are served, until the stall's holders are more than the bucket holds;
// past it, every holder after them is re-spaced by the excess for as long
// as slots keep falling due at the rate (the pacer is paid back only when
// they come slower). Credit (Pass) is still bounded by the burst alone.
// Its cost: a rate cut, or a crowd presenting late, admits this much more
// at once.
const pacerStall = PacerSlack

// pacerForget is how long past its due a re-spaced slot is remembered for
// a place that did not come back for it.
const pacerForget = time.Hour

// NewPacer returns a pacer at rate, its burst at least PacerSlack of it.
func NewPacer(rate, burst float64, now time.Time) *Pacer {
	return &Pacer{bucket: newBucket(rate, pacerCap(rate, burst), now), due: map[string]time.Time{}, rate: rate, burst: burst}
}

func pacerBurst(rate, burst float64) float64 {
	return math.Max(math.Max(1, burst), rate*PacerSlack.Seconds())
}

// pacerCap is what the pacer's bucket holds: its burst and pacerStall of
// the rate.
func pacerCap(rate, burst float64) float64 {
	return pacerBurst(rate, burst) + rate*pacerStall.Seconds()
}

// SetRate changes the pacer's rate. The re-spaced slots still to come were
// spaced at the old rate: they are spaced again at the new one, in the
// same order, so a cut binds them too.
func (p *Pacer) SetRate(rate, burst float64, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rate == p.rate && burst == p.burst {
		return // a cluster node sets its share every tick, mostly unchanged
	}
	p.rate, p.burst = rate, burst
	var ahead []string
	for place, due := range p.due {
		if due.After(now) {
			ahead = append(ahead, place)
			p.bucket.Refund(now)
		}
	}
	p.bucket.SetRate(rate, pacerCap(rate, burst), now)
	slices.SortFunc(ahead, func(a, b string) int { return p.due[a].Compare(p.due[b]) })
	for _, place := range ahead {
		p.due[place] = p.bucket.reserve(now)
	}
}

// Pass reports whether place, whose slot came at slot, may be admitted
// now; if not, when its re-spaced slot is.
//
// A holder presenting more than PacerSlack after its slot takes its token
// on credit, the pacer owing at most a burst. Re-spaced by a second, such
// a page (a background tab whose timers fire once a minute) would come
// back a whole period late, beyond its own lateness, where an on-time
// holder re-spaced after it comes back on time and loses the second. The
// credit is paid back by the holders after it, so a crowd presenting late
// together still goes in at the rate after two bursts.
func (p *Pacer) Pass(place string, slot, now time.Time) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if due, ok := p.due[place]; ok {
		if now.Before(due) {
			return due, false
		}
		delete(p.due, place) // this attempt holds the slot's token now
		return now, true
	}
	due := p.bucket.reserve(now)
	if !due.After(now) {
		return now, true
	}
	if now.Sub(slot) > PacerSlack && p.rate > 0 && due.Sub(now).Seconds() <= pacerBurst(p.rate, p.burst)/p.rate {
		return now, true
	}
	if now.Sub(p.purged) > pacerForget {
		p.purged = now
		for id, d := range p.due {
			if now.Sub(d) > pacerForget {
				delete(p.due, id)
			}
		}
	}
	p.due[place] = due
	return due, false
}

// GiveBack returns the token an attempt that passed holds: its admission
// did not go through.
func (p *Pacer) GiveBack(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bucket.Refund(now)
}

// Admitted forgets place's re-spaced slot, if a version of its token took
// one (here, while another version was admitted at another node), and
// returns its token: the place is in and will not come for it.
func (p *Pacer) Admitted(place string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.due[place]; ok {
		delete(p.due, place)
		p.bucket.Refund(now)
	}
}

// Level is the number of the pacer's tokens available at now (negative:
// the debt of the re-spaced slots not yet due).
func (p *Pacer) Level(now time.Time) float64 { return p.bucket.Level(now) }
