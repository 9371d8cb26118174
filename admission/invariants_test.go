package admission

import (
	"container/heap"
	"context"
	"slices"
	"testing"
	"time"
)

// honestSale runs honest visitors arriving at the given times through
// Decide, each attempting exactly at the checkpoint it is told, ticking
// the room every second, until all are admitted or the horizon. Places
// not admitted by then have a zero admitted time.
func honestSale(t *testing.T, g *Gate, room *Room, arrivals []time.Time, horizon time.Time) []fifoVisitor {
	t.Helper()
	ctx := context.Background()
	vs := make([]fifoVisitor, len(arrivals))
	q := attemptQueue{}
	for i, at := range arrivals {
		vs[i].arrive = at
		q = append(q, attemptAt{at: at, i: i})
	}
	heap.Init(&q)
	tick := arrivals[0].Truncate(time.Second)
	for q.Len() > 0 {
		ev := heap.Pop(&q).(attemptAt)
		if ev.at.After(horizon) {
			break
		}
		for !tick.After(ev.at) {
			room.Tick(tick)
			tick = tick.Add(time.Second)
		}
		v := &vs[ev.i]
		if v.token == "" {
			tk, err := g.Issue(room, Visitor{}, ev.at)
			if err != nil {
				t.Fatal(err)
			}
			v.token, v.claims, v.nonce = tk.Token, tk.Claims, solve(t, tk.Claims)
			heap.Push(&q, attemptAt{at: tk.Claims.NextAttempt(), i: ev.i})
			continue
		}
		v.attempts++
		d := g.Decide(ctx, room, Attempt{Token: v.token, Nonce: v.nonce, Now: ev.at})
		switch d.Outcome {
		case OutcomeAdmit:
			v.admitted = ev.at
		case OutcomeWait, OutcomeBusy:
			v.token = d.Next.Token
			heap.Push(&q, attemptAt{at: d.Next.Claims.NextAttempt(), i: ev.i})
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
// room a request every few seconds at most, however long it waits. In the
// rush-then-trickle room no honest place makes more than one attempt every
// 2 s (min_backoff) of its wait, on average.
func TestFIFOHonestPageAsksAtFewCheckpoints(t *testing.T) {
	vs, _, horizon := rushThenTrickle(t)
	worst, at := 0.0, 0
	for i, v := range vs {
		w := waitOf(v, horizon)
		if w < time.Minute {
			continue
		}
		if per := float64(v.attempts) / w.Seconds(); per > worst {
			worst, at = per, i
		}
	}
	t.Logf("most attempts a second: %.2f (visitor %d: %d attempts over %v)", worst, at, vs[at].attempts, waitOf(vs[at], horizon))
	if worst > 0.5 {
		t.Errorf("an honest page made %.2f attempts a second over a wait of %v, want at most 0.5", worst, waitOf(vs[at], horizon))
	}
}
