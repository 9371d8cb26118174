package admission

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
)

func TestParseOrder(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Order
		ok   bool
	}{{"", OrderLottery, true}, {"lottery", OrderLottery, true}, {"fifo", OrderFIFO, true}, {"FIFO", "", false}, {"lifo", "", false}} {
		got, err := ParseOrder(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseOrder(%q) = %q, %v", tt.in, got, err)
		}
	}
}

// fifoVisitor is one honest visitor of a domain-level fifo sale: it
// attempts exactly at each checkpoint it is told.
type fifoVisitor struct {
	arrive   time.Time
	pre      bool
	token    string
	nonce    string
	claims   *tokens.WaitClaims
	admitted time.Time
	attempts int
}

type attemptQueue []attemptAt

type attemptAt struct {
	at time.Time
	i  int
}

func (q attemptQueue) Len() int           { return len(q) }
func (q attemptQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q attemptQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *attemptQueue) Push(x any)        { *q = append(*q, x.(attemptAt)) }
func (q *attemptQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// fifoSale is honestSale where every visitor must be admitted by the
// horizon.
func fifoSale(t *testing.T, g *Gate, room *Room, arrivals []time.Time, horizon time.Time) []fifoVisitor {
	t.Helper()
	vs := honestSale(t, g, room, arrivals, horizon)
	for i, v := range vs {
		if v.admitted.IsZero() {
			t.Fatalf("sale not over by %v: visitor %d (pre-queue %v) not admitted", horizon, i, v.pre)
		}
	}
	return vs
}

func fifoRoom(t *testing.T, rate float64, luck time.Duration, state State, start time.Time) *Room {
	return testRoom(t, func(c *RoomConfig) {
		c.Order, c.Luck, c.Rate, c.Burst, c.Adaptive = OrderFIFO, luck, rate, rate, true
		c.State, c.SaleStart, c.Window = state, start, time.Minute
		c.Memory = 15 * time.Minute
	})
}

// spearman is Spearman's rank correlation (no ties expected).
func spearman(x, y []float64) float64 {
	rank := func(a []float64) []float64 {
		idx := make([]int, len(a))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(i, j int) bool { return a[idx[i]] < a[idx[j]] })
		r := make([]float64, len(a))
		for k, i := range idx {
			r[i] = float64(k)
		}
		return r
	}
	rx, ry := rank(x), rank(y)
	n := float64(len(x))
	var d2 float64
	for i := range rx {
		d2 += (rx[i] - ry[i]) * (rx[i] - ry[i])
	}
	return 1 - 6*d2/(n*(n*n-1))
}

// TestFIFOPreQueueIsALottery: in a fifo room the pre-queue's keys follow the
// lottery numbers alone (|rho(arrival, key)| < 0.02, rho(v, key) = 1 over
// 20,000 places), and through Decide its admission order follows v
// (rho > 0.99), all of it before anyone who arrived after the start.
func TestFIFOPreQueueIsALottery(t *testing.T) {
	start := t0.Add(time.Hour)
	t.Run("keys", func(t *testing.T) {
		g := testGate(t, 10)
		room := fifoRoom(t, 100, 2*time.Second, StateScheduled, start)
		const n = 20000
		var claims []*tokens.WaitClaims
		for i := range n {
			claims = append(claims, claimedAt(t, g, room, t0.Add(time.Duration(i)*100*time.Millisecond)))
		}
		view := room.View(start)
		if view.PreQueue != n {
			t.Fatalf("pre-queue %v, want %d", view.PreQueue, n)
		}
		arrival, key, lot := make([]float64, n), make([]float64, n), make([]float64, n)
		for i, c := range claims {
			if c.Pos >= 0 {
				t.Fatalf("pre-queue token %d has rank %d, want negative", i, c.Pos)
			}
			arrival[i], key[i], lot[i] = float64(i), g.fifoKey(&view, c, g.Codec().Keys().Lottery(c.Lot)), g.Codec().Keys().Lottery(c.Lot)
		}
		if rho := spearman(arrival, key); math.Abs(rho) > 0.02 {
			t.Errorf("rho(arrival, key) = %.4f, want |rho| < 0.02", rho)
		}
		if rho := spearman(lot, key); rho < 0.9999 {
			t.Errorf("rho(v, key) = %.4f, want 1", rho)
		}
		after := claimedAt(t, g, room, start)
		if k := g.fifoKey(&view, after, g.Codec().Keys().Lottery(after.Lot)); k < slices.Max(key) {
			t.Errorf("a place taken at the start has key %v, before the pre-queue's last %v", k, slices.Max(key))
		}
	})
	t.Run("admissions", func(t *testing.T) {
		g := testGate(t, 10000)
		room := fifoRoom(t, 20, 2*time.Second, StateScheduled, start)
		rnd := rand.New(rand.NewPCG(1, 2))
		var arrivals []time.Time
		for range 1500 {
			arrivals = append(arrivals, start.Add(-time.Duration(rnd.Float64()*float64(10*time.Minute))))
		}
		for range 500 {
			arrivals = append(arrivals, start.Add(time.Duration(rnd.Float64()*float64(20*time.Second))))
		}
		vs := fifoSale(t, g, room, arrivals, start.Add(time.Hour))
		var arrival, admit, lot []float64
		lastPre, firstPost := time.Time{}, time.Time{}
		for _, v := range vs {
			if !v.pre {
				if firstPost.IsZero() || v.admitted.Before(firstPost) {
					firstPost = v.admitted
				}
				continue
			}
			lastPre = later(lastPre, v.admitted)
			arrival = append(arrival, float64(v.arrive.UnixNano()))
			admit = append(admit, float64(v.admitted.UnixNano()))
			lot = append(lot, g.Codec().Keys().Lottery(v.claims.Lot))
		}
		if rho := spearman(lot, admit); rho < 0.99 {
			t.Errorf("rho(v, admission) = %.4f in the pre-queue, want > 0.99", rho)
		}
		if rho := spearman(arrival, admit); math.Abs(rho) > 0.1 {
			t.Errorf("rho(arrival, admission) = %.4f in the pre-queue, want about 0", rho)
		}
		if firstPost.Before(lastPre.Add(-time.Second)) {
			t.Errorf("a later arrival was admitted at %v, before the pre-queue's last at %v", firstPost.Sub(start), lastPre.Sub(start))
		}
	})
}

// claimedAt is a place taken at the given time and claimed at its first
// checkpoint: its claims with its rank.
func claimedAt(t testing.TB, g *Gate, room *Room, at time.Time) *tokens.WaitClaims {
	t.Helper()
	tk, err := g.Issue(room, Visitor{}, at)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Claims.Pos != 0 {
		t.Fatalf("a token took rank %d before it proved its work", tk.Claims.Pos)
	}
	d := g.Decide(context.Background(), room, Attempt{Token: tk.Token, Nonce: solve(t, tk.Claims), Now: tk.Claims.NextAttempt()})
	if d.Claims == nil || d.Claims.Pos == 0 {
		t.Fatalf("first attempt: %v (%v), no rank", d.Outcome, d.Err)
	}
	return d.Claims
}

// firstShare is the share of pairs of arrivals about delta apart in which
// the earlier one was admitted first.
func firstShare(vs []fifoVisitor, delta time.Duration) (float64, int) {
	byArrival := slices.Clone(vs)
	slices.SortFunc(byArrival, func(a, b fifoVisitor) int { return a.arrive.Compare(b.arrive) })
	first, pairs := 0, 0
	j := 0
	for i := range byArrival {
		for j < len(byArrival) && byArrival[j].arrive.Sub(byArrival[i].arrive) < delta {
			j++
		}
		if j == len(byArrival) {
			break
		}
		if d := byArrival[j].arrive.Sub(byArrival[i].arrive); d > delta*11/10+time.Millisecond {
			continue
		}
		pairs++
		if byArrival[i].admitted.Before(byArrival[j].admitted) {
			first++
		}
	}
	return float64(first) / float64(pairs), pairs
}

// TestFIFOEarlierArrivalGoesFirst: after the start, while arrivals exceed
// the rate, an earlier arrival is admitted first with probability
// 1 − ½·e^(−Δ/W) (within 0.03 at Δ = 100 ms, W and 5W), mean waits by
// arrival decile never fall, and the rate is held within 5% while the queue
// is non-empty.
func TestFIFOEarlierArrivalGoesFirst(t *testing.T) {
	const luck = 2 * time.Second
	g := testGate(t, 20000)
	room := fifoRoom(t, 40, luck, StateQueue, time.Time{})
	// 50 a second for two minutes, evenly: 25% more than the rate.
	var arrivals []time.Time
	for i := range 6000 {
		arrivals = append(arrivals, t0.Add(time.Duration(i)*20*time.Millisecond))
	}
	vs := fifoSale(t, g, room, arrivals, t0.Add(time.Hour))
	// The first seconds, before the issue rate is measured, have no luck.
	vs = vs[1000:]
	for _, delta := range []time.Duration{100 * time.Millisecond, luck, 5 * luck} {
		got, pairs := firstShare(vs, delta)
		want := 1 - 0.5*math.Exp(-delta.Seconds()/luck.Seconds())
		t.Logf("Δ = %v: earlier first in %.4f of %d pairs, want %.4f", delta, got, pairs, want)
		if math.Abs(got-want) > 0.03 {
			t.Errorf("Δ = %v: earlier arrival first in %.4f of pairs, want %.4f ± 0.03", delta, got, want)
		}
	}
	var waits [10]time.Duration
	per := len(vs) / 10
	for d := range 10 {
		var sum time.Duration
		for _, v := range vs[d*per : (d+1)*per] {
			sum += v.admitted.Sub(v.arrive)
		}
		waits[d] = sum / time.Duration(per)
	}
	t.Logf("mean wait by arrival decile: %v", waits)
	for d := 1; d < 10; d++ {
		if waits[d] < waits[d-1] {
			t.Errorf("decile %d waits %v, less than decile %d's %v", d+1, waits[d], d, waits[d-1])
		}
	}
	checkRateHeld(t, vs, 40, 0.05)
}

// TestFIFOStartUsesTheRate: a scheduled fifo room's pre-queue, claimed
// over the half minute before the start while it grew, is admitted at the
// rate from the start: the counter reads a pre-queue place's key at the
// pre-queue's size at the start, not at its size when the place was last
// seen (read so, the first keys lie far below where they are, the counter
// stops short of them, and the first seconds admit a fraction of the
// rate).
func TestFIFOStartUsesTheRate(t *testing.T) {
	for _, rate := range []float64{3, 10} {
		t.Run(fmt.Sprint(rate, "/s"), func(t *testing.T) {
			start := t0.Add(time.Hour)
			g := testGate(t, 10000)
			room := fifoRoom(t, rate, 2*time.Second, StateScheduled, start)
			rnd := rand.New(rand.NewPCG(3, 4))
			var arrivals []time.Time
			for range int(50 * rate) {
				arrivals = append(arrivals, start.Add(-time.Duration(rnd.Float64()*float64(30*time.Second))))
			}
			vs := fifoSale(t, g, room, arrivals, start.Add(time.Hour))
			for w := start; w.Before(start.Add(30 * time.Second)); w = w.Add(10 * time.Second) {
				n := 0
				for _, v := range vs {
					if !v.admitted.Before(w) && v.admitted.Before(w.Add(10*time.Second)) {
						n++
					}
				}
				if share := float64(n) / (rate * 10); share < 0.95 {
					t.Errorf("the window at %v after the start admitted %d, %.0f%% of the rate", w.Sub(start), n, 100*share)
				}
			}
		})
	}
}

// checkRateHeld checks admissions per 10-second window, over the windows
// in which the queue was never empty, against the target rate.
func checkRateHeld(t *testing.T, vs []fifoVisitor, rate, tolerance float64) {
	t.Helper()
	admits := make([]time.Time, 0, len(vs))
	for _, v := range vs {
		admits = append(admits, v.admitted)
	}
	slices.SortFunc(admits, time.Time.Compare)
	// The queue is non-empty while someone who arrived is not yet admitted.
	waiting := func(at time.Time) bool {
		for _, v := range vs {
			if !v.arrive.After(at) && v.admitted.After(at) {
				return true
			}
		}
		return false
	}
	from := admits[0].Truncate(10 * time.Second).Add(10 * time.Second)
	windows := 0
	for w := from; w.Add(10 * time.Second).Before(admits[len(admits)-1]); w = w.Add(10 * time.Second) {
		if !waiting(w) || !waiting(w.Add(10*time.Second)) {
			continue
		}
		n := 0
		for _, a := range admits {
			if !a.Before(w) && a.Before(w.Add(10*time.Second)) {
				n++
			}
		}
		windows++
		if share := float64(n) / (rate * 10); math.Abs(share-1) > tolerance {
			t.Errorf("window at %v admitted %d, %.1f%% of the target", w.Sub(admits[0]), n, 100*share)
		}
	}
	if windows < 3 {
		t.Errorf("only %d windows with a queue", windows)
	}
}

// TestFreeTokensTakeNoRanks: 2,000 tokens taken over 5 s and never
// presented take no ranks the counter must pass: a rank is taken at a
// place's first judged attempt with its work solved, so the next 100
// visitors wait as long as without them (within a second: the free tokens
// consume the seeded draws, so the two runs' visitors draw differently).
func TestFreeTokensTakeNoRanks(t *testing.T) {
	wait := func(free int) time.Duration {
		g := testGate(t, 1000)
		room := fifoRoom(t, 10, time.Second, StateQueue, time.Time{})
		for i := range free { // taken over 5 s, never presented
			at := t0.Add(time.Duration(i) * 5 * time.Second / time.Duration(free))
			if _, err := g.Issue(room, Visitor{}, at); err != nil {
				t.Fatal(err)
			}
		}
		for s := t0; s.Before(t0.Add(5 * time.Second)); s = s.Add(time.Second) {
			room.Tick(s)
		}
		var arrivals []time.Time
		for i := range 100 {
			arrivals = append(arrivals, t0.Add(5*time.Second+time.Duration(i)*100*time.Millisecond))
		}
		vs := fifoSale(t, g, room, arrivals, t0.Add(time.Hour))
		var waits []time.Duration
		for _, v := range vs {
			waits = append(waits, v.admitted.Sub(v.arrive))
		}
		slices.Sort(waits)
		return waits[len(waits)/2]
	}
	base, flooded := wait(0), wait(2000)
	t.Logf("median wait of the next 100: %v without free tokens, %v behind 2,000", base, flooded)
	if flooded > base+time.Second {
		t.Errorf("2,000 free tokens raised the next visitors' median wait from %v to %v", base, flooded)
	}
}

// TestClaimReplayTakesOneRank: every version of a token from before its
// claim names the rank the claim took; presenting it again takes none.
func TestClaimReplayTakesOneRank(t *testing.T) {
	g := testGate(t, 100)
	room := fifoRoom(t, 1, time.Second, StateQueue, time.Time{})
	for range 20 { // a queue ahead, so the place waits
		claimedAt(t, g, room, t0)
	}
	tk, err := g.Issue(room, Visitor{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	nonce := solve(t, tk.Claims)
	var pos []int64
	for i := range 5 {
		at := tk.Claims.NextAttempt().Add(time.Duration(i) * time.Second)
		d := g.Decide(context.Background(), room, Attempt{Token: tk.Token, Nonce: nonce, Now: at})
		if d.Next.Claims == nil {
			t.Fatalf("attempt %d: %v (%v)", i, d.Outcome, d.Err)
		}
		pos = append(pos, d.Next.Claims.Pos)
	}
	if slices.Min(pos) != slices.Max(pos) || pos[0] == 0 {
		t.Fatalf("the same token presented 5 times claimed ranks %v, want one", pos)
	}
	if got := room.View(t0.Add(10 * time.Second)).Ranked; got != 21 {
		t.Fatalf("ranks taken: %v, want 21", got)
	}
}

// TestLuckSpanCountsEveryNodesArrivals: a fifo place's luck span is the
// luck window times the rate arrivals are ranked at in the whole room:
// on a node that sees a share of them, the room's sum once published,
// never less than the node's own.
func TestLuckSpanCountsEveryNodesArrivals(t *testing.T) {
	room := fifoRoom(t, 10, 2*time.Second, StateQueue, time.Time{})
	for i := range 20 { // 2 a second here
		if _, _, err := room.rank(context.Background(), t0.Add(time.Duration(i)*500*time.Millisecond), false); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(10 * time.Second)
	for _, tt := range []struct {
		room float64 // the room's rate, as published
		want float64
	}{
		{0, 4},   // nothing published yet: this node's own
		{20, 40}, // ten times as many arrive at the room
		{1, 4},   // a sum that lags this node's own count
		{-1, 4},  // a nonsense sum is ignored (the last one stands)
		{0.5, 4},
	} {
		room.NoteRoomIssueRate(tt.room)
		if got := room.luckSpan(now); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("room rate %v: luck span %v ranks, want %v", tt.room, got, tt.want)
		}
	}
}

// TestFIFOCounterLeadsTheRoomsPassedPlaces: on several nodes the fifo
// counter keeps its lead over the places every node passed and has not
// admitted (their published sum), not over this node's scaled by its
// share: with the room's lead met elsewhere it waits, with none passed it
// passes this node's keys, and a node that publishes leads by a tick more
// than one alone, whose own view of the counter is never stale. A sum no
// node published lately (the store out of reach) stands for nothing.
func TestFIFOCounterLeadsTheRoomsPassedPlaces(t *testing.T) {
	const rate = 3.0
	speed := func(publish bool, roomPassed float64, noted time.Duration) float64 {
		room := fifoRoom(t, rate, 2*time.Second, StateQueue, time.Time{})
		now := t0
		for i := range 20 {
			if _, _, err := room.rank(context.Background(), now.Add(time.Duration(i)*100*time.Millisecond), false); err != nil {
				t.Fatal(err)
			}
		}
		now = now.Add(3 * time.Second)
		v := room.View(now)
		for i := range 20 {
			room.ObservePresent(now, fmt.Sprint("place-", i), v.Clock.At(now)+float64(i)+0.5)
		}
		if publish {
			room.NoteRoomPassed(roomPassed, 0, now.Add(-noted))
		}
		room.mu.Lock()
		defer room.mu.Unlock()
		return room.fifoSpeed(&v, now, 20).speed
	}
	alone, passedNone, passedLead := speed(false, 0, 0), speed(true, 0, 0), speed(true, 100, 0)
	if stale := speed(true, 100, time.Minute); stale != alone {
		t.Errorf("a sum noted a minute ago: speed %v, want this node's own %v", stale, alone)
	}
	if passedLead != 0 {
		t.Errorf("the room's passed places are past its lead: speed %v, want 0", passedLead)
	}
	if alone <= 0 || passedNone <= alone {
		t.Errorf("speed alone %v, on several nodes with none passed %v: want both moving, the second faster", alone, passedNone)
	}
}

func TestFIFOWhenPassesTheLeadShortAtOnce(t *testing.T) {
	const rate = 3.0
	start := t0.Add(30 * time.Second)
	lead := rate * (lotteryTick + DefaultPolicy.MinBackoff).Seconds()
	severalLead := lead + rate*lotteryTick.Seconds()
	tests := []struct {
		name       string
		at         time.Duration // after t0
		roomPassed float64       // noted just before at; <0: none
		wantShort  float64
	}{
		{"before the start nothing is passed", 0, -1, lead},
		{"after the start, nothing known", 31 * time.Second, -1, 0},
		{"the room's sum short of the lead", 31 * time.Second, 4, severalLead - 4},
		{"the room's sum past the lead", 31 * time.Second, 40, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room := fifoRoom(t, rate, 2*time.Second, StateScheduled, start)
			for range 30 {
				if _, _, err := room.rank(context.Background(), t0, true); err != nil {
					t.Fatal(err)
				}
			}
			now := t0.Add(tt.at)
			if tt.roomPassed >= 0 {
				room.NoteRoomPassed(tt.roomPassed, 0, now.Add(-lotteryTick))
			}
			v := room.View(now)
			if math.Abs(v.Short-tt.wantShort) > 1e-9 {
				t.Fatalf("Short %v, want %v", v.Short, tt.wantShort)
			}
			if tt.at >= 30*time.Second {
				return
			}
			// Before the start the counter stands at the origin: a key
			// passes the lead short at once, then at the rate.
			const key = 20.0
			when, ok := v.fifoWhen(now, key)
			want := start.Add(durationOf((key - lead) / rate))
			if !ok || when.Sub(want).Abs() > time.Millisecond {
				t.Errorf("fifoWhen(%v) = %v, %v; want %v", key, when.Sub(start), ok, want.Sub(start))
			}
		})
	}
}

func TestFIFOApproachComesEarlierTheFurtherItReaches(t *testing.T) {
	p := DefaultPolicy // MinBackoff 2 s, MaxBackoff 30 s
	tests := []struct {
		reach   int
		d, want time.Duration // the predicted moment and the answer, after now
	}{
		{fifoReach, time.Second, time.Second},
		{fifoReach, 4 * time.Second, 4 * time.Second},
		{fifoReach, 10 * time.Second, 8 * time.Second},
		{fifoReach, 24 * time.Second, 21 * time.Second},
		{fifoReach, 32 * time.Second, 28 * time.Second},
		{fifoReach, 40 * time.Second, 30 * time.Second},
		{fifoReach, 10 * time.Minute, 30 * time.Second},
		{fifoReachPre, 4 * time.Second, 4 * time.Second},
		{fifoReachPre, 10 * time.Second, 5 * time.Second},
		{fifoReachPre, 24 * time.Second, 12 * time.Second},
		{fifoReachPre, 40 * time.Second, 20 * time.Second},
		{fifoReachPre, 70 * time.Second, 30 * time.Second},
	}
	for _, tt := range tests {
		if got := fifoApproach(t0.Add(tt.d), t0, p, tt.reach).Sub(t0); got != tt.want {
			t.Errorf("reach %d, expected in %v: back in %v, want %v", tt.reach, tt.d, got, tt.want)
		}
	}
}

// sinceRanker records the bound each rank was asked with.
type sinceRanker struct {
	memoryRanker
	since []time.Time
}

func (s *sinceRanker) Next(ctx context.Context, since time.Time) (int64, error) {
	s.since = append(s.since, since)
	return s.memoryRanker.Next(ctx, since)
}

// TestFIFORankAfterTheStartFollowsEveryEarlierRank: a place ranked after
// the room began to admit asks its Ranker for a rank after every rank
// handed out before that moment (the pre-queue's, at every node), however
// the room began: at its sale start, started early, or queueing again.
func TestFIFORankAfterTheStartFollowsEveryEarlierRank(t *testing.T) {
	start := t0.Add(time.Minute)
	tests := []struct {
		name   string
		change func(r *Room) error
		began  time.Time // when the room began to admit
	}{
		{"at the sale start", func(*Room) error { return nil }, start},
		{"started early", func(r *Room) error {
			return r.SetState(StateQueue, time.Time{}, t0.Add(20*time.Second))
		}, t0.Add(20 * time.Second)},
		{"queueing again", func(r *Room) error {
			if err := r.SetState(StateOpen, time.Time{}, t0.Add(20*time.Second)); err != nil {
				return err
			}
			return r.SetState(StateQueue, time.Time{}, t0.Add(30*time.Second))
		}, t0.Add(30 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room := fifoRoom(t, 10, time.Second, StateScheduled, start)
			rk := new(sinceRanker)
			room.SetRanker(rk)
			if _, _, err := room.rank(t.Context(), t0.Add(10*time.Second), true); err != nil {
				t.Fatal(err)
			}
			if err := tt.change(room); err != nil {
				t.Fatal(err)
			}
			if _, _, err := room.rank(t.Context(), start.Add(time.Second), false); err != nil {
				t.Fatal(err)
			}
			if got := rk.since[len(rk.since)-1]; got.Before(tt.began) {
				t.Errorf("a place ranked after the room began to admit at %v asked for a rank after %v",
					tt.began.Sub(t0), got.Sub(t0))
			}
		})
	}
}

// TestFIFOPreQueueFirstCheckpointsSpread: a pre-queue place whose key the
// counter is expected to pass soon after the start comes at that moment;
// one whose key is far comes back somewhere in the first MinBackoff after
// the start, by its draw, to learn it then: the pre-queue's first
// requests are not all due in the start's first grid points.
func TestFIFOPreQueueFirstCheckpointsSpread(t *testing.T) {
	start := t0.Add(10 * time.Minute)
	g := testGate(t, 10)
	room := fifoRoom(t, 10, 2*time.Second, StateScheduled, start)
	const n = 2000
	cells := map[time.Duration]int{}
	for i := range n {
		tk, err := g.Issue(room, Visitor{}, t0.Add(time.Duration(i)*250*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		d := g.Decide(t.Context(), room, Attempt{Token: tk.Token, Nonce: solve(t, tk.Claims), Now: tk.Claims.NextAttempt()})
		if d.Claims == nil || d.Claims.Pos >= 0 {
			t.Fatalf("claim %d: %v (%v), not in the pre-queue", i, d.Outcome, d.Err)
		}
		first := time.UnixMilli(d.Claims.Nxt)
		if first.Before(start) {
			t.Fatalf("claim %d: first checkpoint %v before the start", i, first.Sub(start))
		}
		cells[first.Sub(start).Truncate(fifoGrain)]++
	}
	for cell, k := range cells {
		if k > n/5 {
			t.Errorf("%d of %d pre-queue places first come in [%v, %v) after the start", k, n, cell, cell+fifoGrain)
		}
	}
}

// TestFIFOViewWhileTheSpeedRuleChanges: View is read on every request,
// without the room's lock, while a reload may change the speed rule.
func TestFIFOViewWhileTheSpeedRuleChanges(t *testing.T) {
	room := fifoRoom(t, 10, time.Second, StateQueue, time.Time{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			if err := room.SetSpeedRule(time.Minute, i%2 == 0); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 100 {
		_ = room.View(t0)
	}
	<-done
}

// TestFIFOQuietRoomPagesComeFewTimes: in a room whose arrivals come slower
// than the rate the counter is short of its whole lead and stands at the
// last key between arrivals; a new place's key passes at the counter's
// next ticks, not at once, so its page is told so, and does not come back
// every fifoGrain until then: at most 4 requests a place on average (the
// claim, the tick, the key's moment, the admission), in about 4 s.
func TestFIFOQuietRoomPagesComeFewTimes(t *testing.T) {
	tests := []struct {
		rate  float64
		every time.Duration
	}{
		{1, 3 * time.Second},
		{2, 2 * time.Second},
		{10, 400 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("rate %v, an arrival every %v", tt.rate, tt.every), func(t *testing.T) {
			g := testGate(t, 10000)
			room := fifoRoom(t, tt.rate, time.Second, StateQueue, time.Time{})
			var arrivals []time.Time
			for i := range 100 {
				arrivals = append(arrivals, t0.Add(10*time.Second+time.Duration(i)*tt.every))
			}
			vs := fifoSale(t, g, room, arrivals, t0.Add(time.Hour))
			attempts, wait := 0, time.Duration(0)
			for _, v := range vs {
				attempts += v.attempts
				wait += v.admitted.Sub(v.arrive)
			}
			n := len(vs)
			if per := float64(attempts) / float64(n); per > 4 {
				t.Errorf("%.2f requests a place, want at most 4 (mean wait %v)", per, wait/time.Duration(n))
			}
			if mean := wait / time.Duration(n); mean > 5*time.Second {
				t.Errorf("mean wait %v, want under 5 s", mean)
			}
		})
	}
}

// TestFIFOWhenTheShortfallPassesWithinATick: a key within the lead the
// counter is short of passes at its next tick at the latest, whatever the
// speed of the tick under way (a page told the slow tick's moment would
// come long after its key passed, and its lateness would let the counter
// run ahead of the admissions).
func TestFIFOWhenTheShortfallPassesWithinATick(t *testing.T) {
	view := func(speed float64) View {
		return View{
			State: StateQueue, Rate: 3, RankSet: true, Ranked: 100, Short: 10,
			Clock: queue.Clock{Origin: t0, Value: 5, Segments: []queue.Segment{{Start: t0, Speed: speed}}},
		}
	}
	tests := []struct {
		name  string
		speed float64
		key   float64
		want  time.Duration
	}{
		{"a slow tick: the next one passes it", 0.1, 8, lotteryTick},
		{"a fast tick passes it first", 30, 8, 100 * time.Millisecond},
		{"standing: the next tick, then the rest at the rate", 0, 20, lotteryTick + durationOf(5.0/3)},
	}
	for _, tt := range tests {
		v := view(tt.speed)
		when, ok := v.fifoWhen(t0, tt.key)
		if !ok || when.Sub(t0).Round(time.Millisecond) != tt.want.Round(time.Millisecond) {
			t.Errorf("%s: key %v passes in %v, %v; want %v", tt.name, tt.key, when.Sub(t0), ok, tt.want)
		}
	}
}

// TestFIFOWhenFromTheSharedTick: nodes sharing a room predict from the
// figures of the ticks made for them (View.Forecasts), whatever their own
// (each learns the others' ranks, shows and lucks at its own tick), so
// one key is told one moment at every node. Each tick's figures take
// effect when its speed does, the tick before's until then, however
// close the ticks; a room no node shares, or one not ticked for within
// roomSumsFresh, predicts from its own.
func TestFIFOWhenFromTheSharedTick(t *testing.T) {
	clock := queue.Clock{Origin: t0, Value: 5, Segments: []queue.Segment{{Start: t0, Speed: 3}}}
	node := func(ranked, luck, short, shows float64, fs ...Forecast) View {
		return View{State: StateQueue, Rate: 3, RankSet: true, PreQueue: 20, Clock: clock,
			Ranked: ranked, FirstLuck: luck, LastLuck: luck, Short: short, Shows: shows, Forecasts: fs}
	}
	const key = 60
	when := func(v View, now time.Time) time.Duration {
		t.Helper()
		at, ok := v.fifoWhen(now, key)
		if !ok {
			t.Fatalf("key %v never passes", key)
		}
		return at.Sub(now)
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tick := func(at time.Duration, ranked, short, shows float64) Forecast {
		return Forecast{At: t0.Add(at), From: t0.Add(at + ms(1000)), Ranked: ranked, FirstLuck: 12, LastLuck: 10, Short: short, Shows: shows}
	}
	own := func(f Forecast) View { return node(f.Ranked, f.FirstLuck, f.Short, f.Shows) }
	// Ticks 0.9 s apart, each in force a second after it.
	first, second, third := tick(-ms(1200), 90, 4, 0.7), tick(-ms(300), 93, 0, 0.75), tick(ms(600), 97, 6, 0.6)
	ticks := []Forecast{first, second, third}
	a, b := node(96, 14, 7, 0.6, ticks...), node(88, 11, 2, 0.8, ticks...)
	for _, tt := range []struct {
		at   time.Duration
		want Forecast
	}{
		{0, first},
		{ms(699), first},
		{ms(700), second},
		{ms(1599), second},
		{ms(1600), third},
	} {
		now := t0.Add(tt.at)
		if wa, wb := when(a, now), when(b, now); wa != wb {
			t.Errorf("at %v two nodes holding one tick told key %v %v and %v", tt.at, key, wa, wb)
		}
		if got, want := when(a, now), when(own(tt.want), now); got != want {
			t.Errorf("at %v told %v; the tick of %v, in force, tells %v", tt.at, got, tt.want.At.Sub(t0), want)
		}
	}
	if when(node(96, 14, 7, 0.6), t0) == when(a, t0) {
		t.Error("a room alone predicted from figures it does not hold")
	}
	stale := third.From.Add(roomSumsFresh + time.Millisecond)
	if got, want := when(a, stale), when(node(96, 14, 7, 0.6), stale); got != want {
		t.Errorf("a tick in force for %v told %v, want %v (the node's own figures)", stale.Sub(third.From), got, want)
	}
	long := node(96, 14, 7, 0.6, Forecast{At: t0, From: t0.Add(4 * time.Second), Ranked: 90, Short: 4, Shows: 0.7})
	if got, want := when(long, t0.Add(5*time.Second)), when(own(long.Forecasts[0]), t0.Add(5*time.Second)); got != want {
		t.Errorf("a tick taking effect %v after it (slow polls), a second in force, told %v; want its %v", roomSumsFresh+time.Second, got, want)
	}
}

// TestNoteForecastKeepsTheFiguresInForce: a tick made before the last
// one took effect keeps it, and the one in force, so each takes effect in
// turn; figures no longer in force are dropped. Only a room whose places
// are told moments notes them (queueing or scheduled, a place ranked),
// and a new queue starts without them.
func TestNoteForecastKeepsTheFiguresInForce(t *testing.T) {
	start := t0.Add(time.Minute)
	room := fifoRoom(t, 5, 5*time.Second, StateScheduled, start)
	room.SetSpeedDelay(time.Second)
	if room.NoteForecast(t0); len(room.View(t0).Forecasts) > 0 {
		t.Fatal("a room with no place ranked noted its figures")
	}
	if _, _, err := room.rank(context.Background(), t0, true); err != nil {
		t.Fatal(err)
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	ats := func(now time.Time) []time.Duration {
		var out []time.Duration
		for _, f := range room.View(now).Forecasts {
			out = append(out, f.At.Sub(t0))
		}
		return out
	}
	for _, at := range []time.Duration{0, ms(900), ms(1800), ms(2700), ms(5000)} {
		room.NoteForecast(t0.Add(at))
	}
	if got, want := ats(t0.Add(ms(5000))), []time.Duration{ms(2700), ms(5000)}; !slices.Equal(got, want) {
		t.Errorf("after the tick at 5s the room keeps the ticks at %v, want %v", got, want)
	}
	room.NoteForecast(t0.Add(ms(5500)))
	if got, want := ats(t0.Add(ms(5500))), []time.Duration{ms(2700), ms(5000), ms(5500)}; !slices.Equal(got, want) {
		t.Errorf("a tick before the last took effect: kept %v, want %v (the one in force and the two after it)", got, want)
	}
	now := t0.Add(6 * time.Second)
	for _, s := range []State{StatePaused, StateOpen} {
		if err := room.SetState(s, time.Time{}, now); err != nil {
			t.Fatal(err)
		}
		if room.ForecastDue(now.Add(time.Minute), time.Second) {
			t.Errorf("a %s room wants its figures noted", s)
		}
	}
	if err := room.SetState(StateQueue, time.Time{}, now); err != nil {
		t.Fatal(err)
	}
	if fs := room.View(now).Forecasts; len(fs) > 0 {
		t.Errorf("a new queue kept %d figures of the last", len(fs))
	}
}

// TestFIFOHoldsAtThePreQueueEnd: the counter stops at the pre-queue's end
// while a pre-queue place it passed is still to be found or a pre-queue
// key is still ahead, at this node or (by the published sum) at another;
// never inside or past the pre-queue otherwise.
func TestFIFOHoldsAtThePreQueueEnd(t *testing.T) {
	v := &View{RankZero: 10, PreQueue: 30} // the end at 40
	tests := []struct {
		name     string
		view     *View
		s        float64
		unfound  float64
		ahead    []float64
		wantHeld bool
	}{
		{"a passed place not found", v, 39, 1, []float64{41, 42}, true},
		{"a pre-queue key still ahead", v, 39, 0, []float64{39.5, 41}, true},
		{"at the end, a place not found", v, 40, 2, nil, true},
		{"every pre-queue place found", v, 40, 0, []float64{41}, false},
		{"past the end", v, 41, 3, []float64{42}, false},
		{"no pre-queue", &View{RankZero: 10}, 5, 3, []float64{6}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := 0.0
			if tt.wantHeld {
				want = 40
			}
			holding := math.Max(tt.unfound, float64(holdingEnd(tt.view, 0, tt.ahead)))
			if hold := fifoHold(tt.view, tt.s, holding); hold != want {
				t.Errorf("fifoHold = %v, want %v", hold, want)
			}
		})
	}

	// What a node publishes: its pre-queue keys still to pass hold the end
	// too, so a place whose key it has not seen passed yet (its view lags
	// the ticking node's) holds the counter there.
	for _, tt := range []struct {
		name     string
		draw     float64 // a pre-queue place's, or -1 for a later arrival's key
		wantHeld bool
	}{
		{"published: a pre-queue key still to pass", 0.99, true},
		{"published: a later arrival's key still to pass", -1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := t0.Add(30 * time.Second)
			room := fifoRoom(t, 3, 2*time.Second, StateScheduled, start)
			for range 5 {
				if _, _, err := room.rank(context.Background(), t0, true); err != nil {
					t.Fatal(err)
				}
			}
			now := start.Add(time.Second)
			v := room.View(now)
			if tt.draw >= 0 {
				room.observePreQueuePresent(now, "pre", v.RankZero, tt.draw)
			} else {
				room.ObservePresent(now, "later", v.RankZero+v.PreQueue+0.5)
			}
			_, holding := room.Passed(now)
			if (holding >= 1) != tt.wantHeld {
				t.Errorf("published %v places holding the end, want the end held: %v", holding, tt.wantHeld)
			}
		})
	}

	// Through a tick: another node's place not found holds the counter
	// this node would move past the end.
	start := t0.Add(30 * time.Second)
	for _, unfound := range []float64{0, 1} {
		room := fifoRoom(t, 3, 2*time.Second, StateScheduled, start)
		for range 5 {
			if _, _, err := room.rank(context.Background(), t0, true); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := room.rank(context.Background(), start.Add(time.Second), false); err != nil {
			t.Fatal(err)
		}
		now := start.Add(5 * time.Second)
		v := room.View(now)
		end := v.RankZero + v.PreQueue
		room.ObservePresent(now, "later", end+0.5)
		room.NoteRoomPassed(0, unfound, now.Add(-lotteryTick))
		room.mu.Lock()
		plan := room.fifoSpeed(&v, now, 1)
		room.mu.Unlock()
		if s := v.Clock.At(now); s > end {
			t.Fatalf("counter at %v, past the pre-queue's end %v already", s, end)
		}
		if held := plan.hold > 0; held != (unfound > 0) {
			t.Errorf("another node's %v places not found: held at %v", unfound, plan.hold)
		}
	}
}

// TestFIFOFirstRankStopsTheCounter: the counter runs fast while no key
// lies ahead; the first rank taken in a running room sets its origin
// there, and the counter stands at it until a tick moves it, on a node
// alone and on one whose changes take effect two polls later.
func TestFIFOFirstRankStopsTheCounter(t *testing.T) {
	for _, delay := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprint("delay ", delay), func(t *testing.T) {
			room := fifoRoom(t, 20, 5*time.Second, StateQueue, time.Time{})
			room.SetSpeedDelay(delay)
			now := t0
			for range 5 { // no places: the counter runs where keys would be
				now = now.Add(time.Second)
				room.Tick(now)
			}
			if _, _, err := room.rank(t.Context(), now, false); err != nil {
				t.Fatal(err)
			}
			v := room.View(now)
			for _, after := range []time.Duration{0, delay / 2, delay, 2 * delay} {
				if got := v.Clock.At(now.Add(after)) - v.RankZero; got > 1 {
					t.Errorf("%v after the first rank the counter stands %.1f ranks past its origin, want at most 1", after, got)
				}
			}
		})
	}
}

// TestFIFOPredictionsUseTheRoomsShowShare: the share of passed places
// that come is the room's once the nodes' sums are noted, so a node that
// sees few places (none found gone yet) tells a key the same moment as a
// node that sees many; a sum noted too long ago stands for nothing, and a
// node's own counts are read afresh between notes.
func TestFIFOPredictionsUseTheRoomsShowShare(t *testing.T) {
	const rate = 3.0
	at := t0.Add(2 * time.Second)
	node := func(came, gone float64) *Room {
		room := fifoRoom(t, rate, 2*time.Second, StateQueue, time.Time{})
		for i := range 100 {
			if _, _, err := room.rank(context.Background(), t0.Add(time.Duration(i)*10*time.Millisecond), false); err != nil {
				t.Fatal(err)
			}
		}
		room.shows.came.add(at, came)
		room.shows.gone.add(at, gone)
		return room
	}
	now := t0.Add(3 * time.Second)
	const key = 60.0
	predict := func(room *Room) (float64, time.Duration) {
		v := room.View(now)
		when, ok := v.fifoWhen(now, key)
		if !ok {
			t.Fatal("no prediction")
		}
		return v.Shows, when.Sub(now)
	}
	// Over showWindow: the busy node 0.6 came and 0.4 gone a second, the
	// quiet one 0.1 and none; the room 0.7 and 0.4.
	busy, quiet := node(6, 4), node(1, 0)
	note := func(noted time.Duration) {
		for _, room := range []*Room{busy, quiet} {
			room.otherShows = roomSums{}
			if noted >= 0 {
				came, gone := room.ShowRates(now)
				room.NoteOtherShows(0.7-came, 0.4-gone, now.Add(-noted))
			}
		}
	}
	roomShare := 0.7 / 1.1
	tests := []struct {
		name      string
		noted     time.Duration // how long before now the sums were noted; <0: never
		wantBusy  float64
		wantQuiet float64
	}{
		{"each node's own", -1, 0.6, 1},
		{"the room's", lotteryTick, roomShare, roomShare},
		{"a stale sum", time.Minute, 0.6, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			note(tt.noted)
			bs, bw := predict(busy)
			qs, qw := predict(quiet)
			if math.Abs(bs-tt.wantBusy) > 1e-9 || math.Abs(qs-tt.wantQuiet) > 1e-9 {
				t.Fatalf("shares: busy node %v, quiet node %v; want %v, %v", bs, qs, tt.wantBusy, tt.wantQuiet)
			}
			if same := bw == qw; same != (tt.wantBusy == tt.wantQuiet) {
				t.Fatalf("key %v predicted in %v at the busy node, %v at the quiet one", key, bw, qw)
			}
		})
	}
	note(lotteryTick)
	quiet.shows.gone.add(at, 1)
	if got, want := quiet.View(now).Shows, 0.7/1.2; math.Abs(got-want) > 1e-9 {
		t.Errorf("a place found gone since the note: the quiet node's share %v, want %v", got, want)
	}
}
