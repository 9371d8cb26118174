package gateway

import (
	"testing"
	"time"

	"github.com/fairgate/fairgate/room"
)

// TestClusterNodesShareTheShowShare: the share of passed places that come
// is the room's, not a node's, so fifo's nodes predict a key alike
// (View.Shows) however the balancer spreads the places. The places of
// this crowd all take their tokens at one node and walk away after their
// first answer; the other node sees none of them, and must still count
// them as every node does.
func TestClusterNodesShareTheShowShare(t *testing.T) {
	clock := newFakeClock()
	cfg := Config{Config: room.Config{Room: "fifo", Rate: 3, QueueOrder: "fifo"}}
	nodes := newNodes(t, cfg, storeKinds(t)["bolt"](t), clock, 2)
	pollAll(t, nodes, clock.Now())
	type visitor struct {
		token string
		at    time.Time
	}
	var crowd []visitor
	for range 60 {
		tk := nodes[0].issue(t, clock.Now())
		crowd = append(crowd, visitor{tk.Token, tk.Claims.NextAttempt()})
	}
	var shows [2]float64
	for step := 1; step <= 600; step++ {
		clock.Add(100 * time.Millisecond)
		now := clock.Now()
		// Each presents once, when first told to, and walks away.
		for i, v := range crowd {
			if !v.at.IsZero() && !v.at.After(now) {
				nodes[0].decide(t, v.token, now)
				crowd[i].at = time.Time{}
			}
		}
		if step%10 != 0 {
			continue
		}
		for _, n := range nodes {
			if err := n.sh.Poll(t.Context(), now); err != nil {
				t.Fatal(err)
			}
			if err := n.sh.ClusterTick(t.Context(), now); err != nil {
				t.Fatal(err)
			}
		}
		for i, n := range nodes {
			shows[i] = n.sh.Room.View(now).Shows
		}
		if shows[0] < 1 {
			break
		}
	}
	if shows[0] >= 1 {
		t.Fatalf("the node the places walked away from counts a share of %v coming, want less than 1", shows[0])
	}
	if shows[1] != shows[0] {
		t.Fatalf("the nodes count shares of %v and %v of passed places coming, want the room's at both", shows[0], shows[1])
	}
}
