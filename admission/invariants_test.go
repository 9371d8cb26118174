package admission

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// honestSale runs honest visitors arriving at the given times through
// Decide, each attempting exactly at the checkpoint it is told, ticking
// the room every second, until all are admitted or the horizon. Places
// not admitted by then have a zero admitted time.
func honestSale(t *testing.T, g *Gate, room *Room, arrivals []time.Time, horizon time.Time) []fifoVisitor {
	t.Helper()
	return leavingSale(t, g, room, arrivals, horizon, func(int) bool { return false })
}

// leavingSale is honestSale where the visitors leave says so walk away
// after their first judged attempt answered wait (the claim in fifo):
// they never ask again, and count as never admitted. One given a slot
// first stays.
func leavingSale(t *testing.T, g *Gate, room *Room, arrivals []time.Time, horizon time.Time, leaves func(i int) bool) []fifoVisitor {
	t.Helper()
	return tickedSale(t, g, room, arrivals, horizon, leaves, nil, room.Tick)
}

// tickedSale is leavingSale with the room ticked by tick every second, and
// visitor i presenting late(i) after every moment it is told (its
// network's spread; nil: on time).
func tickedSale(t *testing.T, g *Gate, room *Room, arrivals []time.Time, horizon time.Time, leaves func(i int) bool, late func(i int) time.Duration, tick func(time.Time)) []fifoVisitor {
	t.Helper()
	told := func(at time.Time, i int) attemptAt {
		if late != nil {
			at = at.Add(late(i))
		}
		return attemptAt{at: at, i: i}
	}
	ctx := context.Background()
	vs := make([]fifoVisitor, len(arrivals))
	q := attemptQueue{}
	for i, at := range arrivals {
		vs[i].arrive = at
		q = append(q, attemptAt{at: at, i: i})
	}
	heap.Init(&q)
	next := arrivals[0].Truncate(time.Second)
	for q.Len() > 0 {
		ev := heap.Pop(&q).(attemptAt)
		if ev.at.After(horizon) {
			break
		}
		for !next.After(ev.at) {
			tick(next)
			next = next.Add(time.Second)
		}
		v := &vs[ev.i]
		if v.token == "" {
			tk, err := g.Issue(room, Visitor{}, ev.at)
			if err != nil {
				t.Fatal(err)
			}
			v.token, v.claims, v.nonce = tk.Token, tk.Claims, solve(t, tk.Claims)
			heap.Push(&q, told(tk.Claims.NextAttempt(), ev.i))
			continue
		}
		v.attempts++
		if v.attempts > 500 {
			t.Fatalf("visitor %d (pre-queue %v) not admitted after %d attempts, at %v", ev.i, v.pre, v.attempts, ev.at)
		}
		d := g.Decide(ctx, room, Attempt{Token: v.token, Nonce: v.nonce, Now: ev.at})
		switch d.Outcome {
		case OutcomeAdmit:
			v.admitted = ev.at
		case OutcomeWait, OutcomeBusy:
			v.token = d.Next.Token
			if v.attempts == 1 {
				// The first judged attempt claims the place's rank.
				v.pre = d.Next.Claims.Pos < 0
			}
			if d.Outcome == OutcomeWait && leaves(ev.i) {
				continue
			}
			heap.Push(&q, told(d.Next.Claims.NextAttempt(), ev.i))
		default:
			t.Fatalf("visitor %d at %v: %v (%v)", ev.i, ev.at, d.Outcome, d.Err)
		}
	}
	return vs
}

// waitOf is how long v waited, or until horizon if it was never admitted.
func waitOf(v fifoVisitor, horizon time.Time) time.Duration {
	if v.admitted.IsZero() {
		return horizon.Sub(v.arrive)
	}
	return v.admitted.Sub(v.arrive)
}

// rushThenTrickle is a fifo room at 20/s with W = 5 s: 300 arrivals in
// 3 s, then one every 8 s for 20 minutes (so ranks are still being handed
// out), run by honest pages for an hour. It returns the visitors (the rush
// first), the size of the rush and the horizon.
func rushThenTrickle(t *testing.T) ([]fifoVisitor, int, time.Time) {
	const luck = 5 * time.Second
	g := testGate(t, 20000)
	room := fifoRoom(t, 20, luck, StateQueue, time.Time{})
	var arrivals []time.Time
	const rush = 300
	for i := range rush { // 100 a second for 3 s
		arrivals = append(arrivals, t0.Add(time.Duration(i)*10*time.Millisecond))
	}
	for i := range 150 { // then one every 8 s for 20 minutes
		arrivals = append(arrivals, t0.Add(10*time.Second+time.Duration(i)*8*time.Second))
	}
	horizon := t0.Add(time.Hour)
	return honestSale(t, g, room, arrivals, horizon), rush, horizon
}

// TestFIFOEarlierArrivalGoesFirstWhenArrivalsThin: of two arrivals Δ
// apart the earlier goes first with probability 1 − ½·e^(−Δ/W), whatever
// the arrival rate does between them. A rush followed by a slow trickle
// of arrivals (one every 8 s, so ranks are still being handed out) must
// not hold the rush's unlucky places behind the trickle: every rush place
// is admitted before any place that arrived more than 10 W after it, and
// within a couple of minutes of its arrival.
func TestFIFOEarlierArrivalGoesFirstWhenArrivalsThin(t *testing.T) {
	const luck = 5 * time.Second
	vs, rush, horizon := rushThenTrickle(t)
	var worst time.Duration
	for _, v := range vs[:rush] {
		worst = max(worst, waitOf(v, horizon))
	}
	overtaken := 0
	for _, r := range vs[:rush] {
		if slices.ContainsFunc(vs[rush:], func(l fifoVisitor) bool {
			return l.arrive.Sub(r.arrive) > 10*luck && !l.admitted.IsZero() && waitOf(l, horizon)+l.arrive.Sub(r.arrive) < waitOf(r, horizon)
		}) {
			overtaken++
		}
	}
	t.Logf("longest wait of the rush: %v; rush places overtaken by arrivals 10 W later: %d", worst, overtaken)
	if overtaken > 0 {
		t.Errorf("%d of %d rush places were admitted after a place that arrived more than 10 W (%v) later, want none", overtaken, rush, 10*luck)
	}
	if worst > 2*time.Minute {
		t.Errorf("a rush place waited %v for a queue of %d at 20/s, want under 2 minutes", worst, rush)
	}
}

// TestFIFOHonestPageAsksAtFewCheckpoints: a waiting place is named a
// checkpoint every max_backoff while its turn is far, and a few around the
// moment the counter is expected to pass its key: an honest page costs the
// room a request every few seconds at most, however long it waits. In a
// room at 20/s whose crowd of 2,400 waits up to two minutes, arriving
// after the start or in the pre-queue (whose places approach their
// moments by halves), no honest place that waited a minute or more asks
// more than once every 4 s on average, and a place asks at most 5 times
// (after the start) or 10 (in the pre-queue: its claim, a checkpoint
// before the start, and more on the approach).
func TestFIFOHonestPageAsksAtFewCheckpoints(t *testing.T) {
	for _, tt := range []struct {
		name     string
		state    State
		attempts float64 // at most, on average
	}{
		{"after the start", StateQueue, 5},
		{"the pre-queue", StateScheduled, 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const crowd = 2400
			start := t0.Add(15 * time.Second)
			g := testGate(t, 20000)
			room := fifoRoom(t, 20, 5*time.Second, tt.state, start)
			var arrivals []time.Time
			for i := range crowd { // 200 a second for 12 s
				arrivals = append(arrivals, t0.Add(time.Duration(i)*5*time.Millisecond))
			}
			horizon := t0.Add(10 * time.Minute)
			vs := honestSale(t, g, room, arrivals, horizon)
			worst, at, long, attempts := 0.0, 0, 0, 0
			for i, v := range vs {
				attempts += v.attempts
				w := waitOf(v, horizon)
				if w < time.Minute {
					continue
				}
				long++
				if per := float64(v.attempts) / w.Seconds(); per > worst {
					worst, at = per, i
				}
			}
			mean := float64(attempts) / crowd
			t.Logf("%d places waited a minute or more; most attempts a second among them: %.3f (visitor %d: %d attempts over %v); %.2f attempts a place", long, worst, at, vs[at].attempts, waitOf(vs[at], horizon), mean)
			if long < crowd/3 {
				t.Fatalf("%d places waited a minute or more, want a third of the crowd", long)
			}
			if worst > 0.25 {
				t.Errorf("an honest page made %.3f attempts a second over a wait of %v, want at most 0.25", worst, waitOf(vs[at], horizon))
			}
			if mean > tt.attempts {
				t.Errorf("%.2f attempts a place, want at most %v", mean, tt.attempts)
			}
		})
	}
}

// TestLeaversDoNotSlowTheRoom: a place that did not come when told does
// not count towards the clock's lead, and the lead counts the passed
// places as the share of them that comes, so places that walked away
// cannot hold the room back, in either order: it admits at the rate while
// visitors wait. In a room admitting 10 a second, 200 visitors who
// stay arrive over 10 s; in some runs as many again, or three times as
// many, arrive among them and leave after their first answer.
func TestLeaversDoNotSlowTheRoom(t *testing.T) {
	const rate = 10
	for _, tt := range []struct {
		name   string
		order  Order
		n      int
		leaves func(int) bool
	}{
		{"fifo, nobody leaves", OrderFIFO, 200, func(int) bool { return false }},
		{"fifo, as many leave after their claim", OrderFIFO, 400, func(i int) bool { return i%2 == 1 }},
		{"lottery, nobody leaves", OrderLottery, 200, func(int) bool { return false }},
		{"lottery, as many leave after their first answer", OrderLottery, 400, func(i int) bool { return i%2 == 1 }},
		{"lottery, three times as many leave", OrderLottery, 800, func(i int) bool { return i%4 != 0 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := testGate(t, 20000)
			room := fifoRoom(t, rate, 5*time.Second, StateQueue, time.Time{})
			if tt.order == OrderLottery {
				room = testRoom(t, func(c *RoomConfig) {
					c.Rate, c.Burst, c.Adaptive, c.Window, c.Memory = rate, rate, true, time.Minute, 15*time.Minute
				})
			}
			var arrivals []time.Time
			step := 10 * time.Second / time.Duration(tt.n)
			for i := range tt.n {
				arrivals = append(arrivals, t0.Add(time.Duration(i)*step))
			}
			vs := leavingSale(t, g, room, arrivals, t0.Add(10*time.Minute), tt.leaves)
			var admitted []time.Time
			stayed := 0
			for i, v := range vs {
				if !tt.leaves(i) {
					stayed++
					if v.admitted.IsZero() {
						t.Fatalf("visitor %d stayed and was never admitted", i)
					}
				}
				if !v.admitted.IsZero() {
					admitted = append(admitted, v.admitted)
				}
			}
			// From 5 s on, visitors wait until the last goes in (they
			// arrive at twice the rate for 10 s). Every admission counts:
			// a visitor who meant to leave and was given a slot stays.
			windows := rateWindows(admitted, t0.Add(5*time.Second))
			t.Logf("%d stayed, %d admitted, the last %v after the first arrival; 10 s windows every 5 s from 5 s: %v", stayed, len(admitted), slices.MaxFunc(admitted, time.Time.Compare).Sub(t0), windows)
			for i, in := range windows {
				if in < 9*rate {
					t.Errorf("the window from %d s admitted %d while visitors waited, want the rate's %d (-10%%)", 5+5*i, in, 10*rate)
				}
			}
		})
	}
}

// rateWindows counts the admissions in each 10 s window, every 5 s from
// from, that ends 5 s before the last admission or earlier: while
// visitors still wait, each such window should admit at the rate.
func rateWindows(admitted []time.Time, from time.Time) []int {
	if len(admitted) == 0 {
		return nil
	}
	last := slices.MaxFunc(admitted, time.Time.Compare)
	var windows []int
	for ; !from.Add(15 * time.Second).After(last); from = from.Add(5 * time.Second) {
		in := 0
		for _, at := range admitted {
			if !at.Before(from) && at.Before(from.Add(10*time.Second)) {
				in++
			}
		}
		windows = append(windows, in)
	}
	return windows
}

// twinSale runs a fifo room admitting 1 a second with a crowd of 60
// logins arriving in the first 0.6 s and one more login, twinName, that
// takes its token at issue and presents it first at claim (and from then
// on at each checkpoint it is told, as the crowd does). It returns when
// the twin was admitted.
func twinSale(t *testing.T, twinName string, issue, claim time.Time) time.Time {
	t.Helper()
	ctx := context.Background()
	g := testGate(t, 20000)
	room := fifoRoom(t, 1, 5*time.Second, StateQueue, time.Time{})
	type visitor struct {
		who           Visitor
		issue, next   time.Time
		token, nonce  string
		admitted      time.Time
		started, done bool
	}
	vs := make([]*visitor, 0, 61)
	for i := range 60 {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		vs = append(vs, &visitor{who: Visitor{Subject: fmt.Sprint("fan", i)}, issue: at, next: at})
	}
	twin := &visitor{who: Visitor{Subject: twinName}, issue: issue, next: issue}
	vs = append(vs, twin)
	tick := t0
	for now := t0; now.Before(t0.Add(30 * time.Minute)); now = now.Add(10 * time.Millisecond) {
		for !tick.After(now) {
			room.Tick(tick)
			tick = tick.Add(time.Second)
		}
		for _, v := range vs {
			if v.done || now.Before(v.next) {
				continue
			}
			if !v.started {
				tk, err := g.Issue(room, v.who, now)
				if err != nil {
					t.Fatal(err)
				}
				v.started, v.token, v.nonce, v.next = true, tk.Token, solve(t, tk.Claims), tk.Claims.NextAttempt()
				if v == twin && claim.After(v.next) {
					v.next = claim
				}
				continue
			}
			d := g.Decide(ctx, room, Attempt{Token: v.token, Nonce: v.nonce, Visitor: v.who, Now: now})
			switch d.Outcome {
			case OutcomeAdmit:
				v.done, v.admitted = true, now
			case OutcomeWait, OutcomeBusy, OutcomeEarly:
				v.token, v.next = d.Next.Token, d.Next.Claims.NextAttempt()
			default:
				t.Fatalf("%s at %v: %v (%v)", v.who.Subject, now, d.Outcome, d.Err)
			}
		}
		if twin.done {
			return twin.admitted
		}
	}
	t.Fatal("the twin was never admitted")
	return time.Time{}
}

// TestFIFOUnclaimedTokenAgeBuysNothing: the entry is the claim, so a token
// taken long before its claim is worth no more than one taken just
// before it. A login that took its token with the crowd and presents it
// first later is admitted no earlier (beyond the network's second) than
// its twin that took its token two seconds before the same claim.
func TestFIFOUnclaimedTokenAgeBuysNothing(t *testing.T) {
	for _, claimAfter := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 60 * time.Second, 90 * time.Second} {
		t.Run(claimAfter.String(), func(t *testing.T) {
			claim := t0.Add(claimAfter)
			honest := twinSale(t, "twin", claim.Add(-2*time.Second), claim)
			aged := twinSale(t, "twin", t0, claim)
			t.Logf("claimed at %v: fresh token admitted at %v, aged token at %v", claimAfter, honest.Sub(t0), aged.Sub(t0))
			if aged.Before(honest.Add(-time.Second)) {
				t.Errorf("a token taken %v before its claim got in %v before its fresh twin", claimAfter, honest.Sub(aged))
			}
		})
	}
}

// TestFIFOLateClaimGainsNothing: presenting late gains nothing. Logins
// that arrive at 10 s, just after a crowd, and present their token first
// 10 s after their first checkpoint (when nobody else has claimed for
// 10 s) are admitted no earlier, on average over 20 logins, than their
// twins that present at the checkpoint they were told.
func TestFIFOLateClaimGainsNothing(t *testing.T) {
	arrive := t0.Add(10 * time.Second)
	var gain time.Duration
	const n = 20
	for i := range n {
		name := fmt.Sprint("late", i)
		honest := twinSale(t, name, arrive, arrive)
		late := twinSale(t, name, arrive, arrive.Add(12*time.Second))
		gain += honest.Sub(late)
	}
	t.Logf("presenting 10 s late gained %v on average", gain/n)
	if gain/n > time.Second {
		t.Errorf("logins presenting their claim 10 s late got in %v earlier than their honest twins on average, want no gain", gain/n)
	}
}

// TestRacingClaimsOfOnePlaceAreAnsweredAlike: every version of a token
// from before its claim is answered with the rank and the checkpoint the
// claim took, however many are presented at once: a client racing its
// first version takes one rank and learns one checkpoint. 400 logins each
// present their first version 16 times at once (their requests 20 ms
// apart, as one client's race arrives).
func TestRacingClaimsOfOnePlaceAreAnsweredAlike(t *testing.T) {
	g := testGate(t, 1000)
	room := fifoRoom(t, 1, time.Second, StateQueue, time.Time{})
	for range 30 { // a queue ahead, so the places wait
		claimedAt(t, g, room, t0)
	}
	const logins, n = 400, 16
	split := 0
	for l := range logins {
		who := Visitor{Subject: fmt.Sprint("racer", l)}
		tk, err := g.Issue(room, who, t0.Add(time.Duration(l)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		nonce := solve(t, tk.Claims)
		answers := make([]Decision, n)
		var wg sync.WaitGroup
		for i := range n {
			// Each racer on a gate of its own, as at another node: one
			// gate's turns would judge them one after another.
			racer := *g
			racer.turns = NewTurns()
			wg.Go(func() {
				at := tk.Claims.NextAttempt().Add(time.Duration(i) * 20 * time.Millisecond)
				answers[i] = racer.Decide(context.Background(), room, Attempt{Token: tk.Token, Nonce: nonce, Visitor: who, Now: at})
			})
		}
		wg.Wait()
		pos, next := map[int64]bool{}, map[int64]bool{}
		for i, d := range answers {
			if d.Next.Claims == nil {
				t.Fatalf("login %d, attempt %d: %v (%v)", l, i, d.Outcome, d.Err)
			}
			pos[d.Next.Claims.Pos], next[d.Next.Claims.Nxt] = true, true
		}
		if len(pos) != 1 {
			t.Fatalf("login %d: %d racing versions took %d ranks, want one", l, n, len(pos))
		}
		if len(next) != 1 {
			split++
		}
	}
	if split > 0 {
		t.Errorf("%d of %d logins racing their first version were told two checkpoints, want one each", split, logins)
	}
	if got := room.View(t0.Add(500 * time.Second)).Ranked; got != 30+logins {
		t.Errorf("ranks taken: %v, want %d", got, 30+logins)
	}
}

// TestLotteryClusterClockPassesItsShare: in a room shared by several
// nodes, the ticking node's keys stand for the room's population over
// their number, and the clock passes them at the rate: the places of the
// ticking node are found eligible at its share of the rate, whatever that
// share (nodes behind an uneven balancer, a node that joined late). A
// room admitting 1 a second whose ticking node holds 10 of the room's
// waiting places (all of them, 10%, 1%) admits half of them well within
// the time the room takes to admit its whole population twice over.
func TestLotteryClusterClockPassesItsShare(t *testing.T) {
	for _, population := range []float64{10, 100, 1000} {
		t.Run(fmt.Sprint("population ", population), func(t *testing.T) {
			g := testGate(t, 1000)
			room := testRoom(t, func(c *RoomConfig) {
				c.Rate, c.Burst, c.Adaptive, c.Tau = 1, 1, true, time.Second
				c.Memory = 15 * time.Minute
			})
			var arrivals []time.Time
			for i := range 10 {
				arrivals = append(arrivals, t0.Add(time.Duration(i)*100*time.Millisecond))
			}
			horizon := t0.Add(time.Duration(2*population) * time.Second)
			vs := tickedSale(t, g, room, arrivals, horizon, func(int) bool { return false }, nil, func(now time.Time) {
				// The other nodes' places drain as this node's do.
				room.TickWith(now, population/10*room.Population(now), 0)
			})
			in := 0
			for _, v := range vs {
				if !v.admitted.IsZero() {
					in++
				}
			}
			t.Logf("population %v: %d of the ticking node's 10 places admitted in %v; the clock at %.4f", population, in, horizon.Sub(t0), room.View(horizon).Clock.At(horizon))
			if in < 5 {
				t.Errorf("population %v: %d of the ticking node's 10 places were admitted in %v at 1 a second, want at least 5", population, in, horizon.Sub(t0))
			}
		})
	}
}

// TestFIFOPreQueueGoesFirstWhenPlacesLeave: the pre-queue goes before
// every later arrival even when some of its places walk away. A third or
// half of a scheduled room's places leave after the answer to their claim
// (the later arrivals come at twice the rate): the counter must not pass
// a later arrival's key while a pre-queue place it passed is still to be
// found, or the later arrival could take a slot first, and must still
// admit at the rate. The stop is the room's, not a tick's: an operator
// pausing and resuming the room while it holds keeps it. A pre-queue
// page up to a second late for every moment it is told (the network's
// spread) is served as asked, not from its moment: the counter waits for
// it, so no later arrival is let in first.
func TestFIFOPreQueueGoesFirstWhenPlacesLeave(t *testing.T) {
	const rate = 5
	for _, tt := range []struct {
		name       string
		leaveEvery int
		pause      bool // paused and resumed at once when held near the end
		late       bool // pre-queue pages up to 1 s late for every moment told
	}{
		{"nobody leaves", 0, false, false},
		{"a third leaves", 3, false, false},
		{"half leaves", 2, false, false},
		{"half leaves, paused and resumed while held", 2, true, false},
		{"a fifth leaves, pre-queue pages up to 1 s late", 5, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := t0.Add(30 * time.Second)
			g := testGate(t, 20000)
			room := fifoRoom(t, rate, 5*time.Second, StateScheduled, start)
			var arrivals []time.Time
			for i := range 100 { // the pre-queue, over 25 s
				arrivals = append(arrivals, t0.Add(time.Duration(i)*250*time.Millisecond))
			}
			for i := range 100 { // later arrivals, over 10 s from the start
				arrivals = append(arrivals, start.Add(time.Duration(i)*100*time.Millisecond))
			}
			leaves := func(i int) bool { return tt.leaveEvery > 0 && i%tt.leaveEvery == 1 }
			var late func(int) time.Duration
			if tt.late {
				late = func(i int) time.Duration {
					if i >= 100 {
						return 0
					}
					return time.Duration(i*7%11) * 100 * time.Millisecond
				}
			}
			paused := false
			tick := func(now time.Time) {
				room.Tick(now)
				v := room.View(now)
				if !tt.pause || paused || v.Hold == 0 || v.Clock.At(now) < v.Hold-3 {
					return
				}
				paused = true
				if err := room.SetState(StatePaused, time.Time{}, now); err != nil {
					t.Fatal(err)
				}
				room.Tick(now) // a tick while paused
				if err := room.SetState(StateQueue, time.Time{}, now); err != nil {
					t.Fatal(err)
				}
				if past := room.View(now.Add(time.Second)).Clock.At(now.Add(time.Second)) - v.Hold; past > 0 {
					t.Errorf("resumed, the counter runs %.2f past the pre-queue's end it was held at", past)
				}
			}
			vs := tickedSale(t, g, room, arrivals, start.Add(10*time.Minute), leaves, late, tick)
			if tt.pause && !paused {
				t.Fatal("the counter was never held near the pre-queue's end")
			}
			var lastPre time.Time
			var admitted []time.Time
			for i, v := range vs {
				if v.pre && !v.admitted.IsZero() && v.admitted.After(lastPre) {
					lastPre = v.admitted
				}
				if !leaves(i) && v.admitted.IsZero() {
					t.Fatalf("visitor %d stayed and was never admitted", i)
				}
				if !v.admitted.IsZero() {
					admitted = append(admitted, v.admitted)
				}
			}
			ahead := 0
			for _, v := range vs {
				if !v.pre && !v.admitted.IsZero() && v.admitted.Before(lastPre) {
					ahead++
				}
			}
			windows := rateWindows(admitted, start)
			t.Logf("last pre-queue place admitted %v after the start; %d later arrivals before it; 10 s windows every 5 s from the start: %v", lastPre.Sub(start), ahead, windows)
			if ahead > 0 {
				t.Errorf("%d later arrivals admitted before the pre-queue's last place", ahead)
			}
			for i, in := range windows {
				if float64(in) < 0.95*10*rate {
					t.Errorf("the window from %d s admitted %d while visitors waited, want the rate's %d (-5%%)", 5*i, in, 10*rate)
				}
			}
		})
	}
}

// TestFIFOFixedSpeedSetWhileHeldReleasesTheCounter: fixed_speed turned on
// while the counter holds at the pre-queue's end (a reload, or another
// node's stored config) releases the stop: the counter runs at the rate
// and every place that stays is admitted.
func TestFIFOFixedSpeedSetWhileHeldReleasesTheCounter(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(room *Room, now time.Time) error
	}{
		{"reloaded", func(room *Room, now time.Time) error { return room.SetTau(5*time.Second, false, now) }},
		{"another node's config", func(room *Room, _ time.Time) error { return room.SetSpeedRule(5*time.Second, false) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := t0.Add(30 * time.Second)
			g := testGate(t, 20000)
			room := fifoRoom(t, 5, 5*time.Second, StateScheduled, start)
			var arrivals []time.Time
			for i := range 100 {
				arrivals = append(arrivals, t0.Add(time.Duration(i)*250*time.Millisecond))
			}
			for i := range 100 {
				arrivals = append(arrivals, start.Add(time.Duration(i)*100*time.Millisecond))
			}
			leaves := func(i int) bool { return i%2 == 1 }
			set := false
			tick := func(now time.Time) {
				room.Tick(now)
				if set || room.View(now).Hold == 0 {
					return
				}
				set = true
				if err := tt.set(room, now); err != nil {
					t.Fatal(err)
				}
			}
			vs := tickedSale(t, g, room, arrivals, start.Add(3*time.Minute), leaves, nil, tick)
			if !set {
				t.Fatal("the counter never held")
			}
			for i, v := range vs {
				if !leaves(i) && v.admitted.IsZero() {
					t.Errorf("visitor %d stayed and was never admitted in 3 minutes at 5/s", i)
				}
			}
		})
	}
}
