package admission

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"
)

// ErrLedgerFull means the ledger holds as many unexpired ids as it may. It
// fails closed: forgetting a live id could admit its token twice.
var ErrLedgerFull = errors.New("used-token ledger is full")

// Ledger remembers which waiting tokens were used, so each admits once.
type Ledger interface {
	// Used reports whether id was consumed.
	Used(ctx context.Context, id string) (bool, error)
	// Consume marks id used until the given time, reporting false if it
	// already was.
	Consume(ctx context.Context, id string, until time.Time) (bool, error)
	// Release forgets a consumed id whose admission did not go through
	// (the admission hook turned it away), so the token may try again.
	Release(ctx context.Context, id string) error
}

// MemoryLedger is a bounded Ledger in process memory for one node. Ids are
// forgotten once their tokens expire; it never forgets one earlier.
type MemoryLedger struct {
	mu       sync.Mutex
	capacity int
	now      func() time.Time
	until    map[string]time.Time
	order    expiryHeap
}

// NewMemoryLedger returns a ledger of at most capacity live ids. now is the
// clock used to forget expired ids.
func NewMemoryLedger(capacity int, now func() time.Time) *MemoryLedger {
	return &MemoryLedger{capacity: capacity, now: now, until: make(map[string]time.Time)}
}

// Used implements Ledger.
func (l *MemoryLedger) Used(_ context.Context, id string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.until[id]
	return ok, nil
}

// Consume implements Ledger.
func (l *MemoryLedger) Consume(_ context.Context, id string, until time.Time) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.until[id]; ok {
		return false, nil
	}
	l.forgetExpired(l.now())
	if len(l.until) >= l.capacity {
		return false, ErrLedgerFull
	}
	l.until[id] = until
	heap.Push(&l.order, expiring{id: id, until: until})
	return true, nil
}

// Release implements Ledger. The heap entry stays until it expires; Consume
// skips the stale entry because the map no longer names it.
func (l *MemoryLedger) Release(_ context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.until, id)
	return nil
}

// Len is the number of ids remembered.
func (l *MemoryLedger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.until)
}

func (l *MemoryLedger) forgetExpired(now time.Time) {
	for len(l.order) > 0 && l.order[0].until.Before(now) {
		e := heap.Pop(&l.order).(expiring)
		if l.until[e.id].Equal(e.until) {
			delete(l.until, e.id)
		}
	}
}

type expiring struct {
	id    string
	until time.Time
}

type expiryHeap []expiring

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].until.Before(h[j].until) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiring)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// SetCapacity changes how many live ids the ledger may hold. Below the
// number it holds now, admissions fail closed until enough ids expire.
func (l *MemoryLedger) SetCapacity(capacity int) {
	l.mu.Lock()
	l.capacity = capacity
	l.mu.Unlock()
}
