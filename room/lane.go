package room

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/roomstate"
)

// lane is one lane of a room: the default lane (name "") or a priority
// lane. Each is an admission.Room of its own, with its own clock, bucket and
// population, so the protocol runs unchanged and fairly inside each lane;
// only the rate is split (docs/FAIRNESS.md, "Lanes").
type lane struct {
	name  string
	share float64
	room  *admission.Room
	// quota is the lane's shared budget on a state store: it gives the
	// lane's slots at every node (nil without a store).
	quota    *roomstate.Quota
	admitted atomic.Int64
	// roomActive is whether the lane had visitors at any node at the
	// last cluster tick (always false without a store).
	roomActive atomic.Bool
	// holding is whether this node last published places holding the
	// lane's fifo counter at the pre-queue's end (Shared.sharePassed).
	holding atomic.Bool
}

// laneShares are the shares of the default lane and then of each rule.
func laneShares(rules []laneRule) []float64 {
	shares := []float64{1}
	for _, r := range rules {
		shares[0] -= r.share
		shares = append(shares, r.share)
	}
	return shares
}

// newLanes builds the lanes of s, reusing the rooms of prev whose lane
// still exists so a reload keeps every waiting place in a kept lane.
func newLanes(s Settings, prev []*lane, now time.Time) ([]*lane, error) {
	shares := laneShares(s.lanes)
	names := []string{""}
	for _, r := range s.lanes {
		names = append(names, r.name)
	}
	out := make([]*lane, len(names))
	for i, name := range names {
		if j := slices.IndexFunc(prev, func(l *lane) bool { return l.name == name }); j >= 0 {
			out[i] = &lane{name: name, share: shares[i], room: prev[j].room, quota: prev[j].quota}
			out[i].admitted.Store(prev[j].admitted.Load())
			out[i].roomActive.Store(prev[j].roomActive.Load())
			continue
		}
		cfg := s.roomConfig()
		cfg.Lane = name
		cfg.Rate, cfg.Burst = s.Rate*shares[i], math.Max(1, s.Burst*shares[i])
		room, err := admission.NewRoom(cfg, now)
		if err != nil {
			return nil, fmt.Errorf("lane %s: %w", name, err)
		}
		out[i] = &lane{name: name, share: shares[i], room: room}
	}
	return out, nil
}
