package room

import (
	"fmt"
	"math"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/roomstate"
)

// lanes are the room's lanes, the default one first.
func (sh *Shared) lanes() []*lane { return *sh.lanesNow.Load() }

// LaneRoom is the room judging the named lane; an unknown lane (removed by
// a reload) falls back to the default one, whose room refuses the lane's
// tokens.
func (sh *Shared) LaneRoom(name string) *admission.Room {
	for _, l := range sh.lanes() {
		if l.name == name {
			return l.room
		}
	}
	return sh.Room
}

// CountAdmitted counts one admission in the named lane.
func (sh *Shared) CountAdmitted(name string) {
	for _, l := range sh.lanes() {
		if l.name == name {
			l.admitted.Add(1)
			return
		}
	}
}

// eachRoom applies change to every lane's room, stopping at the first error.
func (sh *Shared) eachRoom(change func(*admission.Room) error) error {
	for _, l := range sh.lanes() {
		if err := change(l.room); err != nil {
			if l.name != "" {
				return fmt.Errorf("lane %s: %w", l.name, err)
			}
			return err
		}
	}
	return nil
}

// rebalance splits the room's rate and burst between its lanes by
// admission.LaneRates: the lanes with visitors, here or (on a state
// store) at any node, share the whole rate. Every node so splits it
// alike: each lane's shared budget caps the lane at the rate the asking
// node gives it, and a node that gave an idle lane's share to the others
// would let the room admit more than its rate. Unless force, a lane whose
// rate stays is left alone. Callers hold sh.mu.
func (sh *Shared) rebalance(now time.Time, force bool) error {
	if err := sh.sizeBudgets(); err != nil {
		return err
	}
	lanes := sh.lanes()
	shares := make([]float64, len(lanes))
	active := make([]bool, len(lanes))
	for i, l := range lanes {
		shares[i], active[i] = l.share, l.room.Active(now) || l.roomActive.Load()
	}
	total, totalBurst := sh.rateInForce()
	rates := admission.LaneRates(total, shares, active)
	from := sh.budgetFrom()
	for i, l := range lanes {
		burst := math.Max(1, totalBurst*rates[i]/total)
		if l.quota != nil {
			// Each lane's shared budget gives its slots at the lane's
			// rate across every node; the capacity controller's rate
			// from the moment every node has it.
			l.quota.SetRateFrom(rates[i], from)
		}
		if !force && l.room.View(now).Rate == rates[i] {
			continue
		}
		if err := l.room.SetRate(rates[i], burst, now); err != nil {
			return fmt.Errorf("lane %q: %w", l.name, err)
		}
		if sh.cluster != nil && sh.cluster.share != 1 {
			// This node's bucket runs at its share of the lane's rate.
			share := sh.cluster.share
			l.room.SetBucketRate(rates[i]*share, burst*share, now)
		}
	}
	return nil
}

// budgetFrom is when the rate in force starts to size the lanes' shared
// budget windows: admitFrom, once the room has joined its stored state.
// Until then the rate this node has is its own, steered from a tally of
// no visitors yet (about the ceiling), which no other node sizes any
// window by: the first rate it adopts sizes the windows before admitFrom
// too. Callers hold sh.mu.
func (sh *Shared) budgetFrom() time.Time {
	if sh.cluster != nil && !sh.cluster.joined.Load() {
		return time.Time{}
	}
	return sh.admitFrom
}

// TotalRate is the room's rate and burst in force, all lanes together
// (with a capacity, the capacity controller's).
func (sh *Shared) TotalRate() (rate, burst float64) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.rateInForce()
}

// setCapacity sizes the room by capacity (0: by its rate).
func (sh *Shared) setCapacity(capacity float64, now time.Time) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.setCapacityLocked(capacity)
	sh.steerLocked(now, time.Time{})
	return sh.rebalance(now, true)
}

// setRate changes the room's rate (its burst then defaults to one second's
// rate) and burst, and splits them between the lanes.
func (sh *Shared) setRate(rate, burst *float64, now time.Time) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if rate != nil {
		sh.rate, sh.burst = *rate, math.Max(1, *rate)
	}
	if burst != nil {
		sh.burst = math.Max(1, *burst)
	}
	return sh.rebalance(now, true)
}

// LaneStatus is one lane's live figures in the admin API.
type LaneStatus struct {
	// Lane is the lane's name, empty for the default lane.
	Lane string `json:"lane"`
	// Share is the configured share; Rate the admissions per second the
	// lane gets now (more than its share while other lanes are empty).
	Share    float64 `json:"share"`
	Rate     float64 `json:"rate"`
	Waiting  float64 `json:"waiting"`
	Admitted int64   `json:"admitted"`
	// EstimateSeconds is the lane's public wait estimate, absent when unknown.
	EstimateSeconds *float64 `json:"estimate_seconds,omitempty"`
}

func (sh *Shared) laneStatus(now time.Time) []LaneStatus {
	var out []LaneStatus
	for _, l := range sh.lanes() {
		v := l.room.View(now)
		st := LaneStatus{Lane: l.name, Share: l.share, Rate: v.Rate, Waiting: l.room.Population(now), Admitted: l.admitted.Load()}
		if est, ok := v.EstimateWait(now); ok {
			secs := math.Round(est.Seconds())
			st.EstimateSeconds = &secs
		}
		out = append(out, st)
	}
	return out
}

// EachLane calls f with each lane's name ("" for the default lane) and
// room, the default lane first.
func (sh *Shared) EachLane(f func(name string, r *admission.Room)) {
	for _, l := range sh.lanes() {
		f(l.name, l.room)
	}
}

// SlotsLapsed is how many slots this node lapsed in the room, every
// lane's, those of lanes since removed included: it never goes down.
func (sh *Shared) SlotsLapsed() int64 {
	n := sh.lapsedGone.Load()
	for _, l := range sh.lanes() {
		n += l.room.SlotsLapsed()
	}
	return n
}

// laneKey is where a lane's per-node observations are published.
func laneKey(room, lane, what string) string {
	if lane == "" {
		return room + "#" + what
	}
	return room + "~" + lane + "#" + what
}

// rankBlock is the most arrival ranks a node reserves from the shared
// counter in one store write; rankAge how long it keeps a block before it
// drops the rest (roomstate.Ranks): arrivals at different nodes are ranked
// out of order only when less than rankAge apart, far below any luck
// window, and a node that crashes or ages a block leaves at most rankBlock
// ranks unclaimed (docs/SCALING.md, "Arrival ranks").
const (
	rankBlock = 64
	rankAge   = time.Second
)

// sizeBudgets sets each lane's budget windows from the configured rate
// and burst and the lane's share of them, not from the rate of the moment
// (a capacity room's derived rate may fall near zero, which would make
// them as long as an hour, and changes every tick): every node sizes them
// alike from the config the room's nodes share. It runs with every
// rebalance, so every change of rate or burst (config, admin API, a stored
// config adopted) sizes them. Callers hold sh.mu.
func (sh *Shared) sizeBudgets() error {
	for _, l := range sh.lanes() {
		if l.quota == nil {
			continue
		}
		if err := l.quota.SetWindow(roomstate.WindowFor(sh.rate*l.share, math.Max(1, sh.burst*l.share))); err != nil {
			return fmt.Errorf("lane %q: %w", l.name, err)
		}
		// A capacity room's rate falls as the site fills: a slot given
		// ahead would take its admission at the rate before the cut.
		l.quota.SetNowOnly(sh.capacity > 0)
	}
	return nil
}

// attachLane links a lane's room to the store: the shared budget, and in a
// fifo room the shared rank counter.
func (sh *Shared) attachLane(l *lane) error {
	cl := sh.cluster
	if l.quota == nil {
		// The default lane's budget is the room's own key.
		key := cl.key
		if l.name != "" {
			key = laneKey(cl.key, l.name, "budget")
		}
		q, err := roomstate.NewQuota(cl.store, key, cl.set.BudgetBlock, sh.rate*l.share, math.Max(1, sh.burst*l.share), cl.set.OnUnavailable == OnUnavailableLocal)
		if err != nil {
			return fmt.Errorf("lane %q: %w", l.name, err)
		}
		q.SetRate(l.room.View(sh.now()).Rate)
		l.quota = q
	}
	l.room.SetQuota(l.quota)
	if sh.Room.View(sh.now()).Order != admission.OrderFIFO {
		return nil
	}
	ranks, err := roomstate.NewRanks(cl.store, laneKey(cl.key, l.name, "ranks"), rankBlock)
	if err != nil {
		return err
	}
	l.room.SetRanker(ranks.MaxAge(rankAge, sh.clock))
	return nil
}
