package gateway

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/fairgate/fairgate/room"
)

// TestClusterNodesReadTheLotteryClockAlike: a place is judged at a
// checkpoint on its node's reading of the clock there, so a login's tabs
// at two nodes are judged alike only if every node reads the clock alike
// at every moment, though each learns a tick only at its next poll. Three
// nodes polling at their own phases tick an adaptive lottery clock whose
// speed moves every second (places at every node, keys spread unevenly),
// through a scheduled start; at every 50 ms every node must read what the
// others read. (The start's ramp, which the last tick before the start
// sets, reaches every node before the start here: a node that polls it
// only after the start reads it late, docs/FAIRNESS.md, Known limits.)
func TestClusterNodesReadTheLotteryClockAlike(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			store := open(t)
			clock := newFakeClock()
			cfg := Config{Config: room.Config{Room: "sale", Rate: 10, Tau: Duration(time.Minute)}}
			nodes := newNodes(t, cfg, store, clock, 3)
			start := clock.Now().Add(5 * time.Second).Truncate(time.Second)
			if err := nodes[0].sh.Apply(room.RoomChange{State: ptr("scheduled"), SaleStart: ptr(start.Format(time.RFC3339))}, clock.Now()); err != nil {
				t.Fatal(err)
			}
			pollAll(t, nodes, clock.Now())
			const step = 50 * time.Millisecond
			// Each node polls at the default period, as newNode's.
			settled, err := room.Config{StateStore: &room.StateStore{Type: room.StoreBolt, Path: "unused"}}.SettleStateStore("")
			if err != nil {
				t.Fatal(err)
			}
			poll := time.Duration(settled.Poll)
			ticks, differ := 0, 0
			for i := 1; clock.Now().Before(start.Add(25 * time.Second)); i++ {
				clock.Add(step)
				now := clock.Now()
				elapsed := time.Duration(i) * step
				for j, n := range nodes {
					if i%10 == 0 { // a crowd, thinning out: keys every 0.05 to 0.5 apart
						for k := range 20 {
							key := float64(i/10)*0.3 + float64(k*k)*0.01*float64(j+1)
							n.sh.Room.ObservePresent(now, fmt.Sprintf("n%d-%d-%d", j, i, k), key)
						}
					}
					phase := time.Duration(j) * 3 * step // each node its own
					if (elapsed+phase)%poll == 0 {
						if err := n.sh.Poll(t.Context(), now); err != nil {
							t.Fatal(err)
						}
					}
					if (elapsed+phase)%time.Second == 0 {
						before := n.sh.ClusterStatus().Version
						if err := n.sh.ClusterTick(t.Context(), now); err != nil {
							t.Fatal(err)
						}
						if n.sh.ClusterStatus().Version > before {
							ticks++
						}
					}
				}
				want := nodes[0].sh.Room.View(now).ClockAt(now)
				for j, n := range nodes[1:] {
					if got := n.sh.Room.View(now).ClockAt(now); math.Abs(got-want) > 1e-9 {
						differ++
						if differ <= 3 {
							t.Errorf("%v after the start node %d reads S=%.6f, node 0 %.6f", now.Sub(start), j+1, got, want)
						}
					}
				}
			}
			if differ > 0 {
				t.Errorf("the nodes read the clock apart at %d moments", differ)
			}
			if ticks < 15 {
				t.Fatalf("only %d ticks changed the clock in 30 s: the test does not move its speed", ticks)
			}
		})
	}
}
