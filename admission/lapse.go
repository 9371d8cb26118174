package admission

import (
	"container/heap"
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
)

// A slot is kept for its holder until it is used or its holder is
// slotGrace late for the moment it was last told to come: then the node
// that told it marks the place lapsed in the ledger, if it still holds
// that slot unused (queue.Ledger.Lapse), and gives the slot's admission
// back to the room (Room.reissue). A visitor who walked away with a slot
// would otherwise cost the room that admission while others wait. A
// holder that comes back later (a background tab's timer fires late), at
// any node, takes a new admission and is served at the slot it held, on
// credit, as a late holder always was (Gate.reserve, Gate.useSlot): it
// loses its lateness and nothing else, and the room admits it once.
//
// slotGrace is far more than an honest page is late for its slot (its
// network's spread, a second, and its request's wait on the store at a
// crowd's peak), and short enough that the room has the admission back
// while the visitors behind the holder still wait.
const slotGrace = 4 * time.Second

// lapseBatch is the most lapses one attempt carries out (each is a ledger
// write): a crowd of them is spread over the attempts of the moment.
const lapseBatch = 4

// maxWatched bounds the slots a node watches: beyond it a slot given is
// kept until it expires, as if it were never watched.
const maxWatched = 1 << 17

// slotWatch is the slots this node told holders to come for, by the
// moment each lapses.
type slotWatch struct {
	mu     sync.Mutex
	places map[string]watched
	order  queue.DueHeap
	// next is when the earliest entry of order lapses (Unix ns;
	// math.MaxInt64 when none), read without mu: every attempt asks
	// whether anything is due, and almost always nothing is.
	next atomic.Int64
}

// heldSlot is a slot a place holds: when it is, the slot whose admission
// it took (charged, as queue.Place.Charged but never zero), and whether
// that admission is the shared quota's (else this node's bucket's).
type heldSlot struct {
	slot, charged time.Time
	shared        bool
}

// watched is a place's slot and when it lapses.
type watched struct {
	heldSlot
	lapses time.Time
}

func newSlotWatch() *slotWatch {
	w := &slotWatch{places: map[string]watched{}}
	w.next.Store(math.MaxInt64)
	return w
}

// noteNext sets next from order's earliest entry; under mu.
func (w *slotWatch) noteNext() {
	if len(w.order) == 0 {
		w.next.Store(math.MaxInt64)
		return
	}
	w.next.Store(w.order[0].At.UnixNano())
}

// watch records that place, holding held, was told to come at told: it
// lapses slotGrace after the latest moment it was told. Watched already
// at that slot, it keeps whose admission the slot took: the node that
// gave the slot knew.
func (w *slotWatch) watch(place string, held heldSlot, told time.Time) {
	lapses := told.Add(slotGrace)
	w.mu.Lock()
	defer w.mu.Unlock()
	cur, ok := w.places[place]
	switch {
	case ok && cur.slot.Equal(held.slot) && !cur.lapses.Before(lapses):
		return
	case ok && cur.slot.Equal(held.slot):
		held = cur.heldSlot
	case !ok && len(w.places) >= maxWatched:
		return
	}
	w.places[place] = watched{heldSlot: held, lapses: lapses}
	heap.Push(&w.order, queue.Due{ID: place, At: lapses})
	if len(w.order) > 2*len(w.places)+compactAt {
		w.compact()
	}
	w.noteNext()
}

// forget stops watching place: its slot was used.
func (w *slotWatch) forget(place string) {
	w.mu.Lock()
	delete(w.places, place)
	w.mu.Unlock()
}

// due takes up to n places whose slots lapsed by now off the watch.
func (w *slotWatch) due(now time.Time, n int) []lapsing {
	if now.UnixNano() < w.next.Load() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.noteNext()
	var out []lapsing
	for len(out) < n && len(w.order) > 0 && !w.order[0].At.After(now) {
		e := heap.Pop(&w.order).(queue.Due)
		cur, ok := w.places[e.ID]
		if !ok || !cur.lapses.Equal(e.At) {
			continue // forgotten, or told a later moment since
		}
		delete(w.places, e.ID)
		out = append(out, lapsing{place: e.ID, heldSlot: cur.heldSlot})
	}
	return out
}

// lapsing is a place whose slot lapsed.
type lapsing struct {
	place string
	heldSlot
}

// compactAt is how many stale entries (forgotten, or told again since)
// the heap may hold beyond twice the watched places before it is rebuilt.
const compactAt = 1024

func (w *slotWatch) compact() {
	order := make([]queue.Due, 0, len(w.places))
	for place, cur := range w.places {
		order = append(order, queue.Due{ID: place, At: cur.lapses})
	}
	w.order = queue.DueHeapOf(order)
}

// lapseSlots carries out the lapses due at now, at most lapseBatch, in
// the attempt that finds them due: whether that attempt's visitor stays
// for its answer is nothing to the lapse, which runs to its end (within
// the store's own deadline) and, when the store fails, is tried again a
// grace later. While the room is paused nobody can use a slot: a lapse
// due then waits until its holder, told to come after the pause, could
// have come (MaxBackoff after the moment, and the grace).
func (g *Gate) lapseSlots(ctx context.Context, room *Room, view *View, now time.Time) {
	due := room.slots.due(now, lapseBatch)
	if len(due) == 0 {
		return // nearly every attempt: detaching ctx would allocate for nothing
	}
	ctx = context.WithoutCancel(ctx)
	for _, l := range due {
		if view.State == StatePaused {
			room.slots.watch(l.place, l.heldSlot, now.Add(g.policy.MaxBackoff))
			continue
		}
		lapsed, err := g.ledger.Lapse(ctx, l.place, l.slot)
		switch {
		case err != nil:
			room.slots.watch(l.place, l.heldSlot, now)
		case lapsed:
			room.reissue(l.heldSlot, now)
		}
		// Not lapsed: used (here or at another node) or given another
		// slot; nothing to give back.
	}
}
