package roomstate

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/fairgate/fairgate/admission"
)

// Quota is admission.Quota on a room's shared Budget: at most the room's
// target rate times the window's length is admitted in a window across
// every node. The window is a second long, or as long as it takes the rate
// to grant one admission when it is below one a second.
type Quota struct {
	store Store
	room  string
	block int64
	// local, when true, answers a store failure with an admission
	// (on_unavailable local): the node's own bucket is then the only cap.
	local bool

	mu     sync.Mutex
	rate   float64
	budget *Budget
}

// NewQuota returns a room's quota at the given target rate (admissions
// per second), reserving block admissions per store write.
func NewQuota(store Store, room string, block int64, rate float64, local bool) (*Quota, error) {
	q := &Quota{store: store, room: room, block: block, local: local}
	if err := q.SetRate(rate); err != nil {
		return nil, err
	}
	return q, nil
}

// WindowFor is the budget window length for a rate: a second, or the time
// one admission takes when the rate is below one a second.
func WindowFor(rate float64) time.Duration {
	if rate >= 1 || rate <= 0 {
		return time.Second
	}
	return time.Duration(math.Ceil(1/rate)) * time.Second
}

// SetRate changes the target rate. A change of window length starts a new
// budget: what this node held of the old one is forgotten.
func (q *Quota) SetRate(rate float64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.budget != nil && WindowFor(rate) == q.budget.length {
		q.rate = rate
		return nil
	}
	b, err := NewBudget(q.store, q.room, q.block, WindowFor(rate))
	if err != nil {
		return err
	}
	q.rate, q.budget = rate, b
	return nil
}

func (q *Quota) current() (*Budget, float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.budget, q.rate
}

// Take implements admission.Quota.
func (q *Quota) Take(ctx context.Context, now time.Time) (bool, time.Time, error) {
	b, rate := q.current()
	ok, err := b.Take(ctx, now, rate)
	if err != nil {
		if q.local {
			return true, time.Time{}, nil
		}
		return false, time.Time{}, err
	}
	w := b.WindowAt(now, rate)
	return ok, time.Unix(0, (w.Index+1)*int64(b.length)), nil
}

// Refund implements admission.Quota.
func (q *Quota) Refund(at time.Time) {
	b, _ := q.current()
	b.Refund(at)
}

// Return gives the unspent rest of this node's block back to the store.
func (q *Quota) Return(ctx context.Context) error {
	b, _ := q.current()
	return b.Return(ctx)
}

var _ admission.Quota = (*Quota)(nil)
