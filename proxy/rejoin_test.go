package proxy

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"
)

// TestClusterRejoinHoldsTheRate stops one of three gateways mid-run (as
// SIGKILL would: nothing given back) and starts it again under a new node
// id, as a restarted process is: every second, and the 10 s after it came
// back, the cluster admits the target rate: each 10 s from the 10th on
// (before the stop, while the node is down, the 10 s after it came back,
// and the next) within 5 %, each second within 20 % (one admission is
// 2.5 % of a second here, and a queueing room's second may fall up to 7
// short while its clock catches up with a crowd of this size, also with
// every node's share set to the whole rate; 33 was the lowest seen).
// Before the shares followed a rejoining node, seconds fell to 20 and the
// 10 s after the restart to 363. The crowd is a
// fixed number of visitors spread 60/30/10 who come back once admitted
// (bench/cluster.sh's crowd), so a node whose bucket lags its visitors
// holds them and the others run short of eligible places. Before the
// shares counted a rejoining node's demand over the time since it started
// (and gave every node more headroom while the window still counted the
// visitors the change moved), the 10 s after it came back admitted 363 of
// 400 here, as bench/cluster.sh saw 890 of 1,000.
func TestClusterRejoinHoldsTheRate(t *testing.T) {
	for _, state := range []string{"open", "queue"} {
		t.Run(state, func(t *testing.T) {
			store := storeKinds(t)["bolt"](t)
			clock := newFakeClock()
			const (
				rate     = 40.0
				visitors = 400
				step     = 250 * time.Millisecond
				killAt   = 20 // seconds into the run
				backAt   = 30
				seconds  = 50
				from     = 8 // the first second judged
			)
			cfg := Config{Room: "rejoin", State: state, Rate: rate}
			if state == "queue" {
				cfg.Tau = Duration(5 * time.Second)
			}
			start := clock.Now().Truncate(time.Second).Add(time.Second)
			clock.Set(start)
			nodes := make([]*node, 3)
			for i := range nodes {
				n := newNode(t, cfg, store, fmt.Sprint("node", i), clock)
				nodes[i] = &n
			}
			weights := []float64{0.6, 0.3, 0.1}
			rng := rand.New(rand.NewPCG(1, 2))
			up := func(i int) bool { return nodes[i] != nil }
			pick := func() int {
				x, at := rng.Float64(), len(weights)-1
				for i, w := range weights {
					if x < w {
						at = i
						break
					}
					x -= w
				}
				for !up(at) { // the load balancer skips a node that is down
					at = (at + 1) % len(nodes)
				}
				return at
			}
			type visitor struct {
				node  int
				token string
				at    time.Time
			}
			crowd := make([]visitor, visitors)
			for i := range crowd {
				at := pick()
				crowd[i] = visitor{node: at, token: nodes[at].issue(t, start).Token, at: start}
			}
			perSecond := make([]int, seconds)
			for s := range seconds * int(time.Second/step) {
				now := start.Add(time.Duration(s) * step)
				clock.Set(now)
				sec := int(now.Sub(start) / time.Second)
				if now.Sub(start)%time.Second == 0 {
					switch sec {
					case killAt:
						nodes[1] = nil
					case backAt:
						n := newNode(t, cfg, store, "node1-again", clock)
						nodes[1] = &n
					}
					for _, n := range nodes {
						if n == nil {
							continue
						}
						if err := n.sh.poll(t.Context(), now); err != nil {
							t.Fatal(err)
						}
						if err := n.sh.clusterTick(t.Context(), now); err != nil {
							t.Fatal(err)
						}
					}
				}
				var due []int
				for i, v := range crowd {
					if !v.at.After(now) {
						due = append(due, i)
					}
				}
				decisions := make([]admission.Decision, len(due))
				var wg sync.WaitGroup
				for j, i := range due {
					v := &crowd[i]
					if !up(v.node) {
						// Its node is down: the visitor tries another.
						v.node = pick()
					}
					n := nodes[v.node]
					wg.Add(1)
					go func() {
						defer wg.Done()
						decisions[j] = n.gw.gate.Decide(t.Context(), n.sh.Room, admission.Attempt{Token: v.token, Nonce: "0", Now: now})
					}()
				}
				wg.Wait()
				for j, i := range due {
					v, d := &crowd[i], decisions[j]
					switch d.Outcome {
					case admission.OutcomeAdmit:
						perSecond[sec]++
						// Admitted: the visitor comes back for another visit.
						at := pick()
						*v = visitor{node: at, token: nodes[at].issue(t, now).Token, at: now.Add(step)}
					case admission.OutcomeBusy, admission.OutcomeWait, admission.OutcomeEarly:
						v.token, v.at = d.Next.Token, now.Add(max(d.RetryAfter, step))
					default:
						t.Fatalf("second %d: decide at node %d: %v %v", sec, v.node, d.Outcome, d.Err)
					}
				}
			}
			t.Logf("%s: admissions per second %v", state, perSecond)
			low, high := int(rate*0.8), int(rate*1.2)
			for sec := from; sec < seconds; sec++ {
				if n := perSecond[sec]; n < low || n > high {
					t.Errorf("second %d (stopped at %d, back at %d): %d admitted, want %d to %d", sec, killAt, backAt, n, low, high)
				}
			}
			for span := 10; span+10 <= seconds; span += 10 {
				sum := 0
				for _, n := range perSecond[span : span+10] {
					sum += n
				}
				if want := rate * 10; float64(sum) < want*0.95 || float64(sum) > want*1.05 {
					t.Errorf("seconds %d to %d (stopped at %d, back at %d) admitted %d, want %v ± 5%%", span, span+10, killAt, backAt, sum, want)
				}
			}
		})
	}
}
