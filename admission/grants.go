package admission

import (
	"cmp"
	"slices"
	"time"
)

// grants remembers, for memory, the slots handed out in the order given:
// a place that presents late for the moment it was found eligible takes
// the slot of the first one given since (bucket.reserveFor,
// Room.sharedSlot). Each costs 16 bytes.
type grants struct {
	memory time.Duration
	given  []grant // given[head:] are kept, oldest first
	head   int
}

// grant is one slot handed out: when, and the slot, in Unix nanoseconds.
type grant struct{ at, slot int64 }

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
