package gateway

import (
	"math"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/room"
)

// TestClusterNodesShareTheShowShare: the share of passed places that come
// is the room's, not a node's, so fifo's nodes predict a key alike
// (View.Shows) however the balancer spreads the places. Here the places
// at node 0 walk away after their first answer and those at node 1 all
// come: each node must count the room's share, its own part counted
// once (counted twice, a node's share would be off by 0.1 to 0.2 here).
func TestClusterNodesShareTheShowShare(t *testing.T) {
	clock := newFakeClock()
	cfg := Config{Config: room.Config{Room: "fifo", Rate: 3, QueueOrder: "fifo"}}
	nodes := newNodes(t, cfg, storeKinds(t)["bolt"](t), clock, 2)
	pollAll(t, nodes, clock.Now())
	type visitor struct {
		node  int
		token string
		at    time.Time // its next request; zero: gone or admitted
	}
	var crowd []*visitor
	for i := range 60 {
		n := i % 2
		tk := nodes[n].issue(t, clock.Now())
		crowd = append(crowd, &visitor{n, tk.Token, tk.Claims.NextAttempt()})
	}
	share := func(now time.Time) (want float64, got [2]float64) {
		var came, gone float64
		for i, n := range nodes {
			c, g := n.sh.Room.ShowRates(now)
			came, gone = came+c, gone+g
			got[i] = n.sh.Room.View(now).Shows
		}
		return came / (came + gone), got
	}
	checked := 0
	for step := 1; step <= 400; step++ {
		clock.Add(100 * time.Millisecond)
		now := clock.Now()
		for _, v := range crowd {
			if v.at.IsZero() || v.at.After(now) {
				continue
			}
			d := nodes[v.node].decide(t, v.token, now)
			switch {
			case v.node == 0 || d.Outcome == admission.OutcomeAdmit:
				v.at = time.Time{}
			default:
				v.token, v.at = d.Next.Token, now.Add(d.RetryAfter)
			}
		}
		if step%10 != 0 {
			continue
		}
		// The nodes tick in turn: the last of them reads every node's
		// counts of this second (the first, the other's of the second
		// before), and must count the room's share exactly.
		last := step / 10 % 2
		for _, i := range []int{1 - last, last} {
			if err := nodes[i].sh.Poll(t.Context(), now); err != nil {
				t.Fatal(err)
			}
			if err := nodes[i].sh.ClusterTick(t.Context(), now); err != nil {
				t.Fatal(err)
			}
		}
		want, got := share(now)
		if math.IsNaN(want) || want <= 0.3 || want >= 0.9 {
			continue // too few counted yet either way to tell them apart
		}
		checked++
		if math.Abs(got[last]-want) > 1e-9 {
			t.Errorf("+%ds: nodes 0 and 1 count shares of %.3f and %.3f of passed places coming, node %d ticking last; the room's is %.3f",
				step/10, got[0], got[1], last, want)
		}
	}
	if checked < 5 {
		t.Fatalf("the room's share was between 0.3 and 0.9 at %d ticks, want at least 5", checked)
	}
}
