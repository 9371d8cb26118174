package admission

import (
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
)

// A room sized by capacity admits by what the site holds instead of at a
// fixed rate: the rate it runs at is the one that keeps the visitors on the
// site (the passes presented within a window) at the capacity. ActiveSet
// counts them; CapacityController turns the count into a rate.

// MinCapacityRate is the rate a full room runs at: CheckRate needs a
// positive rate, and one admission in a thousand seconds is none in
// practice (the controller takes it back from the next ones).
const MinCapacityRate = 0.001

// DefaultCapacitySettle is how soon the controller closes a gap between the
// visitors on the site and the capacity: six ticks. The controller counts
// the admissions still to show in the count (RateAhead), so the settle
// need not outlast that lag; three times it keeps the loop from ringing
// when the count comes later still.
const DefaultCapacitySettle = 6 * time.Second

// CapacityLookahead is the span whose departures the controller admits for
// ahead: two ticks, as long as a count takes to reach every node's bucket
// across a cluster (a node's publication, then the poll of the rate).
const CapacityLookahead = 2 * time.Second

// ClusterCountLag is how late a cluster's count of the room is, as the
// admissions and departures it misses, for the node that ticks: its own
// passes are in the count at once, the other nodes' as they published them,
// up to publish before. With own the ticking node's share of the
// admissions, the count misses the others' share of the last publish.
func ClusterCountLag(own float64, publish time.Duration) time.Duration {
	if math.IsNaN(own) {
		own = 0
	}
	return time.Duration((1 - clamp(own, 0, 1)) * float64(publish))
}

// CapacityController sets a room's admission rate from the visitors on the
// site. A pass stops counting a window after it was last presented, so the
// departures of the next moments are known now: the passes whose window
// ends within CapacityLookahead (ActiveSet.Tally). The controller admits
// those departures as they happen, plus the gap to the capacity spread over
// Settle; never faster than Ceiling. It admits no visitor the site will
// have no place for: over the capacity, it admits only for the departures
// of the lookahead beyond the excess. Recomputed every tick, it admits for a
// departure only once it is due, so a cohort admitted together and leaving
// together is replaced as it leaves, not ahead of it. It is pure: every
// input is an argument.
//
// A rate set now takes effect a lead after the moment the count shows (on
// a cluster, once every node has it, and the count comes late): the gap it
// closes is the one at that moment, the count plus the admissions the
// rates already set give before then, less the departures due before then
// at the pace of those now (RateAhead). Without that, the gap already
// being closed is asked for again each tick until the count shows it, so
// the loop would overshoot unless Settle were long against the lead, and
// a long Settle is a slow refill after the site fills or loses visitors.
//
// A session the origin ended is a departure due at once: among those
// leaving for CapacityLookahead after it ended, and out of the count, as
// its visitor is.
type CapacityController struct {
	// Capacity is the number of visitors the site holds at once.
	Capacity float64
	// Ceiling is the most admissions per second, whatever the gap.
	Ceiling float64
	// Settle is how soon a gap is closed; DefaultCapacitySettle when zero.
	Settle time.Duration
}

// Rate is the admissions per second that keep the active visitors at the
// capacity, given the room's tally over CapacityLookahead, for a rate that
// takes effect at once: between MinCapacityRate and Ceiling.
func (c CapacityController) Rate(t Tally) float64 { return c.RateAhead(t, 0, 0) }

// RateAhead is Rate for a rate that takes effect lead after the moment
// the tally counts, while the rates set before it admit admitting visitors
// in between.
func (c CapacityController) RateAhead(t Tally, admitting float64, lead time.Duration) float64 {
	settle := c.Settle
	if settle <= 0 {
		settle = DefaultCapacitySettle
	}
	lookahead := CapacityLookahead.Seconds()
	departing := math.Max(0, t.Leaving) + math.Max(0, t.Ended)
	then := t.Active + math.Max(0, admitting) - departing*math.Max(0, lead.Seconds())/lookahead
	gap := c.Capacity - then
	want := departing/lookahead + gap/settle.Seconds()
	if gap < 0 {
		// Over the capacity the only places to admit into are those the
		// known departures free beyond the excess: the excess comes off
		// them, not off Settle's share, which would go on admitting into
		// a site above its capacity.
		want = (departing + gap) / lookahead
	}
	ceiling := c.Ceiling
	if ceiling < MinCapacityRate || math.IsNaN(ceiling) {
		ceiling = MinCapacityRate
	}
	if math.IsNaN(want) {
		return MinCapacityRate
	}
	return clamp(want, MinCapacityRate, ceiling)
}

// RatePlan is the rates a capacity room set and when each takes effect:
// what the rates already set will admit over a span (RateAhead's
// admitting). Not safe for concurrent use.
type RatePlan struct {
	steps []planStep
}

type planStep struct {
	from time.Time
	rate float64
}

// planSteps is the most steps a plan keeps: a few ticks, longer than any
// lead.
const planSteps = 8

// Set makes rate the plan's from from on, replacing the steps at or after it.
func (p *RatePlan) Set(rate float64, from time.Time) {
	keep := p.steps[:0]
	for _, st := range p.steps {
		if st.from.Before(from) {
			keep = append(keep, st)
		}
	}
	keep = append(keep, planStep{from: from, rate: rate})
	if n := len(keep); n > planSteps {
		keep = append(keep[:0], keep[n-planSteps:]...)
	}
	p.steps = keep
}

// Admits is the admissions the plan gives from a until b: none before its
// first step.
func (p *RatePlan) Admits(a, b time.Time) float64 {
	total := 0.0
	for i, st := range p.steps {
		lo := later(st.from, a)
		hi := b
		if i+1 < len(p.steps) && p.steps[i+1].from.Before(hi) {
			hi = p.steps[i+1].from
		}
		if hi.After(lo) {
			total += st.rate * hi.Sub(lo).Seconds()
		}
	}
	return total
}

// activeShards spreads the set over locks: every request with a pass
// touches it.
const activeShards = 32

// ActiveSet counts the distinct passes presented within a window, by pass
// id, and those about to leave it. A pass presented over and over counts
// once. It keeps one entry per active pass: its memory follows the site's
// capacity, not the crowd waiting.
type ActiveSet struct {
	window atomic.Int64 // nanoseconds
	seed   maphash.Seed
	shards [activeShards]activeShard
}

type activeShard struct {
	mu sync.Mutex
	// seen is each pass's last presentation; ended the passes the origin
	// ended, until they would have expired, so a request already under
	// way does not bring one back.
	seen  map[string]passEntry
	ended map[string]passEntry
}

// passEntry is a pass's last presentation (or its end) and its sketch
// hash, taken once when the pass is first seen: the tick's sketch then
// reads no pass id.
type passEntry struct {
	at   time.Time
	hash uint64
}

// NewActiveSet returns a set counting passes presented within window (at
// least a second).
func NewActiveSet(window time.Duration) *ActiveSet {
	a := &ActiveSet{seed: maphash.MakeSeed()}
	a.SetWindow(window)
	for i := range a.shards {
		a.shards[i].seen = map[string]passEntry{}
		a.shards[i].ended = map[string]passEntry{}
	}
	return a
}

// Window is how long a pass counts as active after it was presented.
func (a *ActiveSet) Window() time.Duration { return time.Duration(a.window.Load()) }

// SetWindow changes the window (at least a second) from the next tally on.
func (a *ActiveSet) SetWindow(window time.Duration) {
	a.window.Store(int64(max(window, time.Second)))
}

func (a *ActiveSet) shard(id string) *activeShard {
	return &a.shards[maphash.String(a.seed, id)%activeShards]
}

// See records pass id as presented at now (its admission counts as its
// first presentation). A pass ended within the window is not counted again.
func (a *ActiveSet) See(id string, now time.Time) {
	if id == "" {
		return
	}
	s := a.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ended[id]; ok {
		return
	}
	e, ok := s.seen[id]
	switch {
	case !ok:
		e.hash = queue.SketchHash(id)
	case e.at.After(now):
		return // an older request finishing late
	}
	e.at = now
	s.seen[id] = e
}

// End stops counting pass id at once: its visitor left (the origin ended
// the session). It reports whether the pass was counted.
func (a *ActiveSet) End(id string, now time.Time) bool {
	s := a.shard(id)
	s.mu.Lock()
	e, ok := s.seen[id]
	delete(s.seen, id)
	if _, again := s.ended[id]; !again { // a second end is the same departure
		if !ok {
			e.hash = queue.SketchHash(id)
		}
		s.ended[id] = passEntry{at: now, hash: e.hash}
	}
	s.mu.Unlock()
	return ok
}

// Tally is an ActiveSet's count at a moment.
type Tally struct {
	// Active is how many passes were presented within the window.
	Active float64
	// Leaving is how many of them leave it within the horizon asked for,
	// unless presented again.
	Leaving float64
	// Ended is how many passes the origin ended within the horizon before
	// now (not among Active).
	Ended float64
	// EndedInWindow is how many it ended within the window: they are in
	// the set's Sketch, so that a pass ended here is not counted for the
	// room by a node it reached before (RoomTally).
	EndedInWindow float64
}

// Tally sweeps the passes not presented within the window and counts the
// rest, those of them whose window ends within horizon, and the passes
// ended within horizon before now.
func (a *ActiveSet) Tally(now time.Time, horizon time.Duration) Tally {
	window := a.Window()
	cut, soon, recent := now.Add(-window), now.Add(horizon-window), now.Add(-horizon)
	var t Tally
	for i := range a.shards {
		s := &a.shards[i]
		s.mu.Lock()
		for id, e := range s.seen {
			switch {
			case !e.at.After(cut):
				delete(s.seen, id)
			case !e.at.After(soon):
				t.Leaving++
			}
		}
		for id, e := range s.ended {
			switch {
			case !e.at.After(cut):
				delete(s.ended, id)
				continue
			case e.at.After(recent) && !e.at.After(now):
				t.Ended++
			}
			t.EndedInWindow++
		}
		t.Active += float64(len(s.seen))
		s.mu.Unlock()
	}
	return t
}

// Sketch is the sketch of the passes presented within the window at now,
// those ended within it included, for merging with other nodes' sketches:
// a pass ended here may still be among another node's active passes, and
// the room's count takes the ended ones out of the union (RoomTally).
func (a *ActiveSet) Sketch(now time.Time) *queue.Sketch {
	cut := now.Add(-a.Window())
	return a.sketch(cut, cut)
}

// StayingSketch is the sketch of the passes that do not leave the window
// within horizon at this node (presented within the window less horizon)
// and of those ended within the window: merged over the nodes, the passes
// in the room's Sketch and in none of these are the room's departures
// (RoomTally).
func (a *ActiveSet) StayingSketch(now time.Time, horizon time.Duration) *queue.Sketch {
	window := a.Window()
	return a.sketch(now.Add(horizon-window), now.Add(-window))
}

// sketch is the sketch of the passes presented after seenAfter and of
// those ended after endedAfter.
func (a *ActiveSet) sketch(seenAfter, endedAfter time.Time) *queue.Sketch {
	var sk queue.Sketch
	for i := range a.shards {
		s := &a.shards[i]
		s.mu.Lock()
		for _, e := range s.seen {
			if e.at.After(seenAfter) {
				sk.AddHash(e.hash)
			}
		}
		for _, e := range s.ended {
			if e.at.After(endedAfter) {
				sk.AddHash(e.hash)
			}
		}
		s.mu.Unlock()
	}
	return &sk
}

// RoomTally is a room's tally from its nodes': sum is their tallies
// summed, distinct the count of their sketches merged, staying the count
// of their staying sketches merged (NaN when a node published none), nodes
// how many sketches were merged. A pass presented to k nodes within the
// window is in k nodes' counts but once in the room: Active is the
// distinct count less the passes ended within the window (each is in the
// union, ended on one node, perhaps still active on another), never above
// the sum, which counts every pass at least once. A pass leaves each node
// it reached, and only the last of those departures is the room's:
// Leaving is the passes in the union that no node holds as staying, never
// above the summed departures (the room's last one is among them); without
// every node's staying sketch, the summed departures scaled by the
// distinct share, which counts a pass's departure from a node its visitor
// has not come back to, and overcounts when the window is short against
// how often a visitor reaches each node. A session is ended on the one
// node that answered: Ended is the sum. With one node the sum is exact and
// is the tally.
func RoomTally(sum Tally, distinct, staying float64, nodes int) Tally {
	if nodes <= 1 || sum.Active <= 0 || math.IsNaN(distinct) {
		return sum
	}
	active := clamp(distinct-sum.EndedInWindow, 0, sum.Active)
	leaving := sum.Leaving * active / sum.Active
	if !math.IsNaN(staying) {
		leaving = clamp(distinct-staying, 0, sum.Leaving)
	}
	return Tally{Active: active, Leaving: leaving, Ended: sum.Ended, EndedInWindow: sum.EndedInWindow}
}

// Count is the number of passes presented within the window at now.
func (a *ActiveSet) Count(now time.Time) float64 { return a.Tally(now, 0).Active }

// RenewPass is the pass a visitor still on the site carries on with in a
// room sized by capacity: pc with its expiry moved to ttl from now, once
// less than half of ttl is left (ok false before then, so a visitor's
// requests re-sign it about once a half ttl). The id stays, so the visitor
// counts once. A visitor who stops presenting it stops counting after the
// active window, and the pass expires as before.
func RenewPass(pc tokens.PassClaims, now time.Time, ttl time.Duration) (renewed tokens.PassClaims, ok bool) {
	if ttl <= 0 || pc.Expiry().Sub(now) >= ttl/2 {
		return pc, false
	}
	pc.ExpiresAt = now.Add(ttl).Unix()
	return pc, true
}

func clamp(x, lo, hi float64) float64 {
	return math.Max(lo, math.Min(hi, x))
}
