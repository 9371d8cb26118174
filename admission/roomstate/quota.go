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
// every node. A window lasts as long as the rate takes to grant the burst
// (at least a second), both as the lane joins its store (WindowFor); the
// length never changes after, so a slot given ahead stays counted in its
// window whatever the rate does (a fractional rate's limits alternate, so
// the windows add up to the rate).
type Quota struct {
	budget *Budget
	// local, when true, answers a store failure with no slot
	// (on_unavailable local): the node's own bucket gives it, and is then
	// the only cap.
	local bool

	mu   sync.Mutex
	rate float64
	// nowOnly gives no slot beyond the current window (SetNowOnly).
	nowOnly bool
}

// NewQuota returns a room's quota at the given target rate (admissions
// per second) and burst, reserving block admissions per store write.
func NewQuota(store Store, room string, block int64, rate, burst float64, local bool) (*Quota, error) {
	b, err := NewBudget(store, room, block, WindowFor(rate, burst))
	if err != nil {
		return nil, err
	}
	return &Quota{budget: b, local: local, rate: rate}, nil
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

// SetWindow sets the windows' length (WindowFor of the configured rate and
// burst). A new length starts a new budget, whose windows are other store
// items: what this node holds of the old one is forgotten, and slots given
// ahead in the old windows are not counted in the new ones. Nodes adopt a
// config's rate and burst within a poll of each other, so they change
// length together; the rate of the moment (a capacity room's, a lane's
// share of it) never changes the length (SetRate).
func (q *Quota) SetWindow(length time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if length == q.budget.length {
		return nil
	}
	b, err := NewBudget(q.budget.store, q.budget.room, q.budget.block, length)
	if err != nil {
		return err
	}
	q.budget = b
	return nil
}

// SetRate changes the target rate: the limits of windows from now on, at
// the window length set by NewQuota or SetWindow.
func (q *Quota) SetRate(rate float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.rate = rate
}

func (q *Quota) current() (*Budget, float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.budget, q.rate
}

// SetNowOnly makes the quota give slots only in the current window: when
// it is spent, Reserve answers *admission.QuotaSpentError until the next.
// A room whose rate falls fast (sized by capacity) needs it: a slot given
// ahead took its window's admission at the rate before a cut, and would
// go in after it.
func (q *Quota) SetNowOnly(on bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.nowOnly = on
}

// Reserve implements admission.Quota. With on_unavailable local, a store
// that cannot be reached gives no slot and takes nothing: the node's own
// bucket gives it, and is then the only cap.
func (q *Quota) Reserve(ctx context.Context, at, now time.Time) (time.Time, bool, error) {
	b, rate := q.current()
	q.mu.Lock()
	nowOnly := q.nowOnly
	q.mu.Unlock()
	slot, err := b.Reserve(ctx, at, now, rate)
	switch {
	case err == nil && nowOnly && b.index(slot) > b.index(later(at, now)):
		b.Refund(slot) // kept by this node for that window
		return time.Time{}, false, &admission.QuotaSpentError{Retry: b.start(b.index(later(at, now)) + 1)}
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
