package main

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// admittedVisitor is a one-tab visitor that took its token at took and
// went in at in (never, if in < 0).
func admittedVisitor(id, login, strategy string, pair int, took, in float64) *visitor {
	v := &visitor{ID: id, Login: login, Strategy: strategy, Pair: pair, PreQueue: took < 0}
	v.record(event{Path: "/token", Status: 200, At: at(took)})
	v.tookAt(at(took), 0)
	if in >= 0 {
		v.record(event{Path: "/admit", Status: 200, At: at(in), Pass: fakePass(id, at(in))})
	}
	return v
}

// fakePass is an unsigned pass with the claims the probe reads.
func fakePass(id string, iat time.Time) string {
	return fakeToken(fmt.Sprintf(`{"jti":%q,"iat":%d}`, id, iat.Unix()))
}

// fakeToken is an unsigned JWT with claims.
func fakeToken(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"HS256"}`)) + "." + enc([]byte(claims)) + ".sig"
}

func TestTwinTable(t *testing.T) {
	tests := []struct {
		name          string
		honestIn, sIn float64
		wantAhead     int
		wantDiff      time.Duration
	}{
		{"behind", 10, 12, 0, 2 * time.Second},
		{"ahead within a second", 10, 9.5, 0, -500 * time.Millisecond},
		{"ahead", 10, 8, 1, -2 * time.Second},
		{"honest never in", -1, 8, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := []*visitor{
				admittedVisitor("h", "l", honest, 0, 1, tt.honestIn),
				admittedVisitor("s", "l", poll, 0, 1, tt.sIn),
			}
			res := &results{}
			res.twins(vs)
			row := res.Twins[0]
			if row.Strategy != poll || row.Ahead != tt.wantAhead || row.Median != tt.wantDiff {
				t.Fatalf("row %+v, want ahead %d median %s", row, tt.wantAhead, tt.wantDiff)
			}
		})
	}
}

func TestPassesPerLogin(t *testing.T) {
	vs := []*visitor{
		admittedVisitor("a", "one", honest, 0, 1, 5),
		admittedVisitor("b", "one", tabs, 0, 1, 6),
		admittedVisitor("c", "two", honest, -1, 1, 7),
	}
	res := &results{PassesHistogram: map[int]int{}}
	res.passes(vs)
	if len(res.LoginsOverOne) != 1 || res.LoginsOverOne[0] != "one" || res.PassesHistogram[2] != 1 || res.PassesHistogram[1] != 1 {
		t.Fatalf("over one %v, histogram %v", res.LoginsOverOne, res.PassesHistogram)
	}
}

func TestLostSlotsAreTracedWithTheirNodes(t *testing.T) {
	kept := admittedVisitor("kept", "k", honest, -1, 1, 9)
	lost := admittedVisitor("lost", "l", honest, -1, 2, 12)
	lost.Nodes = []int{1}
	lost.record(event{Path: "/admit", Status: 429, Outcome: "busy", At: at(3), Nxt: at(6).UnixMilli()})
	lost.record(event{Path: "/admit", Status: 429, Outcome: "wait", At: at(6), SlotLost: true})
	res := analyse([]*visitor{kept, lost}, config{Order: "lottery", SaleStart: at(0)}, nil)
	if res.SlotsLost != 1 {
		t.Fatalf("slots lost %d, want 1", res.SlotsLost)
	}
	tr := res.SlotTrace
	if len(tr) < 2 || !strings.HasPrefix(tr[0], "lost ") || slices.ContainsFunc(tr, func(l string) bool { return strings.Contains(l, "kept") }) {
		t.Fatalf("slot trace %q: want the visitor who lost a slot, and only it", tr)
	}
	if !slices.ContainsFunc(tr, func(l string) bool { return strings.HasSuffix(l, "wait (node 2) LOST") }) {
		t.Fatalf("slot trace %q: want the lost answer marked, with its node (2)", tr)
	}
}

func TestFifoOrderAndPreQueue(t *testing.T) {
	vs := []*visitor{
		admittedVisitor("pre1", "p1", honest, -1, -5, 3),
		admittedVisitor("pre2", "p2", honest, -1, -4, 20),
		// 0.1 s apart, the earlier in first; 0.1 s apart, the later first.
		admittedVisitor("a", "a", honest, -1, 1.0, 21),
		admittedVisitor("b", "b", honest, -1, 1.1, 22),
		admittedVisitor("c", "c", honest, -1, 30.0, 41),
		admittedVisitor("d", "d", honest, -1, 30.1, 40),
		// Post-start, admitted before the last pre-queue place.
		admittedVisitor("e", "e", honest, -1, 60, 10),
	}
	vs[len(vs)-1].Nodes = []int{2} // its one tab at the third node
	res := &results{Config: config{LuckWindow: 5 * time.Second}}
	res.fifo(vs)
	if res.PostBeforePre != 1 || res.PreQueueHonest != 2 {
		t.Fatalf("post before pre %d, pre-queue %d", res.PostBeforePre, res.PreQueueHonest)
	}
	if tr := res.BoundaryTrace; len(tr) < 2 || !strings.Contains(tr[0], "pre2") || !slices.ContainsFunc(tr[1:], func(l string) bool { return strings.Contains(l, "later arrival e") }) {
		t.Fatalf("boundary trace %q: want the last pre-queue place (pre2) first and the later arrival e after it", tr)
	}
	if tr := res.BoundaryTrace; !strings.HasSuffix(tr[len(tr)-1], "(node 3)") {
		t.Fatalf("boundary trace %q: want the later arrival's answers last, each with its node (3)", tr)
	}
	b := res.Fifo[0]
	if b.Pairs != 2 || b.P != 0.5 || b.Rule < 0.509 || b.Rule > 0.511 {
		t.Fatalf("Δ≈0.1s bin %+v", b)
	}
}

// Tenths of the post-start arrivals, in arrival order: a tenth admitted
// on average before an earlier tenth by more than their luck allows fails
// the target; within that, or waiting less as a queue drains, does not.
func TestFifoTenthsInArrivalOrder(t *testing.T) {
	// early: the sixth tenth goes in by seconds before the fifth.
	early := func(by float64) func(i int) float64 {
		return func(i int) float64 {
			if i/2 == 5 {
				return 50 + float64(i) - 2 - by
			}
			return 50 + float64(i)
		}
	}
	tests := []struct {
		name    string
		w       time.Duration
		in      func(i int) float64 // the i-th of 20 arrivals (one a second from 1 s) goes in then
		wantBad int
	}{
		{"in order", time.Second / 5, func(i int) float64 { return 50 + float64(i) }, 0},
		{"a draining queue: waits fall", time.Second / 5, func(i int) float64 { return 40 + 1.5*float64(i) }, 0},
		{"a tenth 0.9 s early, a second allowed", time.Second / 5, early(0.9), 0},
		{"a tenth 2 s before the one before, a second allowed", time.Second / 5, early(2), 1},
		{"a tenth 10 s before the one before, within two places' luck", 5 * time.Second, early(10), 0},
		{"a tenth 16 s before the one before, beyond two places' luck", 5 * time.Second, early(16), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var vs []*visitor
			for i := range 20 {
				id := fmt.Sprintf("v%d", i)
				vs = append(vs, admittedVisitor(id, id, honest, -1, 1+float64(i), tt.in(i)))
			}
			res := &results{Config: config{Order: "fifo", LuckWindow: tt.w, SaleStart: t0}}
			res.fifo(vs)
			if len(res.FifoDeciles) != 10 || res.FifoDeciles[0].N != 2 {
				t.Fatalf("tenths %+v, want 10 of 2", res.FifoDeciles)
			}
			if got := decilesInOrder(res.FifoDeciles, tt.w); got != tt.wantBad {
				t.Fatalf("%d tenths out of order, want %d (%+v)", got, tt.wantBad, res.FifoDeciles)
			}
		})
	}
}

// The tenths check against the rule and against broken orders, at the
// small scale (a pre-queue, then arrivals over 50 s with exponential
// luck, admitted at the rate, some leaving), 250 runs each: the rule in
// key order is never flagged (a fixed second flags a few percent of its
// runs); the same places served in reverse arrival order always are, and
// served at random, most runs are.
func TestFifoTenthsToleranceKeepsTheRule(t *testing.T) {
	const (
		runs   = 250
		w      = 5 * time.Second
		rate   = 3.0
		pre    = 140
		post   = 140
		window = 50.0
	)
	orders := []struct {
		name    string
		order   func(rng *rand.Rand, ps []rulePlace)
		atLeast float64 // the share of runs flagged
		atMost  float64
	}{
		{"the rule", func(*rand.Rand, []rulePlace) {}, 0, 0},
		{"reversed", func(_ *rand.Rand, ps []rulePlace) {
			slices.SortFunc(ps, func(a, b rulePlace) int { return cmp.Compare(b.arrived, a.arrived) })
		}, 1, 1},
		{"at random", func(rng *rand.Rand, ps []rulePlace) {
			rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
		}, 0.5, 1},
	}
	for _, leavers := range []float64{0, 0.3} {
		for _, o := range orders {
			t.Run(fmt.Sprintf("%s, leavers %.1f", o.name, leavers), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(1, uint64(leavers*10)))
				flagged, flaggedBySecond := 0, 0
				for range runs {
					ds := ruleTenths(rng, w, rate, pre, post, window, leavers, o.order)
					if decilesInOrder(ds, w) > 0 {
						flagged++
					}
					for i := 1; i < len(ds); i++ {
						if ds[i].Admitted < ds[i-1].Admitted-maxAhead {
							flaggedBySecond++
							break
						}
					}
				}
				share := float64(flagged) / runs
				if share < o.atLeast || share > o.atMost {
					t.Fatalf("flagged in %d of %d runs, want a share in [%v, %v]", flagged, runs, o.atLeast, o.atMost)
				}
				t.Logf("flagged in %d of %d runs; a fixed %s between neighbours would flag %d", flagged, runs, maxAhead, flaggedBySecond)
			})
		}
	}
}

// rulePlace is a place of ruleTenths: when it arrived, and its key.
type rulePlace struct{ arrived, key float64 }

// ruleTenths admits a pre-queue and then post arrivals spread evenly at
// random over window seconds after the start, each with a key of its
// arrival plus exponential luck of mean w, a share of leavers never
// admitted, in key order (then rearranged by order) at most rate a
// second, no place before its key; and returns the tenths of the
// post-start arrivals admitted.
func ruleTenths(rng *rand.Rand, w time.Duration, rate float64, pre, post int, window, leavers float64, order func(*rand.Rand, []rulePlace)) []decile {
	var places []rulePlace
	for range post {
		a := rng.Float64() * window
		if rng.Float64() < leavers {
			continue
		}
		places = append(places, rulePlace{a, a + rng.ExpFloat64()*w.Seconds()})
	}
	slices.SortFunc(places, func(a, b rulePlace) int { return cmp.Compare(a.key, b.key) })
	order(rng, places)
	next := float64(pre) * (1 - leavers) / rate
	var vs []*visitor
	for i, p := range places {
		next = max(next+1/rate, p.key)
		id := fmt.Sprintf("v%d", i)
		vs = append(vs, admittedVisitor(id, id, honest, -1, p.arrived, next))
	}
	slices.SortFunc(vs, func(a, b *visitor) int { return a.Took.Compare(b.Took) })
	return deciles(vs, t0)
}

func TestFifoBoundaryIsOfPlaces(t *testing.T) {
	tests := []struct {
		name   string
		twinIn float64 // the pre-queue place's twin's pass; -1: none
		want   int     // post-start arrivals before the last pre-queue place
	}{
		{"the honest tab goes in last", -1, 1},
		{"its twin admits the place first", 10, 0},
		{"its twin goes in after the honest tab", 30, 1},
	}
	// A later arrival let in only through its twin is judged too.
	t.Run("a later arrival in through its twin alone", func(t *testing.T) {
		vs := []*visitor{
			admittedVisitor("pre", "p", honest, -1, -4, 20),
			admittedVisitor("post", "q", honest, 0, 2, -1),
			admittedVisitor("twin", "q", hoard, 0, 2, 15),
		}
		res := &results{Config: config{LuckWindow: 5 * time.Second}}
		res.fifo(vs)
		if res.PostBeforePre != 1 {
			t.Fatalf("post before pre %d, want 1", res.PostBeforePre)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := []*visitor{
				admittedVisitor("pre", "p", honest, 0, -4, 20),
				admittedVisitor("twin", "p", hoard, 0, 1, tt.twinIn),
				admittedVisitor("post", "q", honest, -1, 2, 15),
			}
			res := &results{Config: config{LuckWindow: 5 * time.Second}}
			res.fifo(vs)
			if res.PostBeforePre != tt.want || res.PreQueueHonest != 1 {
				t.Fatalf("post before pre %d, pre-queue %d; want %d, 1", res.PostBeforePre, res.PreQueueHonest, tt.want)
			}
		})
	}
}

func TestRateWindowsCountPageFollowers(t *testing.T) {
	var vs []*visitor
	// 40 honest places waiting from before the start, 30 admitted in the
	// first window; 40 slow pollers waiting too, which do not count.
	for i := range 40 {
		in := -1.0
		if i < 30 {
			in = float64(i) / 3
		} else if i < 39 {
			in = 10 + float64(i-30)
		} else {
			in = 25
		}
		vs = append(vs, admittedVisitor("h", fmt.Sprint("h", i), honest, -1, -1, in))
		vs = append(vs, admittedVisitor("s", fmt.Sprint("s", i), slowPoll, 0, -1, -1))
	}
	res := &results{Config: config{Rate: 3, SaleStart: t0}}
	res.windows(vs)
	if len(res.Windows) != 2 {
		t.Fatalf("windows %+v", res.Windows)
	}
	if w := res.Windows[0]; w.Admitted != 30 || w.Waiting != 40 || !w.Counted {
		t.Errorf("first window %+v", w)
	}
	if w := res.Windows[1]; w.Admitted != 9 || w.Waiting != 10 || w.Counted {
		t.Errorf("second window %+v", w)
	}
}

// slotVisitor is a one-tab visitor told busy with a slot at busy, whose
// attempt sent at sent got its pass at in.
func slotVisitor(id string, took, busy, slot, sent, in float64) *visitor {
	v := &visitor{ID: id, Login: id, Strategy: honest, Pair: -1, PreQueue: took < 0}
	v.record(event{Path: "/token", Status: 200, At: at(took)})
	v.tookAt(at(took), 0)
	v.record(event{Path: "/admit", Status: 429, Outcome: "busy", Sent: at(busy), At: at(busy), Nxt: at(slot).UnixMilli()})
	v.record(event{Path: "/admit", Status: 200, Sent: at(sent), At: at(in), Pass: fakePass(id, at(in))})
	return v
}

func TestAdmittedAtTheSlotTheRoomGave(t *testing.T) {
	tests := []struct {
		name string
		pre  *visitor
		post *visitor
		want int // post-start arrivals before the last pre-queue place
	}{
		{"one slot, the later arrival's request first", slotVisitor("pre", -5, 48, 52, 52, 52.02), slotVisitor("post", 1, 49, 52, 52, 52.01), 0},
		{"an earlier slot", slotVisitor("pre", -5, 48, 53, 53, 53.01), slotVisitor("post", 1, 49, 52, 52, 52.01), 1},
		{"presented long after its slot", slotVisitor("pre", -5, 48, 53, 53, 53.01), slotVisitor("post", 1, 49, 52, 53.5, 53.51), 0},
		{"no slot: the pass's moment", admittedVisitor("pre", "pre", honest, -1, -5, 52.02), admittedVisitor("post", "post", honest, -1, 1, 52.01), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &results{Config: config{LuckWindow: 5 * time.Second}}
			res.fifo([]*visitor{tt.pre, tt.post})
			if res.PostBeforePre != tt.want {
				t.Fatalf("post-start arrivals before the pre-queue: %d, want %d", res.PostBeforePre, tt.want)
			}
		})
	}
}

// leaverVisitor is a one-tab visitor without a twin chosen to leave after
// its first attempt, that took its token at took and left at gone (or
// went in at in, if gone is stays).
func leaverVisitor(id string, took, gone, in float64) *visitor {
	v := admittedVisitor(id, id, honest, -1, took, in)
	v.LeaveAfter = 1
	if gone != stays {
		v.leave(at(gone))
	}
	return v
}

// stays is a leaver's moment of leaving when it did not leave.
var stays = math.Inf(1)

func TestRateWindowsCountOnlyThoseStillThere(t *testing.T) {
	tests := []struct {
		name        string
		leftAt      float64 // when the 10 leavers left
		wantWaiting []int
		wantGone    []int
		wantCounted []bool
	}{
		// 25 stayers and 10 leavers took places before the start; 20
		// stayers went in in the first window, 5 from 10 s to 20 s.
		{"left before the start", -0.5, []int{25, 5}, []int{10, 10}, []bool{false, false}},
		{"left at the first window's start", 0, []int{25, 5}, []int{10, 10}, []bool{false, false}},
		{"left during the first window", 5, []int{35, 5}, []int{0, 10}, []bool{true, false}},
		{"left during the second window", 15, []int{35, 15}, []int{0, 0}, []bool{true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var vs []*visitor
			for i := range 25 {
				in := float64(i) / 2
				if i >= 20 {
					in = 10 + 2.5*float64(i-20)
				}
				vs = append(vs, admittedVisitor("h", fmt.Sprint("h", i), honest, -1, -1, in))
			}
			for i := range 10 {
				vs = append(vs, leaverVisitor(fmt.Sprint("l", i), -1, tt.leftAt, -1))
			}
			res := &results{Config: config{Rate: 3, SaleStart: t0, Leavers: 0.3}}
			res.windows(vs)
			if len(res.Windows) != 2 {
				t.Fatalf("windows %+v", res.Windows)
			}
			for i, w := range res.Windows {
				if w.Waiting != tt.wantWaiting[i] || w.Gone != tt.wantGone[i] || w.Counted != tt.wantCounted[i] {
					t.Errorf("window %d: waiting %d gone %d counted %v, want %d %d %v",
						i, w.Waiting, w.Gone, w.Counted, tt.wantWaiting[i], tt.wantGone[i], tt.wantCounted[i])
				}
			}
			if w := res.Windows[0]; w.Admitted != 20 {
				t.Errorf("first window admitted %d, want 20", w.Admitted)
			}
		})
	}
}

func TestFifoLeaversOutOfTheOrder(t *testing.T) {
	tests := []struct {
		name        string
		leaver      *visitor
		wantPre     int
		wantPairs   int // in the Δ≈0.1s bin
		wantPostPre int
	}{
		{"a pre-queue place that left", leaverVisitor("gone", -3, 2, -1), 1, 1, 0},
		{"a post-start place that left", leaverVisitor("gone", 1.05, 4, -1), 1, 1, 0},
		// Chosen to leave, went in first: it stayed, and is in the order.
		{"admitted before it left", leaverVisitor("in", 1.05, stays, 20.5), 1, 3, 0},
		{"admitted before it left, ahead of the pre-queue", leaverVisitor("in", 1.05, stays, 3), 1, 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := []*visitor{
				admittedVisitor("pre", "pre", honest, -1, -5, 4),
				admittedVisitor("a", "a", honest, -1, 1.0, 21),
				admittedVisitor("b", "b", honest, -1, 1.1, 22),
				tt.leaver,
			}
			res := &results{Config: config{LuckWindow: 5 * time.Second}}
			res.fifo(vs)
			if res.PreQueueHonest != tt.wantPre || res.Fifo[0].Pairs != tt.wantPairs || res.PostBeforePre != tt.wantPostPre {
				t.Fatalf("pre-queue %d, Δ≈0.1s pairs %d, post before pre %d; want %d, %d, %d",
					res.PreQueueHonest, res.Fifo[0].Pairs, res.PostBeforePre, tt.wantPre, tt.wantPairs, tt.wantPostPre)
			}
		})
	}
}

func TestLeaverRow(t *testing.T) {
	atOnce := leaverVisitor("once", 1, 3, -1)
	later := leaverVisitor("later", 1, 9, -1)
	later.LeaveAfter = 4
	twin := admittedVisitor("p-honest", "p", honest, 0, 1, 8)
	vs := []*visitor{
		atOnce, later,
		leaverVisitor("first", 1, stays, 5),                // chosen, admitted before leaving
		leaverVisitor("never", 1, stays, -1),               // chosen, still waiting at the end
		admittedVisitor("stay", "stay", honest, -1, 1, 6),  // stayed, admitted
		admittedVisitor("wait", "wait", honest, -1, 1, -1), // stayed, not admitted
		twin, admittedVisitor("p-poll", "p", poll, 0, 1, 8),
	}
	got := *leavers(vs)
	want := leaverRow{Chosen: 4, Left: 2, LeftAtOnce: 1, AdmittedFirst: 1, Stayers: 4, StayersIn: 2}
	if got != want {
		t.Fatalf("leavers %+v, want %+v", got, want)
	}
}

func TestStayersWaiting(t *testing.T) {
	tests := []struct {
		name string
		vs   []*visitor
		want int
	}{
		{"every stayer admitted", []*visitor{
			admittedVisitor("a", "a", honest, -1, 1, 6),
			admittedVisitor("b", "b", honest, -1, -2, 3),
		}, 0},
		{"a stayer still waiting", []*visitor{
			admittedVisitor("a", "a", honest, -1, 1, 6),
			admittedVisitor("b", "b", honest, -1, 2, -1),
		}, 1},
		{"a leaver is not waiting", []*visitor{
			leaverVisitor("gone", 1, 3, -1),
		}, 0},
		{"a place its twin took in is admitted", []*visitor{
			admittedVisitor("p-honest", "p", honest, 0, 1, -1),
			admittedVisitor("p-poll", "p", poll, 0, 1, 8),
		}, 0},
		{"a strategy twin alone is not counted", []*visitor{
			admittedVisitor("p-honest", "p", honest, 0, 1, 8),
			admittedVisitor("p-late", "q", poll, 0, 1, -1),
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stayersWaiting(tt.vs); got != tt.want {
				t.Fatalf("stayers waiting %d, want %d", got, tt.want)
			}
		})
	}
}

func TestStepsBack(t *testing.T) {
	at := func(s ...float64) []clockSample {
		out := make([]clockSample, len(s))
		for i, v := range s {
			out[i] = clockSample{At: time.Unix(int64(i), 0), S: v}
		}
		return out
	}
	tests := []struct {
		name    string
		samples []clockSample
		n       int
		most    float64
	}{
		{"none sampled", nil, 0, 0},
		{"running and standing", at(0, 0, 1.5, 3, 3, 7), 0, 0},
		{"a rounding's fall", at(2, 2-1e-9, 3), 0, 0},
		{"two falls", at(0, 4, 3.5, 5, 2, 6), 2, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, most := stepsBack(tt.samples)
			if n != tt.n || math.Abs(most-tt.most) > 1e-12 {
				t.Fatalf("stepsBack = %d, %v; want %d, %v", n, most, tt.n, tt.most)
			}
		})
	}
}

// tabsVisitor is a login with two tabs at nodes, each answered once:
// tab 0 at a0 with outcome o0 naming n0, tab 1 at a1 with o1 naming n1.
func tabsVisitor(nodes []int, a0 float64, o0 string, n0, a1 float64, o1 string, n1 float64) *visitor {
	v := &visitor{ID: "t", Login: "l", Strategy: tabs, Pair: 0, Nodes: nodes}
	v.record(event{Tab: 0, Path: "/admit", Status: 429, At: at(a0), Outcome: o0, Nxt: at(n0).UnixMilli()})
	v.record(event{Tab: 1, Path: "/admit", Status: 429, At: at(a1), Outcome: o1, Nxt: at(n1).UnixMilli()})
	return v
}

func TestTabsToldAlike(t *testing.T) {
	threeTabs := tabsVisitor([]int{0, 0, 1}, 10, "wait", 30, 10, "wait", 35)
	threeTabs.record(event{Tab: 2, Path: "/admit", Status: 429, At: at(10.05), Outcome: "wait", Nxt: at(31).UnixMilli()})
	filtered := tabsVisitor([]int{0, 1}, 10, "wait", 30, 10, "wait", 30)
	filtered.record(event{Tab: 1, Path: "/admit", Status: 503, At: at(10), Nxt: at(40).UnixMilli()})
	filtered.record(event{Tab: 1, Path: "/admit", Status: 429, At: at(10), Outcome: "wait"})
	filtered.record(event{Tab: 5, Path: "/admit", Status: 429, At: at(10), Outcome: "wait", Nxt: at(40).UnixMilli()})
	apart := func(id string, by float64) *visitor {
		v := tabsVisitor([]int{0, 1}, 10, "wait", 30, 10, "wait", 31.25+by)
		v.ID = id
		return v
	}
	tests := []struct {
		name              string
		vs                []*visitor
		wantLogins, apart int
		wantWorst         float64
		wantTraced        string
	}{
		{"alike at two nodes", []*visitor{tabsVisitor([]int{0, 1}, 10, "wait", 30, 10, "wait", 31.25)}, 1, 0, 0, ""},
		{"apart at two nodes", []*visitor{apart("t", 1.75)}, 1, 1, 1.75, "t"},
		{"the answers' gap allowed", []*visitor{tabsVisitor([]int{0, 1}, 10, "wait", 30, 10.08, "wait", 31.33)}, 1, 0, 0, ""},
		{"answers 100 ms apart compared", []*visitor{tabsVisitor([]int{0, 1}, 10, "wait", 30, 10.1, "wait", 31.6)}, 1, 1, 0.25, "t"},
		{"answers further apart not compared", []*visitor{tabsVisitor([]int{0, 1}, 10, "wait", 30, 10.2, "wait", 40)}, 0, 0, 0, ""},
		{"one node", []*visitor{tabsVisitor([]int{1, 1}, 10, "wait", 30, 10, "wait", 40)}, 0, 0, 0, ""},
		{"busy answers not compared", []*visitor{tabsVisitor([]int{0, 2}, 10, "busy", 12, 10.5, "busy", 20)}, 0, 0, 0, ""},
		{"a wait and a busy not compared", []*visitor{tabsVisitor([]int{0, 1}, 10, "wait", 30, 10, "busy", 40)}, 0, 0, 0, ""},
		{"tabs at one node of a login at two not compared", []*visitor{threeTabs}, 1, 1, 2.70, "t"},
		{"no moment, another status or an unknown tab ignored", []*visitor{filtered}, 1, 0, 0, ""},
		{"logins counted once, the worst traced", []*visitor{apart("a", 0.5), apart("b", 2), apart("c", 1)}, 3, 3, 2, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := tabsAlike(tt.vs, t0, nil)
			if row.Logins != tt.wantLogins || row.Apart != tt.apart || math.Abs(row.Worst-tt.wantWorst) > 1e-9 {
				t.Fatalf("logins %d, apart %d, worst %.3f; want %d, %d, %.3f", row.Logins, row.Apart, row.Worst, tt.wantLogins, tt.apart, tt.wantWorst)
			}
			if tt.wantTraced == "" && len(row.Trace) > 0 || tt.wantTraced != "" && (len(row.Trace) != 2 || !strings.HasPrefix(row.Trace[0], tt.wantTraced+" ") || !strings.HasPrefix(row.Trace[1], tt.wantTraced+" ")) {
				t.Fatalf("trace %q, want the pair of %q", row.Trace, tt.wantTraced)
			}
		})
	}
}

// The worst pair's trace shows, under each answer, the figures its node
// predicted from, as sampled last before the answer was sent.
func TestTabsTracedWithTheirNodesFigures(t *testing.T) {
	v := tabsVisitor([]int{0, 1}, 10, "wait", 30, 10, "wait", 35)
	for i := range v.Events {
		v.Events[i].Sent = at(9.9)
	}
	sample := func(sec, ranked float64, tick float64) clockSample {
		return clockSample{At: at(sec), S: 5, FIFO: &fifoFigures{Ranked: ranked, ForecastAt: at(tick).Format(time.RFC3339Nano)}}
	}
	samples := [][]clockSample{
		{sample(9.5, 40, 9), sample(9.75, 41, 9), sample(10, 99, 9.9)},
		{sample(9.8, 38, 8)},
	}
	row := tabsAlike([]*visitor{v}, t0, samples)
	if len(row.Trace) != 4 {
		t.Fatalf("trace %q, want each answer and its node's figures", row.Trace)
	}
	for i, want := range []string{"node 1 at +9.75s: S 5.00, ranked 41 ", "node 2 at +9.80s: S 5.00, ranked 38 "} {
		if line := row.Trace[2*i+1]; !strings.Contains(line, want) {
			t.Errorf("trace line %q, want %q", line, want)
		}
	}
	if line := row.Trace[1]; !strings.HasSuffix(line, "from the tick 750ms before") {
		t.Errorf("trace line %q, want the age of the tick its figures are from", line)
	}
}

func TestSlotsShared(t *testing.T) {
	late := slotVisitor("p1-late", 1, 2, 10, 10, 10)
	late.Login, late.Strategy = "p1", "late-20s"
	tab := slotVisitor("p1", 1, 2, 10, 10, 10)
	waiting := slotVisitor("w", 1, 2, 10, 10, 10)
	waiting.Admitted = time.Time{}
	tests := []struct {
		name string
		vs   []*visitor
		want int
	}{
		{"apart", []*visitor{slotVisitor("a", 1, 2, 10, 10, 10), slotVisitor("b", 1, 3, 11, 11, 11)}, 0},
		{"two logins, one slot", []*visitor{slotVisitor("a", 1, 2, 10, 10, 10), slotVisitor("b", 1, 3, 10, 10, 10)}, 1},
		{"one login's tabs, one slot", func() []*visitor {
			a, b := slotVisitor("a", 1, 2, 10, 10, 10), slotVisitor("a2", 1, 2, 10, 10, 10)
			b.Login = "a"
			return []*visitor{a, b}
		}(), 0},
		{"a login with a late tab left out", []*visitor{slotVisitor("a", 1, 2, 10, 10, 10), tab, late}, 0},
		{"one not admitted", []*visitor{slotVisitor("a", 1, 2, 10, 10, 10), waiting}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := slotsShared(tt.vs); got != tt.want {
				t.Fatalf("%d slots shared, want %d", got, tt.want)
			}
		})
	}
}
