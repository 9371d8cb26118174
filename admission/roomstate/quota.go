package roomstate

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/fairgate/fairgate/admission"
)

// Quota is admission.Quota on a lane's shared Budget: at most the lane's
// target rate times the window's length is admitted in a window across
// every node. A window lasts as long as the rate takes to refill the burst
// (at least a second, and long enough to grant one admission), so a burst
// the bucket allows is not cut short by the cap, and over any longer span
// the cluster admits the rate.
type Quota struct {
	store Store
	room  string
	block int64
	// local, when true, answers a store failure with no slot
	// (on_unavailable local): the node's own bucket gives it, and is then
	// the only cap.
	local bool

	mu     sync.Mutex
	rate   float64
	budget *Budget
}

// NewQuota returns a room's quota at the given target rate (admissions
// per second) and burst, reserving block admissions per store write.
func NewQuota(store Store, room string, block int64, rate, burst float64, local bool) (*Quota, error) {
	q := &Quota{store: store, room: room, block: block, local: local}
	if err := q.SetRate(rate, burst); err != nil {
		return nil, err
	}
	return q, nil
}

// WindowFor is the budget window length for a rate and burst: the time the
// rate takes to grant the burst (at least one admission), in whole
// seconds, at least one.
func WindowFor(rate, burst float64) time.Duration {
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return time.Second
	}
	secs := math.Ceil(math.Max(1, burst) / rate)
	return time.Duration(math.Min(math.Max(secs, 1), 3600)) * time.Second
}

// SetRate changes the target rate and burst. A change of window length
// starts a new budget: what this node held of the old one is forgotten.
func (q *Quota) SetRate(rate, burst float64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	length := WindowFor(rate, burst)
	if q.budget != nil && length == q.budget.length {
		q.rate = rate
		return nil
	}
	b, err := NewBudget(q.store, q.room, q.block, length)
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

// Reserve implements admission.Quota. With on_unavailable local, a store
// that cannot be reached gives no slot and takes nothing: the node's own
// bucket gives it, and is then the only cap.
func (q *Quota) Reserve(ctx context.Context, at, now time.Time) (time.Time, bool, error) {
	b, rate := q.current()
	slot, err := b.Reserve(ctx, at, now, rate)
	switch {
	case err == nil:
		return slot, true, nil
	case q.local && !errors.Is(err, ErrBudgetSpent):
		return time.Time{}, false, nil
	}
	return time.Time{}, false, err
}

// Refund implements admission.Quota.
func (q *Quota) Refund(slot time.Time) {
	b, _ := q.current()
	b.Refund(slot)
}

// Return gives the unspent rest of this node's blocks back to the store.
func (q *Quota) Return(ctx context.Context) error {
	b, rate := q.current()
	return b.Return(ctx, rate)
}

var _ admission.Quota = (*Quota)(nil)
