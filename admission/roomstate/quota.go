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

	mu    sync.Mutex
	rates schedule
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
	return &Quota{budget: b, local: local, rates: steady(rate)}, nil
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
func (q *Quota) SetRate(rate float64) { q.SetRateFrom(rate, time.Time{}) }

// SetRateFrom changes the target rate of the windows starting at or after
// from; earlier windows keep the rates they had. Every node checks a
// window's use against the limit its own rate gives, so a rate that
// changes at one node before another lets the window admit up to the
// higher of the two: a change that every node learns before from (the
// capacity controller's, stored a poll or more ahead) sets every window's
// limit alike at every node.
func (q *Quota) SetRateFrom(rate float64, from time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.rates = q.rates.with(rate, from).since(q.budget.inUse())
}

func (q *Quota) current() (*Budget, schedule) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.budget, q.rates
}

// schedule is a target rate over time: each step's rate holds for the
// windows starting at or after its from, until the next step's.
type schedule []rateStep

type rateStep struct {
	from time.Time
	rate float64
}

// scheduleSteps is the most changes a schedule remembers: one a tick for
// longer than the longest window (WindowFor) and the polls ahead a change
// is stored for, so only a budget no slot was taken from for an hour
// loses one a window in use still needs.
const scheduleSteps = 4096

func steady(rate float64) schedule { return schedule{{rate: rate}} }

// with is the schedule whose rate changes to rate from from on: the steps
// at or after from are replaced.
func (s schedule) with(rate float64, from time.Time) schedule {
	keep := s[:0:0]
	for _, st := range s {
		if st.from.Before(from) {
			keep = append(keep, st)
		}
	}
	keep = append(keep, rateStep{from: from, rate: rate})
	if n := len(keep); n > scheduleSteps {
		keep = keep[n-scheduleSteps:]
	}
	return keep
}

// since is the schedule without the steps no window starting at or after
// t is sized by: the windows before t are over.
func (s schedule) since(t time.Time) schedule {
	i := 0
	for i+1 < len(s) && !s[i+1].from.After(t) {
		i++
	}
	return s[i:]
}

// at is the target rate of a window starting at start.
func (s schedule) at(start time.Time) float64 {
	rate := s[0].rate
	for _, st := range s[1:] {
		if start.Before(st.from) {
			break
		}
		rate = st.rate
	}
	return rate
}

// SetNowOnly makes the quota give slots only in the current window: when
// it is spent, Reserve answers *admission.QuotaSpentError until the next,
// and takes nothing of the next. A room whose rate falls fast (sized by
// capacity) needs it: a slot given ahead took its window's admission at
// the rate before a cut, and would go in after it.
func (q *Quota) SetNowOnly(on bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.nowOnly = on
}

// Reserve implements admission.Quota. With on_unavailable local, a store
// that cannot be reached gives no slot and takes nothing: the node's own
// bucket gives it, and is then the only cap.
func (q *Quota) Reserve(ctx context.Context, at, now time.Time) (time.Time, bool, error) {
	b, rates := q.current()
	q.mu.Lock()
	nowOnly := q.nowOnly
	q.mu.Unlock()
	var slot time.Time
	var err error
	if nowOnly {
		slot, err = reserveNow(ctx, b, rates, at, now)
	} else {
		slot, err = b.Reserve(ctx, at, now, rates.at)
	}
	var spent *admission.QuotaSpentError
	switch {
	case err == nil:
		return slot, true, nil
	case q.local && !errors.Is(err, errBudgetSpent) && !errors.As(err, &spent):
		return time.Time{}, false, nil
	}
	return time.Time{}, false, err
}

// reserveNow takes an admission of the window holding at (never before
// now), and of no later one: one taken ahead when that window is spent
// would be taken at the rate of the moment, and given in its window
// whatever the rate is then.
func reserveNow(ctx context.Context, b *Budget, rates schedule, at, now time.Time) (time.Time, error) {
	due := later(at, now)
	idx := b.index(due)
	ok, err := b.takeIn(ctx, due, now, rates.at(b.start(idx)))
	switch {
	case err != nil:
		return time.Time{}, err
	case !ok:
		return time.Time{}, &admission.QuotaSpentError{Retry: b.start(idx + 1)}
	}
	return due, nil
}

// Refund implements admission.Quota.
func (q *Quota) Refund(slot time.Time) {
	b, _ := q.current()
	b.Refund(slot)
}

// Lapse implements admission.Quota.
func (q *Quota) Lapse(_, now time.Time) {
	b, _ := q.current()
	b.Lapse(now)
}

// Return gives the unspent rest of this node's blocks back to the store.
func (q *Quota) Return(ctx context.Context) error {
	b, rates := q.current()
	return b.returnHeld(ctx, rates.at)
}

var _ admission.Quota = (*Quota)(nil)
