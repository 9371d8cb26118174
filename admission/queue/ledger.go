package queue

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"
)

// ErrLedgerFull means the ledger holds as many unexpired places as it may.
// It fails closed: forgetting a live place could admit it twice.
var ErrLedgerFull = errors.New("place ledger is full")

// PlaceState is what the ledger knows of a place in line.
type PlaceState int

// Place states.
const (
	// PlaceWaiting: the ledger has no record; the place has not been admitted.
	PlaceWaiting PlaceState = iota
	// PlaceReserved: the place was eligible while the bucket was empty and
	// holds the admission slot Place.Slot.
	PlaceReserved
	// PlaceUsed: the place was admitted; no version of its token admits again.
	PlaceUsed
	// PlaceLapsed: the place held the slot Place.Slot and did not come
	// for it; its admission went to others. Coming back, it takes a new
	// one at that slot, on credit (Hold replaces the record).
	PlaceLapsed
)

// Place is the ledger's record of one place (a waiting token's id, the same
// in every version of the token).
type Place struct {
	State PlaceState
	Slot  time.Time // for PlaceReserved and PlaceLapsed
	// Charged is, for PlaceReserved, the slot whose admission of the
	// room's shared budget the place took, when not Slot: a late
	// presenter holds the earlier slot it would have had, charged to the
	// budget's next (admission.Gate.slot), and a refusal gives back that one's.
	// Zero when it is Slot.
	Charged time.Time
	// For PlaceUsed: which version of the token used the place (a digest
	// of it, admission's tokenDigest), the id of the pass it was given and when, so a
	// retry of that same token (its answer was lost: a write that timed
	// out but landed, a node that died before it answered) gets the same
	// pass, while any other version still finds the place used. Empty in
	// records written before they were kept.
	By   string
	Pass string
	At   time.Time
}

// Ledger remembers the places that were admitted or hold an admission slot,
// so each place admits once whatever version of its token is presented. A
// record must live at least as long as any version of the place's token can
// be valid. Implementations may be shared by nodes (see the room-state store).
type Ledger interface {
	// Lookup returns the record of place id (PlaceWaiting if there is none).
	Lookup(ctx context.Context, id string) (Place, error)
	// Hold records p for place id until the given time, unless the place
	// already has a record other than a lapsed one: it returns the record
	// that stands and whether it is p.
	Hold(ctx context.Context, id string, p Place, until time.Time) (Place, bool, error)
	// Use turns a reserved place into used (the record used, whose By,
	// Pass and At it keeps), reporting false if it was not reserved
	// (already used, or released).
	Use(ctx context.Context, id string, used Place) (bool, error)
	// Release forgets a place whose admission did not go through (the
	// admission hook turned it away), so it may wait and try again.
	Release(ctx context.Context, id string) error
	// Lapse turns a place that still holds the reserved slot slot unused
	// (its holder did not come for it) into lapsed, keeping the slot and
	// the record's expiry, reporting whether it did: false when the place
	// was used meanwhile, or holds another slot.
	Lapse(ctx context.Context, id string, slot time.Time) (bool, error)
}

// MemoryLedger is a bounded Ledger in process memory for one node. Records
// are forgotten once their time is up; never earlier.
type MemoryLedger struct {
	mu       sync.Mutex
	capacity int
	now      func() time.Time
	places   map[string]record
	order    DueHeap
}

type record struct {
	place Place
	until time.Time
}

// NewMemoryLedger returns a ledger of at most capacity live places. now is
// the clock used to forget expired records.
func NewMemoryLedger(capacity int, now func() time.Time) *MemoryLedger {
	return &MemoryLedger{capacity: capacity, now: now, places: make(map[string]record)}
}

// Lookup implements Ledger.
func (l *MemoryLedger) Lookup(_ context.Context, id string) (Place, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.places[id].place, nil
}

// Hold implements Ledger.
func (l *MemoryLedger) Hold(_ context.Context, id string, p Place, until time.Time) (Place, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.places[id]
	switch {
	case ok && r.place.State != PlaceLapsed:
		return r.place, false, nil
	case ok: // the lapsed record is replaced: no room taken
		l.places[id] = record{place: p, until: until}
		heap.Push(&l.order, Due{ID: id, At: until})
		return p, true, nil
	}
	l.forgetExpired(l.now())
	if len(l.order) > 2*len(l.places)+compactSlack {
		l.compact()
	}
	if len(l.places) >= l.capacity {
		return Place{}, false, ErrLedgerFull
	}
	l.places[id] = record{place: p, until: until}
	heap.Push(&l.order, Due{ID: id, At: until})
	return p, true, nil
}

// Use implements Ledger.
func (l *MemoryLedger) Use(_ context.Context, id string, used Place) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.places[id]
	if !ok || r.place.State != PlaceReserved {
		return false, nil
	}
	used.State, used.Slot, used.Charged = PlaceUsed, time.Time{}, time.Time{}
	r.place = used
	l.places[id] = r
	return true, nil
}

// Release implements Ledger. The heap entry stays until it expires or
// the heap is compacted; forgetExpired skips it because the map no longer
// holds that record.
func (l *MemoryLedger) Release(_ context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.places, id)
	return nil
}

// Lapse implements Ledger.
func (l *MemoryLedger) Lapse(_ context.Context, id string, slot time.Time) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.places[id]
	if !ok || r.place.State != PlaceReserved || !r.place.Slot.Equal(slot) {
		return false, nil
	}
	r.place = Place{State: PlaceLapsed, Slot: slot}
	l.places[id] = r
	return true, nil
}

// Len is the number of places remembered.
func (l *MemoryLedger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.places)
}

func (l *MemoryLedger) forgetExpired(now time.Time) {
	for len(l.order) > 0 && l.order[0].At.Before(now) {
		e := heap.Pop(&l.order).(Due)
		if r, ok := l.places[e.ID]; ok && r.until.Equal(e.At) {
			delete(l.places, e.ID)
		}
	}
}

// compactSlack is how many released records' heap entries may outnumber
// the live ones twice over before the heap is rebuilt: a visitor the
// admission hook turns away over and over releases a record each time, and
// without a rebuild the heap would grow with their requests, past capacity.
const compactSlack = 1024

// compact rebuilds the expiry heap from the live records.
func (l *MemoryLedger) compact() {
	order := make([]Due, 0, len(l.places))
	for id, r := range l.places {
		order = append(order, Due{ID: id, At: r.until})
	}
	l.order = DueHeapOf(order)
}

// SetCapacity changes how many live ids the ledger may hold. Below the
// number it holds now, admissions fail closed until enough ids expire.
func (l *MemoryLedger) SetCapacity(capacity int) {
	l.mu.Lock()
	l.capacity = capacity
	l.mu.Unlock()
}
