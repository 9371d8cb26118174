package gateway

import (
	"fmt"
	"testing"
	"time"

	"github.com/fairgate/fairgate/room"
)

// TestClusterLotteryClockRunsAfterTheStart: on a state store a node ticks
// for the cluster only when the clock's speed would move. A scheduled
// lottery clock passes its lead in the first moments of the sale and then
// stands until a tick: the cluster must tick it then, even when the speed
// the tick plans is the one the last tick before the start planned (here
// MaxSpeed both times: the waiting places' keys lie far apart).
func TestClusterLotteryClockRunsAfterTheStart(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			store := open(t)
			clock := newFakeClock()
			cfg := Config{Config: room.Config{Room: "sale", Rate: 10, Tau: Duration(time.Minute)}}
			n := newNode(t, cfg, store, "node0", clock)
			nodes := []node{n}
			start := clock.Now().Add(30 * time.Second).Truncate(time.Second)
			if err := n.sh.Apply(room.RoomChange{State: ptr("scheduled"), SaleStart: ptr(start.Format(time.RFC3339))}, clock.Now()); err != nil {
				t.Fatal(err)
			}
			s0 := n.sh.Room.View(clock.Now()).Clock.At(clock.Now())
			keys := []float64{0.5, 3, 5}
			for clock.Now().Before(start.Add(10 * time.Second)) {
				clock.Add(time.Second)
				now := clock.Now()
				for i, k := range keys { // the places keep presenting
					n.sh.Room.ObservePresent(now, fmt.Sprint("place", i), s0+k)
				}
				pollAll(t, nodes, now)
				if err := n.sh.ClusterTick(t.Context(), now); err != nil {
					t.Fatal(err)
				}
			}
			now := clock.Now()
			if s := n.sh.Room.View(now).Clock.At(now) - s0; s < keys[len(keys)-1] {
				t.Errorf("10 s after the start the clock passed %.2f, short of the last key %v", s, keys[len(keys)-1])
			}
		})
	}
}
