package queue

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// LateMemory is the most lateness a room makes up for a place that
// presents late: a background tab whose timers fire once a minute, with
// room to spare. A place found eligible at a checkpoint it presented late
// for takes the slot it would have had (Bucket.ReserveFor; later than this,
// as if found LateMemory ago, at worst as if found now), from a node's
// own bucket or from the shared quota (Grants.Take). Each costs a room 16
// bytes per admission of that span.
const LateMemory = 5 * time.Minute

// Grants are the slots a node's places took from a room's shared quota,
// kept for LateMemory: a place that presents late for the moment it was
// found eligible takes the slot of the first one given since, as
// Bucket.ReserveFor does for the slots of a node's own bucket. It is safe
// for concurrent use.
type Grants struct {
	mu sync.Mutex
	g  grants
}

// NewGrants returns an empty record of a room's shared slots.
func NewGrants() *Grants { return &Grants{g: grants{memory: LateMemory}} }

// Take records slot, given at now by the shared quota for a place found
// eligible at found, and returns when the place is due: the slot of the
// first one given since found, when that is earlier (it may have passed:
// due at once), or slot. The admission it took is still the quota's next,
// so every later slot moves back one, as it would have had it been asked
// in time. Asking late never gains: the slot is the one asked at found
// would have had, or later. backdated reports that due, or now if later,
// is before slot. found is now for a place not late.
func (s *Grants) Take(found, slot, now time.Time) (due time.Time, backdated bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.g.take(found, slot, now)
}

// grants remembers, for memory, the slots handed out in the order given:
// a place that presents late for the moment it was found eligible takes
// the slot of the first one given since (Bucket.ReserveFor, Grants.Take).
// Each costs 16 bytes.
type grants struct {
	memory time.Duration
	given  []grant // given[head:] are kept, oldest first
	head   int
}

// grant is one slot handed out: when, and the slot, in Unix nanoseconds.
type grant struct{ at, slot int64 }

// take records slot, given at now, and returns the slot of the first one
// given since found when that is earlier, or slot; backdated reports that
// due, or now if later, is before slot.
func (g *grants) take(found, slot, now time.Time) (due time.Time, backdated bool) {
	g.forget(now)
	due = slot
	if found.Before(now) {
		if s, ok := g.since(found, slot); ok {
			due = s
		}
	}
	g.add(now, slot)
	return due, later(due, now).Before(slot)
}

// add records a slot given at now.
func (g *grants) add(now, slot time.Time) {
	g.given = append(g.given, grant{at: now.UnixNano(), slot: slot.UnixNano()})
}

// forget drops the slots given longer than memory ago.
func (g *grants) forget(now time.Time) {
	cut := now.Add(-g.memory).UnixNano()
	for g.head < len(g.given) && g.given[g.head].at < cut {
		g.head++
	}
	if g.head > len(g.given)/2 { // compacted when half is dropped: amortised O(1)
		g.given = append(g.given[:0], g.given[g.head:]...)
		g.head = 0
	}
}

// first is the index in the kept grants of the first given at or after t.
func (g *grants) first(t time.Time) int {
	i, _ := slices.BinarySearchFunc(g.given[g.head:], t.UnixNano(), func(x grant, at int64) int { return cmp.Compare(x.at, at) })
	return i
}

// since is the slot of the first grant given at or after found, when it is
// before slot: the one a place found eligible at found would have had.
func (g *grants) since(found, slot time.Time) (time.Time, bool) {
	kept := g.given[g.head:]
	if i := g.first(found); i < len(kept) && kept[i].slot < slot.UnixNano() {
		return time.Unix(0, kept[i].slot), true
	}
	return time.Time{}, false
}

// countSince is how many kept grants were given at or after t.
func (g *grants) countSince(t time.Time) int { return len(g.given) - g.head - g.first(t) }

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
