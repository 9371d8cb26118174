package admission

import (
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"

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
// visitors on the site and the capacity: ten ticks, far longer than the
// two seconds a count takes to reach the controller across nodes, so the
// loop settles without overshooting.
const DefaultCapacitySettle = 10 * time.Second

// CapacityLookahead is the span whose departures the controller admits for
// ahead: two ticks, as long as a count takes to reach every node's bucket
// across a cluster (a node's publication, then the poll of the rate).
const CapacityLookahead = 2 * time.Second

// CapacityController sets a room's admission rate from the visitors on the
// site. A pass stops counting a window after it was last presented, so the
// departures of the next moments are known now: the passes whose window
// ends within CapacityLookahead (ActiveSet.Tally). The controller admits
// those departures as they happen, plus the gap to the capacity spread over
// Settle; never faster than Ceiling. Recomputed every tick, it closes a gap
// by 1/Settle of it a second, and it admits for a departure only once it is
// due, so a cohort admitted together and leaving together is replaced as it
// leaves, not ahead of it. It is pure: every input is an argument.
type CapacityController struct {
	// Capacity is the number of visitors the site holds at once.
	Capacity float64
	// Ceiling is the most admissions per second, whatever the gap.
	Ceiling float64
	// Settle is how soon a gap is closed; DefaultCapacitySettle when zero.
	Settle time.Duration
}

// Rate is the admissions per second that keep the active visitors at the
// capacity, given how many of them leave within CapacityLookahead: between
// MinCapacityRate and Ceiling.
func (c CapacityController) Rate(active, leaving float64) float64 {
	settle := c.Settle
	if settle <= 0 {
		settle = DefaultCapacitySettle
	}
	want := math.Max(0, leaving)/CapacityLookahead.Seconds() + (c.Capacity-active)/settle.Seconds()
	ceiling := c.Ceiling
	if ceiling < MinCapacityRate || math.IsNaN(ceiling) {
		ceiling = MinCapacityRate
	}
	if math.IsNaN(want) {
		return MinCapacityRate
	}
	return clamp(want, MinCapacityRate, ceiling)
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
	seen  map[string]time.Time
	ended map[string]time.Time
}

// NewActiveSet returns a set counting passes presented within window (at
// least a second).
func NewActiveSet(window time.Duration) *ActiveSet {
	a := &ActiveSet{seed: maphash.MakeSeed()}
	a.SetWindow(window)
	for i := range a.shards {
		a.shards[i].seen = map[string]time.Time{}
		a.shards[i].ended = map[string]time.Time{}
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
	if last, ok := s.seen[id]; ok && last.After(now) {
		return // an older request finishing late
	}
	s.seen[id] = now
}

// End stops counting pass id at once: its visitor left (the origin ended
// the session). It reports whether the pass was counted.
func (a *ActiveSet) End(id string, now time.Time) bool {
	s := a.shard(id)
	s.mu.Lock()
	_, ok := s.seen[id]
	delete(s.seen, id)
	s.ended[id] = now
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
}

// Tally sweeps the passes not presented within the window and counts the
// rest, and those of them whose window ends within horizon.
func (a *ActiveSet) Tally(now time.Time, horizon time.Duration) Tally {
	window := a.Window()
	cut, soon := now.Add(-window), now.Add(horizon-window)
	var t Tally
	for i := range a.shards {
		s := &a.shards[i]
		s.mu.Lock()
		for id, last := range s.seen {
			switch {
			case !last.After(cut):
				delete(s.seen, id)
			case !last.After(soon):
				t.Leaving++
			}
		}
		for id, at := range s.ended {
			if !at.After(cut) {
				delete(s.ended, id)
			}
		}
		t.Active += float64(len(s.seen))
		s.mu.Unlock()
	}
	return t
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
