package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/room"
	"github.com/prometheus/client_golang/prometheus"
)

// alikeRun drives nodes sharing an adaptive lottery room the way
// TestClusterNodesReadTheLotteryClockAlike does (keys at every node, each
// node polling at its own period and phase, ClusterTick every second at
// its phase) and counts the moments at which some node reads the clock
// otherwise than node 0.
type alikeRun struct {
	t     *testing.T
	clock *fakeClock
	nodes []node
	polls []time.Duration // each node's poll period
	// nextPoll and nextTick are when each node polls and ticks next.
	nextPoll, nextTick []time.Time
	i                  int
	// differ counts the 50 ms moments at which the nodes read apart;
	// first is the first of them, described.
	differ int
	first  string
}

const alikeStep = 50 * time.Millisecond

func newAlikeRun(t *testing.T, clock *fakeClock, nodes []node) *alikeRun {
	r := &alikeRun{t: t, clock: clock, nodes: nodes}
	for range nodes {
		r.polls = append(r.polls, 500*time.Millisecond)
	}
	return r
}

// run steps the clock by 50 ms until d has passed; act, when not nil, is
// called at each step after the nodes polled and ticked, before they are
// compared. Polls and ticks are due by the clock, so a call that takes
// the clock on (a slow store) delays the ones after it.
func (r *alikeRun) run(d time.Duration, act func(step int, now time.Time)) {
	t := r.t
	t.Helper()
	end := r.clock.Now().Add(d)
	for r.clock.Now().Before(end) {
		r.i++
		r.clock.Add(alikeStep)
		for j, n := range r.nodes {
			if len(r.nextPoll) <= j {
				phase := time.Duration(j) * 3 * alikeStep
				r.nextPoll = append(r.nextPoll, r.clock.Now().Add(phase))
				r.nextTick = append(r.nextTick, r.clock.Now().Add(phase))
			}
			now := r.clock.Now()
			if r.i%10 == 0 {
				for k := range 20 {
					key := float64(r.i/10)*0.3 + float64(k*k)*0.01*float64(j+1)
					n.sh.Room.ObservePresent(now, fmt.Sprintf("n%d-%d-%d", j, r.i, k), key)
				}
			}
			if !now.Before(r.nextPoll[j]) {
				r.poll(j)
			}
			if !now.Before(r.nextTick[j]) {
				for !now.Before(r.nextTick[j]) {
					r.nextTick[j] = r.nextTick[j].Add(time.Second)
				}
				if err := n.sh.ClusterTick(t.Context(), now); err != nil {
					t.Fatal(err)
				}
			}
		}
		if act != nil {
			act(r.i, r.clock.Now())
		}
		r.compare(r.clock.Now())
	}
}

// poll polls node j now; its next poll is a period later.
func (r *alikeRun) poll(j int) {
	now := r.clock.Now()
	if err := r.nodes[j].sh.Poll(r.t.Context(), now); err != nil {
		r.t.Fatal(err)
	}
	r.nextPoll[j] = now.Add(r.polls[j])
}

func (r *alikeRun) compare(now time.Time) {
	want := r.nodes[0].sh.Room.View(now).ClockAt(now)
	for j, n := range r.nodes[1:] {
		if got := n.sh.Room.View(now).ClockAt(now); math.Abs(got-want) > 1e-9 {
			r.differ++
			if r.first == "" {
				r.first = fmt.Sprintf("at step %d node %d reads S=%.6f, node 0 %.6f", r.i, j+1, got, want)
			}
		}
	}
}

// TestClusterFixedSpeedReloadReadsAlike: a reload that sets fixed_speed
// on one node of an adaptive lottery room changes the clock there; every
// node must still read the same S(t) at every moment (a tick's speed
// waits two polls for that, and so must this change).
func TestClusterFixedSpeedReloadReadsAlike(t *testing.T) {
	store := storeKinds(t)["bolt"](t)
	clock := newFakeClock()
	cfg := Config{Config: room.Config{Room: "sale", State: "queue", Rate: 1000, Tau: Duration(time.Minute)}}
	nodes := newNodes(t, cfg, store, clock, 3)
	pollAll(t, nodes, clock.Now())
	fixed := cfg
	fixed.FixedSpeed = true
	fixed.Keys, fixed.Difficulty = testKeys, intp(0)
	fixed.StateStore = &room.StateStore{Type: room.StoreBolt, Path: "unused-by-tests", Node: "node1", CallTimeout: testCallTimeout}
	gw, err := New(fixed, nodes[1].sh, Options{Now: clock.Now, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	r := newAlikeRun(t, clock, nodes)
	r.run(10*time.Second, nil)
	if r.differ > 0 {
		t.Fatalf("the nodes read apart before the reload: %s", r.first)
	}
	// Just after node 0's tick, between the other nodes' polls.
	r.run(2*alikeStep, nil)
	if err := gw.ApplyConfig(); err != nil {
		t.Fatal(err)
	}
	r.run(5*time.Second, nil)
	if r.differ > 0 {
		t.Fatalf("after fixed_speed was set on node 1 the nodes read the clock apart at %d moments; first %s", r.differ, r.first)
	}
}

// TestClusterPauseReadsAlike: pausing through one node stops the clock; a
// node that has not polled the pause yet judges places on the running
// clock, which, once it adopts the pause, it reads otherwise for those
// moments. Every node must read every moment alike.
func TestClusterPauseReadsAlike(t *testing.T) {
	store := storeKinds(t)["bolt"](t)
	clock := newFakeClock()
	cfg := Config{Config: room.Config{Room: "sale", State: "queue", Rate: 1000, Tau: Duration(time.Minute)}}
	nodes := newNodes(t, cfg, store, clock, 3)
	pollAll(t, nodes, clock.Now())
	r := newAlikeRun(t, clock, nodes)
	r.run(10*time.Second, nil)
	if r.differ > 0 {
		t.Fatalf("the nodes read apart before the pause: %s", r.first)
	}
	r.run(2*alikeStep, nil)
	if err := nodes[1].sh.Apply(room.RoomChange{State: ptr("paused")}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	r.run(3*time.Second, nil)
	if err := nodes[1].sh.Apply(room.RoomChange{State: ptr("queue")}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	r.run(3*time.Second, nil)
	if r.differ > 0 {
		t.Fatalf("after a pause through node 1 the nodes read the clock apart at %d moments; first %s", r.differ, r.first)
	}
}

// TestClusterNodeJoiningReadsAlike: a node joining a room that one node
// ran alone (a tick's speed at once) serves from its join; every node must
// read the clock alike from then on.
func TestClusterNodeJoiningReadsAlike(t *testing.T) {
	store := storeKinds(t)["bolt"](t)
	clock := newFakeClock()
	cfg := Config{Config: room.Config{Room: "sale", State: "queue", Rate: 1000, Tau: Duration(time.Minute)}}
	nodes := newNodes(t, cfg, store, clock, 1)
	r := newAlikeRun(t, clock, nodes)
	r.run(10*time.Second, nil)
	// Just before node 0's next tick, which does not know the new node yet.
	r.run(r.nextTick[0].Sub(clock.Now())-alikeStep, nil)
	r.nodes = append(r.nodes, newNode(t, cfg, store, "late", clock))
	r.polls = append(r.polls, 500*time.Millisecond)
	r.run(10*time.Second, nil)
	if r.differ > 0 {
		t.Fatalf("after a second node joined the nodes read the clock apart at %d moments; first %s", r.differ, r.first)
	}
}

// slowTickStore is a real store whose every call takes delay of the test's
// clock while slow, and which runs beforeSave just before a control save:
// the moment another node's poll, a moment earlier, still read the old
// state.
type slowTickStore struct {
	roomstate.Store
	clock      *fakeClock
	slow       bool
	beforeSave func()
}

func (s *slowTickStore) wait() {
	if s.slow {
		s.clock.Add(80 * time.Millisecond)
	}
}

func (s *slowTickStore) PublishPopulation(ctx context.Context, key, node string, v float64, until time.Time) error {
	s.wait()
	return s.Store.PublishPopulation(ctx, key, node, v, until)
}

func (s *slowTickStore) Population(ctx context.Context, key string, now time.Time) (float64, int, error) {
	s.wait()
	return s.Store.Population(ctx, key, now)
}

func (s *slowTickStore) SaveControl(ctx context.Context, room string, c roomstate.Control, prev uint64) (uint64, error) {
	s.wait()
	if s.beforeSave != nil {
		s.beforeSave()
	}
	return s.Store.SaveControl(ctx, room, c, prev)
}

// TestClusterSlowTickReadsAlike: the ticking node's speed takes effect two
// polls after the tick so every node has it by then. A tick's store calls
// before its save (its observations published and every node's read) take
// time: with nine of them at 80 ms, another node that polled just before
// the save polls next 500 ms later, and must still read the new speed from
// its start.
func TestClusterSlowTickReadsAlike(t *testing.T) {
	base := storeKinds(t)["bolt"](t)
	clock := newFakeClock()
	slow := &slowTickStore{Store: base, clock: clock}
	cfg := Config{Config: room.Config{Room: "sale", State: "queue", Rate: 1000, Tau: Duration(time.Minute)}}
	nodes := []node{newNode(t, cfg, slow, "ticker", clock), newNode(t, cfg, base, "other", clock)}
	pollAll(t, nodes, clock.Now())
	r := newAlikeRun(t, clock, nodes)
	r.run(10*time.Second, nil)
	if r.differ > 0 {
		t.Fatalf("the nodes read apart before the store slowed: %s", r.first)
	}
	// A second without ticks, so node 0 ticks next; keys ahead at node 0.
	for range 20 {
		clock.Add(alikeStep)
		pollAll(t, nodes, clock.Now())
	}
	for k := range 20 {
		nodes[0].sh.Room.ObservePresent(clock.Now(), fmt.Sprintf("late-%d", k), 5+float64(k)*0.5)
	}
	var polled time.Time
	slow.slow = true
	slow.beforeSave = func() {
		// The other node's last poll before the save.
		polled = clock.Now()
		if err := nodes[1].sh.Poll(t.Context(), polled); err != nil {
			t.Fatal(err)
		}
	}
	ticked := clock.Now()
	before := nodes[0].sh.ClusterStatus().Version
	if err := nodes[0].sh.ClusterTick(t.Context(), ticked); err != nil {
		t.Fatal(err)
	}
	slow.slow, slow.beforeSave = false, nil
	if nodes[0].sh.ClusterStatus().Version == before || polled.IsZero() {
		t.Fatal("node 0 did not tick: the test checks nothing")
	}
	t.Logf("tick at %v, saved %v later", ticked.Format("15:04:05.000"), polled.Sub(ticked))
	differ := 0
	for now := clock.Now(); now.Before(ticked.Add(2 * time.Second)); now = now.Add(alikeStep) {
		clock.Set(now)
		if !now.Before(polled.Add(500 * time.Millisecond)) {
			polled = now
			if err := nodes[1].sh.Poll(t.Context(), now); err != nil {
				t.Fatal(err)
			}
		}
		a, b := nodes[0].sh.Room.View(now).ClockAt(now), nodes[1].sh.Room.View(now).ClockAt(now)
		if math.Abs(a-b) > 1e-9 {
			differ++
			t.Logf("%v after the tick node 1 reads S=%.6f, node 0 %.6f", now.Sub(ticked), b, a)
		}
	}
	if differ > 0 {
		t.Fatalf("with the ticking node's store calls at 80 ms the nodes read the clock apart at %d moments", differ)
	}
}

// TestClusterControlItemStaysSmall: the stored control item keeps every
// lane's clock and its past, at most 64 readings; docs/SCALING.md: "the
// item stays under about 10 KB a lane whatever the memory (3 DynamoDB read
// units a read for one lane)". Every node reads it twice a second and the
// ticking node writes it every second, so its size is the store's cost: a
// strongly consistent read costs a unit per 4 KB.
func TestClusterControlItemStaysSmall(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			store := storeKinds(t)["bolt"](t)
			clock := newFakeClock()
			cfg := Config{Config: room.Config{Room: "sale", State: "queue", Rate: 10, Tau: Duration(time.Minute)}}
			nodes := newNodes(t, cfg, store, clock, n)
			r := newAlikeRun(t, clock, nodes)
			// A speed moving every second: each tick a key further ahead.
			tick := 0
			r.run(3*time.Minute, func(step int, now time.Time) {
				if step%20 != 0 {
					return
				}
				tick++
				for j, nd := range nodes {
					s := nd.sh.Room.View(now).ClockAt(now)
					nd.sh.Room.ObservePresent(now, fmt.Sprintf("x%d-%d", j, tick), s+0.2+0.1*float64(tick%7))
				}
			})
			c, _, err := store.LoadControl(t.Context(), "sale")
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			past := nodes[0].sh.Room.View(clock.Now()).Past
			segs := 0
			for _, p := range past {
				segs += len(p.Segments)
			}
			t.Logf("%d nodes: control item %d bytes, %d readings kept, %d segments", n, len(b), len(past), segs)
			if units := (len(b) + 4095) / 4096; units > 3 {
				t.Fatalf("the control item of one lane is %d bytes, %d read units a read, not 3 (%d readings, %d segments)", len(b), units, len(past), segs)
			}
		})
	}
}
