package roomstate_test

import (
	"context"
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/roomstate"
)

// A window's limit is not rounded up: over consecutive windows the limits
// add up to the rate times the time (within one admission), whatever the
// rate's fraction. Rounding gave a rate of 2.5 a limit of 3 a second.
func TestBudgetWindowsAddUpToTheRate(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	for _, rate := range []float64{0.7, 1.5, 2.5, 10.5, 33.3, 500} {
		length := roomstate.WindowFor(rate, rate)
		b, err := roomstate.NewBudget(nil, "r", 1, length)
		if err != nil {
			t.Fatal(err)
		}
		const windows = 1000
		var sum int64
		for i := range windows {
			w := b.WindowAt(start.Add(time.Duration(i)*length), rate)
			if per := rate * length.Seconds(); float64(w.Limit) < math.Floor(per) || float64(w.Limit) > math.Ceil(per) {
				t.Fatalf("rate %v: window %d limit %d, want %v rounded either way", rate, w.Index, w.Limit, per)
			}
			sum += w.Limit
		}
		if want := rate * length.Seconds() * windows; math.Abs(float64(sum)-want) > 1 {
			t.Errorf("rate %v: %d windows of %v admit %d, want %.0f (±1)", rate, windows, length, sum, want)
		}
	}
}

// A node's rank blocks with a maximum age: sized to what it hands out in a
// quarter of the age, dropped when older, so ranks handed out by one node
// more than the age apart never interleave with another node's.
func TestRanksAge(t *testing.T) {
	st := openBolt(t)
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	r, err := roomstate.NewRanks(st, "room", 64)
	if err != nil {
		t.Fatal(err)
	}
	r.MaxAge(time.Second, clock)
	ctx := t.Context()
	// 100 ranks a second for 10 s: blocks grow to about 25.
	prev := int64(-1)
	for range 1000 {
		now = now.Add(10 * time.Millisecond)
		rank, err := r.Next(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if rank <= prev {
			t.Fatalf("rank %d after %d", rank, prev)
		}
		prev = rank
	}
	if d := r.Dropped(); d > 0 {
		t.Errorf("steady arrivals dropped %d ranks", d)
	}
	// Quiet for 5 s, then one arrival: the old block's rest is dropped, and
	// the new rank comes after every rank reserved meanwhile elsewhere.
	other, err := st.ReserveRanks(ctx, "room", 10)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(5 * time.Second)
	rank, err := r.Next(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if rank < other+10 {
		t.Fatalf("after 5 quiet seconds rank %d, before another node's block [%d, %d)", rank, other, other+10)
	}
	if d := r.Dropped(); d > 64 {
		t.Errorf("dropped %d ranks, more than a block", d)
	}
}

// A place arriving after the start is ranked after every pre-queue rank
// any node handed out, though its node still holds a block reserved
// before the start that another node's pre-queue block follows.
func TestRanksAfterTheStartFollowThePreQueue(t *testing.T) {
	st := openBolt(t)
	start := time.Unix(1_700_000_000, 0)
	now := start.Add(-300 * time.Millisecond)
	clock := func() time.Time { return now }
	ctx := t.Context()
	node := func() *roomstate.Ranks {
		r, err := roomstate.NewRanks(st, "room", 8)
		if err != nil {
			t.Fatal(err)
		}
		return r.MaxAge(time.Second, clock)
	}
	a, b := node(), node()
	take := func(r *roomstate.Ranks, since time.Time) int64 {
		t.Helper()
		rank, err := r.Next(ctx, since)
		if err != nil {
			t.Fatal(err)
		}
		return rank
	}
	for range 4 { // a's blocks grow as it uses them up: it holds ranks left
		take(a, time.Time{})
	}
	now = start.Add(-100 * time.Millisecond)
	lastPre := take(b, time.Time{}) // b's pre-queue block follows a's
	now = start.Add(200 * time.Millisecond)
	tests := []struct {
		name  string
		since time.Time
		after bool
	}{
		{"a pre-queue arrival may use the block", time.Time{}, false},
		{"an arrival after the start may not", start, true},
	}
	for _, tt := range tests {
		rank := take(a, tt.since)
		if got := rank > lastPre; got != tt.after {
			t.Errorf("%s: rank %d, the pre-queue's last %d", tt.name, rank, lastPre)
		}
	}
}

// A node whose clock lags the one that set since (a room queueing again,
// a sale started early: the moment comes from the node that changed it)
// drops its block reserved before since once, not every block it
// reserves until its own clock reaches since: those follow every rank
// handed out before since, and dropping each would cost the store a
// reservation and the ranks a block a claim.
func TestRanksDropOnceForALaggingClock(t *testing.T) {
	st := openBolt(t)
	since := time.Unix(1_700_000_000, 0)
	now := since.Add(-time.Second)
	clock := func() time.Time { return now }
	r, err := roomstate.NewRanks(st, "room", 8)
	if err != nil {
		t.Fatal(err)
	}
	r.MaxAge(time.Second, clock)
	ctx := t.Context()
	for range 4 { // a block held from before since
		if _, err := r.Next(ctx, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	held := r.Dropped()
	now = since.Add(-50 * time.Millisecond) // this node's clock lags
	var ranks []int64
	for range 6 {
		now = now.Add(time.Millisecond)
		rank, err := r.Next(ctx, since)
		if err != nil {
			t.Fatal(err)
		}
		ranks = append(ranks, rank)
	}
	for i := 1; i < len(ranks); i++ {
		if ranks[i] != ranks[i-1]+1 {
			t.Fatalf("ranks %v after since: want consecutive, once the old block is dropped (dropped %d, %d before since)",
				ranks, r.Dropped(), held)
		}
	}
}

// Nodes reserving slots ahead of now share each window's limit: together
// they never hold more than a window grants, every slot lies in the window
// that granted it (the moment asked, or the window's start plus its place
// in the window's order across the nodes, each place once), and a
// refunded slot's admission is taken by the next node's reservation there.
func TestBudgetReservesAheadWithinEachWindow(t *testing.T) {
	st := openBolt(t)
	const rate, nodes = 3.0, 3
	now := time.Unix(1_700_000_000, 200_000_000)
	var budgets []*roomstate.Budget
	for range nodes {
		b, err := roomstate.NewBudget(st, "room", 1, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		budgets = append(budgets, b)
	}
	ctx := t.Context()
	perWindow := map[int64]int{}
	places := map[time.Time]bool{}
	var last time.Time
	for i := range 30 {
		slot, err := budgets[i%nodes].Reserve(ctx, now, now, roomstate.Steady(rate))
		if err != nil {
			t.Fatal(err)
		}
		if slot.Before(last) || slot.Before(now) {
			t.Fatalf("slot %d at %v, after %v (asked at %v)", i, slot, last, now)
		}
		if !slot.Equal(now) {
			place := slot.Sub(slot.Truncate(time.Second)).Seconds() * rate
			if math.Abs(place-math.Round(place)) > 1e-6 || places[slot] {
				t.Fatalf("slot %d at %v: neither the moment asked nor a place of its window not given before", i, slot)
			}
			places[slot] = true
		}
		last = slot
		perWindow[slot.Unix()]++
	}
	if len(perWindow) != 10 {
		t.Fatalf("30 slots at 3/s over %d windows, want 10: %v", len(perWindow), perWindow)
	}
	for w, n := range perWindow {
		if n != int(rate) {
			t.Fatalf("window %d holds %d slots, want %v", w, n, rate)
		}
	}
	budgets[0].Refund(last)
	slot, err := budgets[1].Reserve(ctx, now, now, roomstate.Steady(rate))
	if err != nil || !slot.After(last) {
		t.Fatalf("after a refund at another node: %v, %v; want a later window (the refund stays with its node)", slot, err)
	}
	slot, err = budgets[0].Reserve(ctx, last, now, roomstate.Steady(rate))
	if err != nil || slot.Before(last) || slot.Unix() != last.Unix() {
		t.Fatalf("the refunding node reserving at the refunded slot: %v, %v; want %v or later in its window", slot, err, last)
	}
}

// budgetCalls is a store that counts budget reservations.
type budgetCalls struct {
	roomstate.Store
	reserves int
}

func (c *budgetCalls) ReserveBudget(ctx context.Context, room string, w roomstate.Window, n int64) (roomstate.Grant, error) {
	c.reserves++
	return c.Store.ReserveBudget(ctx, room, w, n)
}

// A window whose limit is nothing (a rate below one admission a window)
// costs no store request: the reservation walks on to the first window
// with an admission.
func TestBudgetSkipsEmptyWindowsWithoutTheStore(t *testing.T) {
	st := &budgetCalls{Store: openBolt(t)}
	const rate = 0.25 // one admission every fourth 1 s window
	b, err := roomstate.NewBudget(st, "r", 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	for b.WindowAt(now, rate).Limit != 0 {
		now = now.Add(time.Second)
	}
	slot, err := b.Reserve(t.Context(), now, now, roomstate.Steady(rate))
	if err != nil || b.WindowAt(slot, rate).Limit != 1 {
		t.Fatalf("slot %v (%v), want one in a window of one admission", slot, err)
	}
	if st.reserves != 1 {
		t.Fatalf("%d store requests, want 1: windows of no admission need none", st.reserves)
	}
}

// blockedBudget is a store whose budget reservations wait until released.
type blockedBudget struct {
	roomstate.Store
	entered, release chan struct{}
}

func (b *blockedBudget) ReserveBudget(ctx context.Context, room string, w roomstate.Window, n int64) (roomstate.Grant, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.Store.ReserveBudget(ctx, room, w, n)
}

// A rate change never waits for a budget call under way: the room
// changes rates holding its own lock, which the store's observer of that
// call may be waiting for.
func TestQuotaRateChangeDoesNotWaitForTheStore(t *testing.T) {
	st := &blockedBudget{Store: openBolt(t), entered: make(chan struct{}), release: make(chan struct{})}
	q, err := roomstate.NewQuota(st, "r", 1, 2, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	reserved := make(chan error, 1)
	go func() {
		_, _, err := q.Reserve(context.Background(), now, now)
		reserved <- err
	}()
	<-st.entered
	changed := make(chan struct{})
	go func() {
		q.SetRateFrom(4, now.Add(time.Second))
		q.SetRate(3)
		close(changed)
	}()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the rate change waited for the store call")
	}
	close(st.release)
	if err := <-reserved; err != nil {
		t.Fatal(err)
	}
}

// stallingBudgetStore counts budget reservations and holds its first until
// release closes, saying when that one has begun.
type stallingBudgetStore struct {
	roomstate.Store
	calls          atomic.Int64
	began, release chan struct{}
	// returnFails makes each return and then answers an error, as a
	// store whose deadline fires after its write.
	returnFails bool
	// beforeReturn, when set, runs before the first return reaches the
	// store.
	beforeReturn func()
	returns      atomic.Int64
}

func (s *stallingBudgetStore) ReturnBudget(ctx context.Context, room string, w roomstate.Window, n, top int64) error {
	if s.returns.Add(1) == 1 && s.beforeReturn != nil {
		s.beforeReturn()
	}
	if err := s.Store.ReturnBudget(ctx, room, w, n, top); err != nil || !s.returnFails {
		return err
	}
	return context.DeadlineExceeded
}

func (s *stallingBudgetStore) ReserveBudget(ctx context.Context, room string, w roomstate.Window, n int64) (roomstate.Grant, error) {
	if s.calls.Add(1) == 1 {
		close(s.began)
		<-s.release
	}
	return s.Store.ReserveBudget(ctx, room, w, n)
}

// The takers that queue behind a slow store call are served by one call
// together, not one call each: a slow store delays a node's admissions by
// about one call, not by a queue of them. Each gets its own admission, and
// the window's limit holds.
func TestBudgetTakersQueuedBehindASlowCallShareTheNext(t *testing.T) {
	for _, tc := range []struct {
		name          string
		queued, limit int
		wantCalls     int64
	}{
		{"all fit the window", 10, 20, 2},
		{"more than the window holds", 30, 20, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &stallingBudgetStore{Store: openBolt(t), began: make(chan struct{}), release: make(chan struct{})}
			b, err := roomstate.NewBudget(st, "r", 1, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Unix(1_700_000_000, 0)
			rate := float64(tc.limit)
			took := make(chan bool, tc.queued+1)
			take := func() {
				ok, err := b.Take(t.Context(), now, rate)
				if err != nil {
					t.Error(err)
				}
				took <- ok
			}
			go take()
			<-st.began
			for range tc.queued {
				go take()
			}
			for deadline := time.Now().Add(10 * time.Second); roomstate.BudgetQueued(b) < int64(tc.queued); {
				if time.Now().After(deadline) {
					t.Fatalf("%d takers queued, want %d", roomstate.BudgetQueued(b), tc.queued)
				}
				runtime.Gosched()
			}
			close(st.release)
			admitted := 0
			for range tc.queued + 1 {
				if <-took {
					admitted++
				}
			}
			if want := min(tc.queued+1, tc.limit); admitted != want {
				t.Errorf("%d admitted, want %d", admitted, want)
			}
			if got := st.calls.Load(); got > tc.wantCalls {
				t.Errorf("%d store calls for %d takers, want at most %d", got, tc.queued+1, tc.wantCalls)
			}
		})
	}
}

// TestBudgetLapse: a lapsed slot's admission goes back at the end of the
// line: to the store, into the window of the next grant, which then gives
// one admission more than its limit; a place asking now goes in no
// sooner than the slots given before it.
func TestBudgetLapse(t *testing.T) {
	const rate = 3.0
	at := time.Unix(1_700_000_000, 200_000_000)
	tests := []struct {
		name    string
		lapseAt time.Duration // after at: when the slot lapses
		ahead   int           // slots given at the lapse before it, from its window on
		extraIn time.Duration // after the lapse's window: the window given one more
	}{
		{"in the slot's window, spent", 500 * time.Millisecond, 0, time.Second},
		{"after the slot's window, nothing given ahead", 5 * time.Second, 0, 0},
		{"after the slot's window, slots given a window ahead", 5 * time.Second, 5, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openBolt(t)
			b, err := roomstate.NewBudget(st, "room", 1, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			reserve := func(now time.Time) time.Time {
				t.Helper()
				slot, err := b.Reserve(ctx, now, now, roomstate.Steady(rate))
				if err != nil {
					t.Fatal(err)
				}
				return slot
			}
			// The slot's window spent: three slots given at its start.
			perWindow := map[int64]int{}
			for range int(rate) {
				perWindow[reserve(at).Unix()]++
			}
			now := at.Add(tt.lapseAt)
			for range tt.ahead {
				perWindow[reserve(now).Unix()]++
			}
			b.Lapse(now)
			// Every window from the lapse's on, filled to its end.
			var tail time.Time
			for range 3*int(rate) + 1 - tt.ahead {
				got := reserve(now)
				if got.Before(tail) {
					t.Fatalf("a slot at %v after one at %v", got, tail)
				}
				tail = got
				perWindow[got.Unix()]++
			}
			extra := now.Truncate(time.Second).Add(tt.extraIn).Unix()
			for w := now.Unix(); w <= now.Unix()+2; w++ {
				want := int(rate)
				if w == extra {
					want++
				}
				if perWindow[w] != want {
					t.Fatalf("window %+ds gave %d slots, want %d (by window: %v)", w-now.Unix(), perWindow[w], want, perWindow)
				}
			}
		})
	}
}

// Slots a budget gives in a window ahead of now fall due in the order
// given, spread evenly over the window's limit, and so do the window's
// later ones once it has come; in a window given no slot ahead an
// admission is at once. Slots lapsing together are put back one a window,
// each at a place of its own in the window's order, never with another.
func TestBudgetSpacesSlotsAhead(t *testing.T) {
	at := inWindow
	b, reserveOne := slotBudget(t, 4)
	var got []time.Time
	reserve := func(n int, now time.Time) {
		t.Helper()
		for range n {
			got = append(got, reserveOne(now))
		}
	}
	reserve(6, at(0, 0.1))
	reserve(1, at(1, 0.1)) // window 1 has come, its first two given ahead
	b.Lapse(at(1, 0.1))
	b.Lapse(at(1, 0.1))
	reserve(11, at(1, 0.1))
	want := []time.Time{
		at(0, 0.1), at(0, 0.1), at(0, 0.1), at(0, 0.1), // at once
		at(1, 0), at(1, 0.25), // ahead
		at(1, 0.5), // after them, not at once
		// Two lapsed: one more in each of the next two windows granted,
		// at a place of its own past the limit, in the window's last
		// spacing.
		at(1, 0.75), at(1, 0.875),
		at(2, 0), at(2, 0.25), at(2, 0.5), at(2, 0.75), at(2, 0.875),
		at(3, 0), at(3, 0.25), at(3, 0.5), at(3, 0.75),
	}
	wantSlots(t, got, want)
}

// Admissions refunded in a window whose slots were given ahead are held
// beyond its places: given again, each falls due after the latest slot
// of the window, half a spacing or half the time left later, never tied
// with it nor past the window's end.
func TestBudgetNeverTiesSlots(t *testing.T) {
	at := inWindow
	b, reserve := slotBudget(t, 4)
	var got []time.Time
	for range 8 { // window 0 at once, window 1 ahead
		got = append(got, reserve(at(0, 0.1)))
	}
	b.Refund(at(1, 0))
	b.Refund(at(1, 0))
	for range 3 {
		got = append(got, reserve(at(0, 0.2)))
	}
	want := []time.Time{
		at(0, 0.1), at(0, 0.1), at(0, 0.1), at(0, 0.1),
		at(1, 0), at(1, 0.25), at(1, 0.5), at(1, 0.75),
		at(1, 0.875), at(1, 0.9375), // the refunded two
		at(2, 0),
	}
	wantSlots(t, got, want)
}

// A place granted after admissions came back lapsed at other nodes falls
// due after every place granted before it, whatever each node knew of
// them when it was granted.
func TestBudgetLapsedReturnsKeepTheOrderAcrossNodes(t *testing.T) {
	const rate = 8.0
	st := openBolt(t)
	ctx := t.Context()
	budget := func(block int64) *roomstate.Budget {
		b, err := roomstate.NewBudget(st, "room", block, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := budget(4), budget(1)
	now, ahead := inWindow(0, 0.1), inWindow(1, 0)
	w := roomstate.Window{Index: ahead.Unix(), Limit: int64(rate), Expires: inWindow(3, 0)}
	for range 2 { // two other nodes granted places 0 and 1, their returns to come
		if _, err := st.ReserveBudget(ctx, "room", w, 1); err != nil {
			t.Fatal(err)
		}
	}
	var last time.Time
	for range 4 { // places 2–5
		slot, err := a.Reserve(ctx, ahead, now, roomstate.Steady(rate))
		if err != nil {
			t.Fatal(err)
		}
		last = later(last, slot)
	}
	for range 2 {
		if _, err := st.ReturnLapsed(ctx, "room", w, 1); err != nil {
			t.Fatal(err)
		}
	}
	slot, err := b.Reserve(ctx, ahead, now, roomstate.Steady(rate))
	if err != nil || !slot.After(last) {
		t.Fatalf("a place granted after two lapsed returns: %v, %v; want after %v", slot.Sub(windowBase), err, last.Sub(windowBase))
	}
}

// slotBudget is a budget of 1 s windows of rate admissions on a bolt
// store, and a function reserving one slot of it for a place found at now.
func slotBudget(t *testing.T, rate float64) (*roomstate.Budget, func(now time.Time) time.Time) {
	t.Helper()
	b, err := roomstate.NewBudget(openBolt(t), "room", 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return b, func(now time.Time) time.Time {
		t.Helper()
		slot, err := b.Reserve(t.Context(), now, now, roomstate.Steady(rate))
		if err != nil {
			t.Fatal(err)
		}
		return slot
	}
}

// wantSlots fails unless the slots given are want, in order.
func wantSlots(t *testing.T, got, want []time.Time) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d slots given, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("slot %d at %v, want %v (all: %v)", i, got[i].Sub(windowBase), want[i].Sub(windowBase), got)
		}
	}
}

// A slot never falls due at or before one the budget gave earlier: an
// admission refunded in a window before later windows' slots goes back at
// the end of the line, and a moment asked ahead in a window whose line is
// longer falls due after its latest slot.
func TestBudgetGivesLaterPlacesLaterSlots(t *testing.T) {
	const rate = 4.0
	base, at := windowBase, inWindow
	tests := []struct {
		name  string
		then  func(b *roomstate.Budget, reserve func(time.Time) time.Time) (time.Time, error)
		after time.Time
	}{
		{"refunded before later windows' slots", func(b *roomstate.Budget, reserve func(time.Time) time.Time) (time.Time, error) {
			b.Refund(at(1, 0))
			return reserve(at(0, 0.2)), nil
		}, at(2, 0.75)},
		{"a moment ahead behind the line", func(b *roomstate.Budget, reserve func(time.Time) time.Time) (time.Time, error) {
			b.Refund(at(2, 0))
			b.Refund(at(2, 0))
			reserve(at(0, 0.2))
			return b.Reserve(t.Context(), at(2, 0.8), at(0, 0.3), roomstate.Steady(rate))
		}, at(2, 0.875)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, reserve := slotBudget(t, rate)
			for range 12 { // window 0 at once, windows 1 and 2 ahead
				reserve(at(0, 0.1))
			}
			got, err := tt.then(b, reserve)
			if err != nil {
				t.Fatal(err)
			}
			if !got.After(tt.after) {
				t.Fatalf("slot at %v, want after %v", got.Sub(base), tt.after.Sub(base))
			}
		})
	}
}

// Admissions a node gave back (its room stopping) are the store's again:
// a request still in flight at that node afterwards asks the store, and
// the nodes together admit no more than the window's limit.
func TestBudgetReturnedIsNotGivenAgain(t *testing.T) {
	st := openBolt(t)
	ctx := t.Context()
	var nodes [2]*roomstate.Quota
	for i := range nodes {
		q, err := roomstate.NewQuota(st, "r", 8, 10, 10, false) // 1 s windows of 10, blocks of 8
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = q
	}
	now := time.Unix(1_700_000_000, 100_000_000)
	win := now.Truncate(time.Second)
	in := 0
	reserve := func(node, n int) {
		t.Helper()
		for range n {
			slot, _, err := nodes[node].Reserve(ctx, now, now)
			if err != nil {
				t.Fatal(err)
			}
			if !slot.Before(win) && slot.Before(win.Add(time.Second)) {
				in++
			}
		}
	}
	reserve(0, 1) // node 0 holds 7 more
	if err := nodes[0].Return(ctx); err != nil {
		t.Fatal(err)
	}
	reserve(1, 9)
	reserve(0, 20)
	if in != 10 {
		t.Fatalf("a window of 10 admitted %d across the nodes", in)
	}
}

// Admissions refunded at two nodes in a window whose slots are spaced
// go back to the store: each is granted again at a place of its own, not
// at a place past the limit each node counts alone, where they would tie.
func TestRefundsAtTwoNodesTieNoSlots(t *testing.T) {
	const rate = 4.0
	nodes := twoNodes(t)
	reserve := func(b *roomstate.Budget, now time.Time) time.Time { return reserveNow(t, b, now, rate) }
	for range 4 { // window 0 spent, at once
		reserve(nodes[0], inWindow(0, 0.1))
	}
	// Each node gives a place of window 1, ahead, and its attempt is undone.
	for i, b := range nodes {
		b.Refund(reserve(b, inWindow(0, 0.2+0.05*float64(i))))
	}
	var slots []time.Time
	for i := range 4 {
		slots = append(slots, reserve(nodes[i%2], inWindow(0, 0.3+0.05*float64(i))))
	}
	wantInOrder(t, slots)
	if in := countIn(slots, inWindow(1, 0), inWindow(2, 0)); in != 4 {
		t.Errorf("window 1 admitted %d of its limit of 4 after two refunds (slots %v)", in, offsets(slots))
	}
}

// Admissions refunded in a spaced window whose store count a lapsed one
// given back there lowered below them go back as far as the store takes
// them; the rest are spent at the node: none is lost.
func TestRefundsBeyondTheStoresCountAreNotLost(t *testing.T) {
	const rate = 1.0
	b, err := roomstate.NewBudget(openBolt(t), "room", 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	now := inWindow(0, 0.1)
	reserveNow(t, b, now, rate) // window 0's one
	b.Lapse(now)
	// Window 1: its one, and the lapsed one given back with its grant.
	given := []time.Time{reserveNow(t, b, now, rate), reserveNow(t, b, now, rate)}
	for _, slot := range given {
		if !slot.Before(inWindow(2, 0)) {
			t.Fatalf("slots %v, want both in window 1", offsets(given))
		}
		b.Refund(slot)
	}
	for i := range 2 {
		if slot := reserveNow(t, b, now, rate); !slot.Before(inWindow(2, 0)) {
			t.Errorf("place %d found after two refunds in window 1 fell due at %v, past it", i, slot.Sub(windowBase))
		}
	}
}

// What a stopping node gives back of a window whose slots are spaced
// takes no place another node holds: its unspent places, below another
// node's grant, and an admission refunded there go after every place
// granted, and places found afterwards at a third node fall due after
// the slots given before them.
func TestAStoppingNodesReturnTakesNoPlaceGiven(t *testing.T) {
	nodes, reserve := quotaNodes(t, 3)
	for range 8 { // window 0 spent, at once
		reserve(1, inWindow(0, 0.1))
	}
	// Node 0 is granted places 0–3 of window 1, ahead, and node 1 places
	// 4–7; node 0 gives one place and its admission is refunded. Node 1
	// gives its places; node 2 finds the next ones.
	refunded := reserve(0, inWindow(0, 0.2))
	slots := []time.Time{reserve(1, inWindow(0, 0.3))}
	nodes[0].Refund(refunded)
	if err := nodes[0].Return(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i := range 7 { // node 1's places 5–7, then the window's next at node 2
		slots = append(slots, reserve(min(2, 1+i/3), inWindow(0, 0.4+0.05*float64(i))))
	}
	wantInOrder(t, slots)
}

// A stopping node whose grant is still the window's end gives an
// admission refunded below places it gave back after every place granted,
// not in place, where it would take the last place it gave.
func TestAStoppingNodesRefundTakesNoPlaceGiven(t *testing.T) {
	nodes, reserve := quotaNodes(t, 2)
	for range 8 { // window 0 spent, at once
		reserve(1, inWindow(0, 0.1))
	}
	// Node 0 is granted places 0–3 of window 1 and gives 0, 1 and 2;
	// place 0's admission is refunded, and node 0 stops.
	first := reserve(0, inWindow(0, 0.2))
	slots := []time.Time{reserve(0, inWindow(0, 0.21)), reserve(0, inWindow(0, 0.22))}
	nodes[0].Refund(first)
	if err := nodes[0].Return(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		slots = append(slots, reserve(1, inWindow(0, 0.3+0.01*float64(i))))
	}
	wantInOrder(t, slots)
}

// An admission a node holds without a place in the window's order (one
// refunded) is spent after the store's, but when the store fails it
// serves at once: the store already counted it.
func TestBudgetRefundServesWhileTheStoreFails(t *testing.T) {
	st := &flaky{Store: openBolt(t)}
	b, err := roomstate.NewBudget(st, "room", 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 100_000_000)
	ok, err := b.Take(t.Context(), now, 10)
	if err != nil || !ok {
		t.Fatalf("Take = %v, %v", ok, err)
	}
	b.Refund(now)
	st.down = true
	if ok, err := b.Take(t.Context(), now, 10); err != nil || !ok {
		t.Fatalf("Take with a refunded admission held while the store fails = %v, %v; want it served", ok, err)
	}
	if _, err := b.Take(t.Context(), now, 10); err == nil {
		t.Fatal("Take with nothing held while the store fails: no error")
	}
}

// The spacing of a window's slots is the cluster's: a node that gave no
// slot ahead in a window another node did spaces its own there after the
// other's, in the order the store granted them, rather than admitting at
// once ahead of their holders.
func TestBudgetSpacingIsTheClusters(t *testing.T) {
	const rate = 4.0
	base, at := windowBase, inWindow
	nodes := twoNodes(t)
	var got []time.Time
	reserve := func(node, n int, now time.Time) {
		t.Helper()
		for range n {
			slot, err := nodes[node].Reserve(t.Context(), now, now, roomstate.Steady(rate))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, slot)
		}
	}
	reserve(0, 6, at(0, 0.1)) // four at once, two ahead in window 1
	reserve(1, 1, at(1, 0.1)) // window 1 has come: after them
	reserve(0, 1, at(1, 0.1))
	reserve(1, 1, at(2, 0.1)) // window 2: nobody gave a slot ahead, at once
	want := []time.Time{
		at(0, 0.1), at(0, 0.1), at(0, 0.1), at(0, 0.1),
		at(1, 0), at(1, 0.25),
		at(1, 0.5),
		at(1, 0.75),
		at(2, 0.1),
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("slot %d at %v, want %v (all: %v)", i, got[i].Sub(base), want[i].Sub(base), got)
		}
	}
}

// A slot given ahead never falls due before one given there earlier and
// still held, whatever happens between: a rate rise for the windows ahead
// (more admissions to space), or refunds of the slots before it. A slot
// asked for a moment ahead (a requeue's) holds no place in line: the
// window it falls in still admits at once when it comes. A window of no
// admission keeps no record.
func TestBudgetSpacingKeepsOrder(t *testing.T) {
	base, at := windowBase, inWindow
	now := at(0, 0.1)
	tests := []struct {
		name    string
		between func(b *roomstate.Budget, given []time.Time, rate *float64)
	}{
		{"the rate rises", func(_ *roomstate.Budget, _ []time.Time, rate *float64) { *rate = 8 }},
		{"the two slots before it are refunded", func(b *roomstate.Budget, given []time.Time, _ *float64) {
			b.Refund(given[4])
			b.Refund(given[5])
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := roomstate.NewBudget(openBolt(t), "room", 1, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			rate := 4.0
			rates := func(start time.Time) float64 {
				if start.Before(at(1, 0)) {
					return 4
				}
				return rate
			}
			var given []time.Time
			for range 7 { // four at once, three ahead in window 1
				slot, err := b.Reserve(t.Context(), now, now, rates)
				if err != nil {
					t.Fatal(err)
				}
				given = append(given, slot)
			}
			tt.between(b, given, &rate)
			slot, err := b.Reserve(t.Context(), now, now, rates)
			if err != nil {
				t.Fatal(err)
			}
			if held := given[6]; slot.Before(held) {
				t.Fatalf("a slot given after one at %v falls due before it, at %v", held.Sub(base), slot.Sub(base))
			}
		})
	}
	t.Run("a requeue's moment ahead", func(t *testing.T) {
		b, err := roomstate.NewBudget(openBolt(t), "room", 1, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if slot, err := b.Reserve(t.Context(), at(1, 0.5), now, roomstate.Steady(4)); err != nil || !slot.Equal(at(1, 0.5)) {
			t.Fatalf("requeued at %v, %v; want the moment asked", slot.Sub(base), err)
		}
		come := at(1, 0.01)
		for i := range 3 {
			slot, err := b.Reserve(t.Context(), come, come, roomstate.Steady(4))
			if err != nil || !slot.Equal(come) {
				t.Fatalf("admission %d of the window at %v (%v), want at once", i, slot.Sub(base), err)
			}
		}
	})
	t.Run("no admission to take", func(t *testing.T) {
		b, err := roomstate.NewBudget(openBolt(t), "room", 1, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Reserve(t.Context(), now, now, roomstate.Steady(0)); err == nil {
			t.Fatal("a slot at rate 0")
		}
		if n := roomstate.BudgetWindows(b); n > 1 {
			t.Fatalf("%d window records kept after a look-ahead that found nothing", n)
		}
	})
}

// What a batch reserved for the takers queued behind a slow call and they
// did not take, in a window whose slots are spaced, goes back to the
// store once they are served: a place this node finds later does not take
// an earlier slot there than a place another node found meanwhile. A
// return the store made and answered with an error counts as made: the
// window never admits more than its limit.
func TestBudgetBatchLeftoversGoBack(t *testing.T) {
	for _, tt := range []struct {
		name    string
		unknown bool // the store makes the return and answers an error
		full    int  // window 1's admissions, at least
	}{
		{name: "returned", full: 4},
		{name: "its outcome unknown", unknown: true, full: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const rate = 4.0
			base, at := windowBase, inWindow
			st, batching, other := batchingNodes(t, tt.unknown)
			reserve := func(b *roomstate.Budget, now time.Time) time.Time { return reserveNow(t, b, now, rate) }
			now := at(0, 0.1)
			for range 4 { // window 0 spent at the other node
				reserve(other, now)
			}
			// A place found at the batching node waits on the store for
			// window 0 while four takers of the current window queue
			// behind it; the store grants all of window 1 to them, and
			// only the place takes of it.
			slot := reserveBehindQueued(t, st, batching, now, rate, 4)
			slots := []time.Time{slot}
			if !slots[0].Equal(at(1, 0)) {
				t.Fatalf("the batching node's place at %v, want the start of window 1", slots[0].Sub(base))
			}
			// The other node finds a place, then the batching node another.
			found, later := at(0, 0.3), at(0, 0.5)
			then := reserve(other, found)
			last := reserve(batching, later)
			if last.Before(then) {
				t.Errorf("a place found at %v took the slot at %v, before the slot at %v of one found at %v", later.Sub(base), last.Sub(base), then.Sub(base), found.Sub(base))
			}
			// Both nodes go on finding places: window 1 admits its limit
			// when what went back is not lost, and never more.
			slots = append(slots, then, last)
			for i := range 6 {
				slots = append(slots, reserve([]*roomstate.Budget{batching, other}[i%2], at(0, 0.7)))
			}
			if in := countIn(slots, at(1, 0), at(2, 0)); in > 4 || in < tt.full {
				t.Errorf("window 1 admitted %d, want %d to 4 (its limit)", in, tt.full)
			}
		})
	}
}

// batchingNodes is two nodes' budgets of one room on one bolt store,
// reserving an admission at a time in 1 s windows: the first through st,
// which holds its first reservation until release closes (and, with
// returnFails, answers each return with an error after making it).
func batchingNodes(t *testing.T, returnFails bool) (st *stallingBudgetStore, batching, other *roomstate.Budget) {
	t.Helper()
	bolt := openBolt(t)
	st = &stallingBudgetStore{Store: bolt, began: make(chan struct{}), release: make(chan struct{}), returnFails: returnFails}
	var err error
	if batching, err = roomstate.NewBudget(st, "room", 1, time.Second); err != nil {
		t.Fatal(err)
	}
	if other, err = roomstate.NewBudget(bolt, "room", 1, time.Second); err != nil {
		t.Fatal(err)
	}
	return st, batching, other
}

// reserveBehindQueued reserves b's slot for a place found at now while
// queued takers of now's window queue behind its first store call (held by
// st until they have), and fails the test if any of them is admitted: the
// place's window is spent, and the call that finds it so reserves a batch
// for them all in the next window, ahead.
func reserveBehindQueued(t *testing.T, st *stallingBudgetStore, b *roomstate.Budget, now time.Time, rate float64, queued int) time.Time {
	t.Helper()
	first := make(chan time.Time, 1)
	go func() {
		slot, err := b.Reserve(t.Context(), now, now, roomstate.Steady(rate))
		if err != nil {
			t.Error(err)
		}
		first <- slot
	}()
	<-st.began
	took := make(chan bool, queued)
	for range queued {
		go func() {
			ok, err := b.Take(t.Context(), now, rate)
			if err != nil {
				t.Error(err)
			}
			took <- ok
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); roomstate.BudgetQueued(b) < int64(queued); {
		if time.Now().After(deadline) {
			t.Fatalf("%d takers queued, want %d", roomstate.BudgetQueued(b), queued)
		}
		runtime.Gosched()
	}
	close(st.release)
	slot := <-first
	for range queued {
		if <-took {
			t.Fatal("a taker of the spent window was admitted")
		}
	}
	return slot
}

// A batch's leftovers returned after another node was granted places
// behind them go after that node's: the places the window grants next
// are not its places again, nor before them. Places found one after
// another, at either node, fall due one after another.
func TestBudgetBatchReturnedBelowAnotherNodesGrantGoesLast(t *testing.T) {
	const rate = 8.0
	at := inWindow
	st, batching, other := batchingNodes(t, false)
	reserve := func(b *roomstate.Budget, now time.Time) time.Time { return reserveNow(t, b, now, rate) }
	for range 8 { // window 0 spent at the other node
		reserve(other, at(0, 0.1))
	}
	// The batching node is granted places 0–4 of window 1 for a place
	// and four takers; before it returns the four left, the other node
	// finds a place and is granted place 5.
	var found []time.Time
	st.beforeReturn = func() { found = append(found, reserve(other, at(0, 0.3))) }
	slots := []time.Time{reserveBehindQueued(t, st, batching, at(0, 0.1), rate, 4)}
	if len(found) != 1 {
		t.Fatalf("the other node found %d places before the batch's return, want 1", len(found))
	}
	slots = append(slots, found[0])
	for i := range 6 {
		slots = append(slots, reserve([]*roomstate.Budget{batching, other}[i%2], at(0, 0.4+0.1*float64(i))))
	}
	wantInOrder(t, slots)
	if in := countIn(slots, at(1, 0), at(2, 0)); in != 8 {
		t.Errorf("window 1 admitted %d of its limit of 8 (slots %v)", in, offsets(slots))
	}
}

// Refunds at two nodes in a window whose slots are spaced and the store
// granted in full go back before the nodes' next takers are served: each
// is granted again at a place of its own, not at the place past the limit
// each node would count alone.
func TestRefundsInAFullWindowTieNoSlots(t *testing.T) {
	const rate = 4.0
	nodes := twoNodes(t)
	reserve := func(i int, now time.Time) time.Time { return reserveNow(t, nodes[i], now, rate) }
	for range 4 { // window 0 spent, at once
		reserve(0, inWindow(0, 0.1))
	}
	var given [4]time.Time
	for i := range given { // window 1's places 0–3, ahead, alternately
		given[i] = reserve(i%2, inWindow(0, 0.2+0.01*float64(i)))
	}
	nodes[0].Refund(given[2])
	nodes[1].Refund(given[3])
	a, b := reserve(0, inWindow(0, 0.3)), reserve(1, inWindow(0, 0.35))
	if !b.After(a) {
		t.Errorf("a place found at node 1 after node 0's fell due at %v, not after its %v", b.Sub(windowBase), a.Sub(windowBase))
	}
}

// quotaNodes is n nodes' quotas of one room on one bolt store, in 1 s
// windows of 8 reserved 4 at a time, and a reserve that fails the test
// unless the node gives a slot.
func quotaNodes(t *testing.T, n int) ([]*roomstate.Quota, func(node int, now time.Time) time.Time) {
	t.Helper()
	st := openBolt(t)
	nodes := make([]*roomstate.Quota, n)
	for i := range nodes {
		q, err := roomstate.NewQuota(st, "r", 4, 8, 8, false)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = q
	}
	return nodes, func(node int, now time.Time) time.Time {
		t.Helper()
		slot, ok, err := nodes[node].Reserve(t.Context(), now, now)
		if err != nil || !ok {
			t.Fatalf("node %d: Reserve = %v, %v, %v", node, slot, ok, err)
		}
		return slot
	}
}

// wantInOrder fails the test unless each of the slots, given to places
// found one after another, falls due after the one before.
func wantInOrder(t *testing.T, slots []time.Time) {
	t.Helper()
	for i := 1; i < len(slots); i++ {
		if !slots[i].After(slots[i-1]) {
			t.Errorf("place %d found fell due at %v, not after place %d's slot at %v (slots %v)", i, slots[i].Sub(windowBase), i-1, slots[i-1].Sub(windowBase), offsets(slots))
		}
	}
}

// offsets is each slot's offset from windowBase, for messages.
func offsets(slots []time.Time) []time.Duration {
	out := make([]time.Duration, len(slots))
	for i, s := range slots {
		out[i] = s.Sub(windowBase)
	}
	return out
}

// countIn counts the slots in [from, to).
func countIn(slots []time.Time, from, to time.Time) int {
	n := 0
	for _, s := range slots {
		if !s.Before(from) && s.Before(to) {
			n++
		}
	}
	return n
}

// windowBase is the start of the 1 s budget window 0 in the tests that
// name moments by window (inWindow).
var windowBase = time.Unix(1_700_000_000, 0)

// inWindow is the moment frac of the way into the 1 s window w.
func inWindow(w int64, frac float64) time.Time {
	return windowBase.Add(time.Duration(w)*time.Second + time.Duration(frac*float64(time.Second)))
}

// A slot lapsing at a node that gave no slot in the windows other nodes
// filled meanwhile goes back after every slot given anywhere: the place
// that node finds next is not given an earlier slot than places other
// nodes found before it.
func TestALaggingNodesLapseGoesAfterEveryNodesSlots(t *testing.T) {
	const rate = 3.0
	nodes := twoNodes(t)
	reserve := func(b *roomstate.Budget, now time.Time) time.Time { return reserveNow(t, b, now, rate) }
	now := inWindow(0, 0.1)
	reserve(nodes[1], now) // the lagging node's one slot, which lapses
	var latest time.Time
	for range 11 { // the busy node fills windows 0 to 3
		latest = later(latest, reserve(nodes[0], now))
	}
	now = inWindow(0, 0.5)
	nodes[1].Lapse(now)
	got := reserve(nodes[1], now)
	if got.Before(latest) {
		t.Fatalf("the place the lagging node found after the lapse is given %v, before a slot given earlier at %v", got.Sub(windowBase), latest.Sub(windowBase))
	}
	// The lapsed admission is the window's one more, for a place found at
	// either node.
	in := 1
	for range int(rate) + 1 {
		if slot := reserve(nodes[0], now); slot.Before(inWindow(got.Unix()-windowBase.Unix()+1, 0)) {
			in++
		}
	}
	if in != int(rate)+1 {
		t.Fatalf("the window the lapsed admission went to gave %d slots, want its limit and one more (%d)", in, int(rate)+1)
	}
}

// A lapsed admission given back with a grant that spent its window (a
// block larger than what the window had left) is taken there by the next
// place this node finds: the node asks the store again.
func TestALapsedAdmissionReturnedToASpentWindowIsTaken(t *testing.T) {
	const rate = 3.0
	b, err := roomstate.NewBudget(openBolt(t), "room", 4, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	now := inWindow(0, 0.1)
	b.Lapse(now)
	in := 0
	for range int(rate) + 2 {
		slot, err := b.Reserve(t.Context(), now, now, roomstate.Steady(rate))
		if err != nil {
			t.Fatal(err)
		}
		if slot.Before(inWindow(1, 0)) {
			in++
		}
	}
	if in != int(rate)+1 {
		t.Fatalf("window 0 gave %d, want its limit and the lapsed one (%d)", in, int(rate)+1)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
