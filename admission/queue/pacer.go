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
// the rate (the bucket's own spacing), it always has one, as its burst
// covers the network's spread of the arrivals; after a cut it re-spaces the
// remaining slot holders at the new rate, each in the order it presented
// at its slot, so nobody overtakes a slot due before theirs (they cannot
// present before it). A re-spaced due time is remembered per place, so
// every version of its token is given the same one, and each place takes
// from the pacer once.
//
// Every token taken is held by one thing at a time: a re-spaced slot still
// to come (due), or the one attempt that passed, until its place is
// admitted or the attempt gives it back (GiveBack). While an attempt for a
// place holds a token, another version of the place (a tab of the same
// login, presented at the same slot) takes none: it is told to come back a
// moment later, when the first has either admitted the place (and it gets
// the same pass) or given the token back (and it passes in its turn), or
// could no longer be in flight (pacerInFlight). A place is one admission,
// so it is never re-spaced behind itself.
type Pacer struct {
	mu     sync.Mutex
	bucket *Bucket
	due    map[string]time.Time // re-spaced slots still to come
	// inflight holds, per place, when the attempt that passed and has
	// neither admitted it nor given its token back passed.
	inflight map[string]time.Time
	purged   time.Time
	// rate and burst as last set (the bucket's burst is pacerBurst's).
	rate, burst float64
}

// PacerSlack is how much of the rate the pacer's burst holds at least: the
// spread of slot holders' arrivals (their network) that it absorbs, and
// the credit a late holder may take (without it, a holder presenting late
// is re-spaced behind holders on time: gateway.TestLatePresenterLosesItsLateness,
// gateway.TestLateSlotHolderTakesItsTurnOnCredit). Its cost: a rate cut
// admits two seconds more at the old spacing.
const PacerSlack = 2 * time.Second

// PacerRaceWait is how much later a version of a place is asked to come
// back while another version's admission of the place is in flight: about
// one ledger write.
const PacerRaceWait = 100 * time.Millisecond

// pacerInFlight is how long an attempt that passed holds off its place's
// other versions: far longer than its ledger writes take, so that one that
// never settled (a panic in a store call) does not hold the place forever.
// Past it, another version takes a token of its own, and the one of the two
// that loses the ledger's Use gives it back.
const pacerInFlight = 10 * time.Second

// pacerForget is how long past its due a re-spaced slot is remembered for
// a place that did not come back for it.
const pacerForget = time.Hour

// NewPacer returns a pacer at rate, its burst at least PacerSlack of it.
func NewPacer(rate, burst float64, now time.Time) *Pacer {
	return &Pacer{bucket: newBucket(rate, pacerBurst(rate, burst), now), due: map[string]time.Time{}, inflight: map[string]time.Time{}, rate: rate, burst: burst}
}

func pacerBurst(rate, burst float64) float64 {
	return math.Max(math.Max(1, burst), rate*PacerSlack.Seconds())
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
	p.bucket.SetRate(rate, pacerBurst(rate, burst), now)
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
	if since, ok := p.inflight[place]; ok && now.Sub(since) < pacerInFlight {
		return now.Add(PacerRaceWait), false
	}
	if due, ok := p.due[place]; ok {
		if now.Before(due) {
			return due, false
		}
		delete(p.due, place) // this attempt holds the slot's token now
		return p.passed(place, now)
	}
	due := p.bucket.reserve(now)
	if !due.After(now) {
		return p.passed(place, now)
	}
	if now.Sub(slot) > PacerSlack && p.rate > 0 && due.Sub(now).Seconds() <= pacerBurst(p.rate, p.burst)/p.rate {
		return p.passed(place, now)
	}
	if now.Sub(p.purged) > pacerForget {
		p.purged = now
		for id, d := range p.due {
			if now.Sub(d) > pacerForget {
				delete(p.due, id)
			}
		}
		for id, since := range p.inflight {
			if now.Sub(since) > pacerForget {
				delete(p.inflight, id)
			}
		}
	}
	p.due[place] = due
	return due, false
}

// passed records an attempt for place that holds a token now.
func (p *Pacer) passed(place string, now time.Time) (time.Time, bool) {
	p.inflight[place] = now
	return now, true
}

// GiveBack returns the token an attempt for place that passed holds: its
// admission did not go through.
func (p *Pacer) GiveBack(place string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bucket.Refund(now)
	delete(p.inflight, place)
}

// Admitted forgets place's re-spaced slot, if a version of its token
// presented with the admitted one took one, and returns its token: the
// place is in and will not come for it.
func (p *Pacer) Admitted(place string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inflight, place)
	if _, ok := p.due[place]; ok {
		delete(p.due, place)
		p.bucket.Refund(now)
	}
}

// Level is the number of the pacer's tokens available at now (negative:
// the debt of the re-spaced slots not yet due).
func (p *Pacer) Level(now time.Time) float64 { return p.bucket.Level(now) }

// InFlight is how many places have an attempt that passed the pacer and
// has neither admitted its place nor given its token back.
func (p *Pacer) InFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.inflight)
}
