package proxy

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"
)

// TestClusterHoldsTheRateThroughNodeChanges runs three gateways on one
// store under a fixed crowd spread 60/30/10 who come back once admitted
// (bench/cluster.sh's and e2e/cluster's crowd), stops the 30 % node as
// SIGKILL would (nothing given back) and maybe starts it again, and checks
// that the cluster admits the target rate every 10 s (±5 %) and every
// second (±25 %) from the first judged second on. A queueing room's single
// second falls short now and then whatever the split, while its clock
// catches up with a crowd of this size (also with every node's share set
// to the whole rate; 31 of 40 once, in a CI run under -race, the last
// second of a run whose other 47 judged seconds admitted 40). A node whose bucket lags its visitors holds
// them in its slots while the others run short of eligible visitors, so
// each case is a way the visitors move between nodes faster than the
// nodes' demand, measured over a window, follows them:
//   - rejoin: the node comes back under a new id 10 s later and its
//     visitors with it (before shares counted a rejoining node's demand
//     over the time since it started, the 10 s after it came back admitted
//     363 of 400, as bench/cluster.sh saw 890 of 1,000);
//   - killed with a deep backlog: e2e/cluster's room (clock at a fixed
//     1 s, so the whole crowd is eligible and holds slots several seconds
//     deep), after a pause, a rate change and another node's restart, its
//     visitors spread over the others at random, each node ticking at its
//     own moment of the second. Before a node's backlog counted in its
//     demand, e2e/cluster's check of the 10 s after the kill admitted 138
//     and 175 of 200 in two of five runs.
func TestClusterHoldsTheRateThroughNodeChanges(t *testing.T) {
	queue := func(cfg Config) Config {
		cfg.State, cfg.Tau = "queue", Duration(5*time.Second)
		return cfg
	}
	e2eRoom := Config{Room: "killed", State: "queue", Rate: 20, Burst: 20, Tau: Duration(time.Second), FixedSpeed: true,
		MinBackoff: Duration(time.Second), MaxBackoff: Duration(2 * time.Second)}
	cases := []struct {
		name string
		sc   crowdScenario
		from int // the first second judged
	}{
		{"rejoin/open", crowdScenario{cfg: Config{Room: "rejoin", State: "open", Rate: 40}, visitors: 400, killAt: 20, backAt: 30, seconds: 50}, 8},
		{"rejoin/queue", crowdScenario{cfg: queue(Config{Room: "rejoin", Rate: 40}), visitors: 400, killAt: 20, backAt: 30, seconds: 50}, 8},
		{"killed with a deep backlog", crowdScenario{cfg: e2eRoom, visitors: 200, killAt: 60, restartAt: 48, seconds: 80,
			spread: true, phased: true, changes: map[int]RoomChange{
				4 * 40:   {State: ptr("paused")},
				4*40 + 2: {State: ptr("queue"), Rate: ptr(40.0)},
				4*40 + 4: {Rate: ptr(20.0), Burst: ptr(20.0)},
			}}, 50},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.sc.weights = []float64{0.6, 0.3, 0.1}
			perSecond := c.sc.run(t)
			t.Logf("admissions per second %v", perSecond)
			rate := c.sc.cfg.Rate
			low, high := int(rate*0.75), int(rate*1.25)
			for sec := c.from; sec < c.sc.seconds; sec++ {
				if n := perSecond[sec]; n < low || n > high {
					t.Errorf("second %d (stopped at %d, back at %d): %d admitted, want %d to %d", sec, c.sc.killAt, c.sc.backAt, n, low, high)
				}
			}
			for span := c.from; span+10 <= c.sc.seconds; span += 10 {
				sum := 0
				for _, n := range perSecond[span : span+10] {
					sum += n
				}
				if want := rate * 10; float64(sum) < want*0.95 || float64(sum) > want*1.05 {
					t.Errorf("seconds %d to %d (stopped at %d, back at %d) admitted %d, want %v ± 5%%", span, span+10, c.sc.killAt, c.sc.backAt, sum, want)
				}
			}
		})
	}
}

// crowdScenario is a run of three gateways on one store under a fixed
// crowd that comes back once admitted, node 1 stopped (as SIGKILL would:
// nothing given back) and maybe started again.
type crowdScenario struct {
	cfg      Config
	visitors int
	weights  []float64
	killAt   int // seconds into the run
	backAt   int // node 1 starts again under a new id; 0: it stays down
	// restartAt restarts node 2 under its own id (stopped and started in
	// the same second, as SIGTERM and a quick start do); 0: never.
	restartAt int
	seconds   int
	// spread sends a visitor whose node is down to a random other node (as
	// e2e/cluster's crowd does) instead of the next one.
	spread bool
	// phased ticks each node at its own moment of the second instead of
	// all at the whole second.
	phased bool
	// changes are room changes made through node 0, by step (250 ms).
	changes map[int]RoomChange
}

// run returns the admissions in each second of the run.
func (sc crowdScenario) run(t *testing.T) []int {
	t.Helper()
	store := storeKinds(t)["bolt"](t)
	clock := newFakeClock()
	const step = 250 * time.Millisecond
	const steps = int(time.Second / step)
	start := clock.Now().Truncate(time.Second).Add(time.Second)
	clock.Set(start)
	nodes := make([]*node, len(sc.weights))
	for i := range nodes {
		n := newNode(t, sc.cfg, store, fmt.Sprint("node", i), clock)
		nodes[i] = &n
	}
	rng := rand.New(rand.NewPCG(1, 2))
	up := func(i int) bool { return nodes[i] != nil }
	pick := func() int {
		x, at := rng.Float64(), len(sc.weights)-1
		for i, w := range sc.weights {
			if x < w {
				at = i
				break
			}
			x -= w
		}
		for !up(at) { // the load balancer skips a node that is down
			if sc.spread {
				at = (at + 1 + rng.IntN(len(nodes)-1)) % len(nodes)
			} else {
				at = (at + 1) % len(nodes)
			}
		}
		return at
	}
	type visitor struct {
		node  int
		token string
		at    time.Time
	}
	crowd := make([]visitor, sc.visitors)
	for i := range crowd {
		at := pick()
		crowd[i] = visitor{node: at, token: nodes[at].issue(t, start).Token, at: start}
	}
	perSecond := make([]int, sc.seconds)
	for s := range sc.seconds * steps {
		now := start.Add(time.Duration(s) * step)
		clock.Set(now)
		sec := s / steps
		if s%steps == 0 {
			switch {
			case sec == sc.killAt:
				nodes[1] = nil
			case sec == sc.backAt && sc.backAt > 0:
				n := newNode(t, sc.cfg, store, "node1-again", clock)
				nodes[1] = &n
			case sec == sc.restartAt && sc.restartAt > 0:
				n := newNode(t, sc.cfg, store, "node2", clock)
				nodes[2] = &n
			}
		}
		for i, n := range nodes {
			if n == nil || (sc.phased && s%steps != i%steps) || (!sc.phased && s%steps != 0) {
				continue
			}
			if err := n.sh.poll(t.Context(), now); err != nil {
				t.Fatal(err)
			}
			if err := n.sh.clusterTick(t.Context(), now); err != nil {
				t.Fatal(err)
			}
		}
		if c, ok := sc.changes[s]; ok {
			if err := nodes[0].sh.Apply(c, now); err != nil {
				t.Fatal(err)
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
				v.node = pick() // its node is down: the visitor tries another
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
				at := pick() // admitted: the visitor comes back for another visit
				*v = visitor{node: at, token: nodes[at].issue(t, now).Token, at: now.Add(step)}
			case admission.OutcomeBusy, admission.OutcomeWait, admission.OutcomeEarly:
				v.token, v.at = d.Next.Token, now.Add(max(d.RetryAfter, step))
			default:
				t.Fatalf("second %d: decide at node %d: %v %v", sec, v.node, d.Outcome, d.Err)
			}
		}
	}
	return perSecond
}
