package roomstate_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/roomstate"
)

// flaky is a real store that fails every place and budget call while down.
type flaky struct {
	roomstate.Store
	down bool
}

var errDown = errors.New("connection refused (test)")

func (f *flaky) LookupPlace(ctx context.Context, room, id string, now time.Time) (queue.Place, error) {
	if f.down {
		return queue.Place{}, errDown
	}
	return f.Store.LookupPlace(ctx, room, id, now)
}

func (f *flaky) HoldPlace(ctx context.Context, room, id string, p queue.Place, until, now time.Time) (queue.Place, bool, error) {
	if f.down {
		return queue.Place{}, false, errDown
	}
	return f.Store.HoldPlace(ctx, room, id, p, until, now)
}

func (f *flaky) UsePlace(ctx context.Context, room, id string, p queue.Place, now time.Time) (bool, error) {
	if f.down {
		return false, errDown
	}
	return f.Store.UsePlace(ctx, room, id, p, now)
}

func (f *flaky) ReserveBudget(ctx context.Context, room string, w roomstate.Window, n int64) (roomstate.Grant, error) {
	if f.down {
		return roomstate.Grant{}, errDown
	}
	return f.Store.ReserveBudget(ctx, room, w, n)
}

// A place reserved in the store and admitted from memory while the store
// was down (on_unavailable local) stays used after the store returns: the
// store's Reserved must not let the same node admit it again.
func TestFallbackPlaceAdmittedInOutageStaysUsed(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	f := &flaky{Store: openBolt(t)}
	l := roomstate.FallbackLedger{Shared: roomstate.NewLedger(f, "r", clock), Local: queue.NewMemoryLedger(100, clock)}
	ctx := context.Background()
	if _, won, err := l.Hold(ctx, "p", queue.Place{State: queue.PlaceReserved, Slot: now.Add(time.Second)}, now.Add(time.Hour)); err != nil || !won {
		t.Fatal(won, err)
	}
	now = now.Add(2 * time.Second)
	f.down = true
	if p, _ := l.Lookup(ctx, "p"); p.State != queue.PlaceWaiting {
		t.Fatalf("lookup during the outage: %v, want waiting (from memory)", p.State)
	}
	if _, won, err := l.Hold(ctx, "p", queue.Place{State: queue.PlaceUsed}, now.Add(time.Hour)); err != nil || !won {
		t.Fatal("admitted during the outage:", won, err)
	}
	f.down = false
	p, err := l.Lookup(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if p.State != queue.PlaceUsed {
		t.Fatalf("after the outage the place admitted from memory looks %v, want used", p.State)
	}
}

// A quota whose store cannot be reached gives no slot and takes nothing:
// on on_unavailable local it says so (the node's own bucket gives the
// slot), on refuse it answers the error. Either way the window the store
// keeps is untouched: once it answers, the window grants the rest of its
// limit and no more.
func TestQuotaOutOfReachTakesNothing(t *testing.T) {
	for _, local := range []bool{true, false} {
		t.Run(fmt.Sprint("local=", local), func(t *testing.T) {
			f := &flaky{Store: openBolt(t)}
			now := time.Unix(1_700_000_000, 0)
			q, err := roomstate.NewQuota(f, "r", 1, 5, 50, local) // 10 s windows of 50
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for range 10 {
				if _, shared, err := q.Reserve(ctx, now, now); err != nil || !shared {
					t.Fatalf("store up: shared %v, %v", shared, err)
				}
			}
			f.down = true
			for range 20 {
				_, shared, err := q.Reserve(ctx, now, now)
				if shared || (err == nil) != local {
					t.Fatalf("store down: shared %v, error %v; want no slot and an error only without local", shared, err)
				}
			}
			f.down = false
			granted := 0
			for range 100 {
				slot, shared, err := q.Reserve(ctx, now, now)
				if err != nil || !shared || !slot.Equal(now) {
					break
				}
				granted++
			}
			if granted != 40 {
				t.Fatalf("after the outage the window granted %d more, want the 40 left of 50", granted)
			}
		})
	}
}

// Places admitted from memory while the store was down (on_unavailable
// local) are written back when it returns: another node, or this one
// restarted, then finds them used. A place the store meanwhile had used
// elsewhere is counted as admitted twice.
func TestFallbackWritesBackPlacesUsedInOutage(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	bolt := openBolt(t)
	f := &flaky{Store: bolt}
	backlog := roomstate.NewBacklog()
	l := roomstate.FallbackLedger{Shared: roomstate.NewLedger(f, "r", clock), Local: queue.NewMemoryLedger(100, clock), Backlog: backlog}
	other := roomstate.NewLedger(bolt, "r", clock) // a node the outage did not cut off
	ctx := context.Background()
	until := now.Add(time.Hour)
	// Reserved in the store before the outage, used from memory in it.
	if _, won, err := l.Hold(ctx, "reserved", queue.Place{State: queue.PlaceReserved, Slot: now.Add(time.Second)}, until); err != nil || !won {
		t.Fatal(won, err)
	}
	now = now.Add(2 * time.Second)
	f.down = true
	for _, id := range []string{"held", "elsewhere", "reserved"} {
		if _, won, err := l.Hold(ctx, id, queue.Place{State: queue.PlaceUsed, By: "tok-" + id, Pass: "pass-" + id, At: now}, until); err != nil || !won {
			t.Fatalf("%s admitted during the outage: %v %v", id, won, err)
		}
	}
	// A place reserved in memory and then used in memory, too.
	if _, won, err := l.Hold(ctx, "slot", queue.Place{State: queue.PlaceReserved, Slot: now.Add(time.Second)}, until); err != nil || !won {
		t.Fatal(won, err)
	}
	if ok, err := l.Use(ctx, "slot", queue.Place{State: queue.PlaceUsed, By: "tok-slot", Pass: "pass-slot", At: now.Add(time.Second)}); err != nil || !ok {
		t.Fatal("slot used in memory:", ok, err)
	}
	// Meanwhile another node admitted "elsewhere" through the store.
	if _, won, err := other.Hold(ctx, "elsewhere", queue.Place{State: queue.PlaceUsed, By: "other"}, until); err != nil || !won {
		t.Fatal(won, err)
	}
	if n := backlog.Len(); n != 4 {
		t.Fatalf("backlog holds %d places, want 4", n)
	}
	// Still down: nothing written, nothing lost.
	if w, _, err := backlog.WriteBack(ctx, f, "r", now); err == nil || w != 0 || backlog.Len() != 4 {
		t.Fatalf("write-back while down: %d written, %v; %d left", w, err, backlog.Len())
	}
	f.down = false
	written, twice, err := backlog.WriteBack(ctx, f, "r", now)
	if err != nil || written != 3 || twice != 1 || backlog.Len() != 0 {
		t.Fatalf("write-back: %d written, %d twice, %v; %d left; want 3, 1, nil, 0", written, twice, err, backlog.Len())
	}
	for _, id := range []string{"held", "reserved", "slot"} {
		p, err := other.Lookup(ctx, id)
		if err != nil || p.State != queue.PlaceUsed || p.Pass != "pass-"+id {
			t.Fatalf("another node reads %s as %+v, %v; want used with its pass", id, p, err)
		}
	}
}

// A rate raised grants its new admissions in
// windows a node had found spent at the old rate: the next slot is in the
// current window, not after every window booked before the raise.
func TestQuotaRateRaiseReopensSpentWindows(t *testing.T) {
	st := openBolt(t)
	now := time.Unix(1_700_000_000, 0)
	q, err := roomstate.NewQuota(st, "r", 1, 1, 1, false) // 1 s windows of 1
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 5 {
		slot, _, err := q.Reserve(ctx, now, now)
		if want := now.Add(time.Duration(i) * time.Second); err != nil || !slot.Equal(want) {
			t.Fatalf("slot %d at %v (%v), want %v", i, slot, err, want)
		}
	}
	q.SetRate(3) // windows of 3
	if slot, _, err := q.Reserve(ctx, now, now); err != nil || !slot.Equal(now) {
		t.Fatalf("after the raise: slot at %v (%v), want %v, the current window's", slot, err, now)
	}
}

// Slots given ahead stay counted in their windows when the rate changes:
// a quota's windows keep the length it started with (here 2 s, 0.5/s),
// so two nodes, one booking ten slots at 0.5/s, the other ten after the
// rate fell to 0.4/s, never put more in a window than one. A fractional
// rate's limits alternate, and the new rate's alternate out of phase with
// the old: the seconds booked ahead may take up to one more each (docs/
// SCALING.md).
func TestQuotaRateChangeKeepsSlotsGivenAhead(t *testing.T) {
	st := openBolt(t)
	now := time.Unix(1_700_000_000, 0)
	a, err := roomstate.NewQuota(st, "r", 1, 0.5, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := roomstate.NewQuota(st, "r", 1, 0.5, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	perWindow := map[int64]int{}
	for _, q := range []*roomstate.Quota{a, b} {
		for range 10 {
			slot, _, err := q.Reserve(ctx, now, now)
			if err != nil {
				t.Fatal(err)
			}
			perWindow[slot.Unix()/2]++
		}
		a.SetRate(0.4)
		b.SetRate(0.4)
	}
	for w, n := range perWindow {
		if n > 1 {
			t.Fatalf("window at %d s holds %d slots, want at most 1", 2*w-now.Unix(), n)
		}
	}
}

// A quota giving slots only in the current window (a room sized by
// capacity) answers, once that window is spent, that the place holds
// nothing until the next; otherwise it gives a slot in the next window.
func TestQuotaNowOnlyGivesNoSlotAhead(t *testing.T) {
	for _, nowOnly := range []bool{false, true} {
		t.Run(fmt.Sprint("nowOnly=", nowOnly), func(t *testing.T) {
			now := time.Unix(1_700_000_000, 200_000_000)
			q, err := roomstate.NewQuota(openBolt(t), "r", 1, 2, 2, false) // 1 s windows of 2
			if err != nil {
				t.Fatal(err)
			}
			q.SetNowOnly(nowOnly)
			ctx := context.Background()
			for range 2 {
				if slot, shared, err := q.Reserve(ctx, now, now); err != nil || !shared || !slot.Equal(now) {
					t.Fatalf("the current window: %v, %v, %v", slot, shared, err)
				}
			}
			next := now.Truncate(time.Second).Add(time.Second)
			slot, shared, err := q.Reserve(ctx, now, now)
			var spent *admission.QuotaSpentError
			switch {
			case nowOnly && (!errors.As(err, &spent) || !spent.Retry.Equal(next) || shared):
				t.Fatalf("spent for now: %v, %v, %v; want QuotaSpentError until %v", slot, shared, err, next)
			case !nowOnly && (err != nil || !slot.Equal(next)):
				t.Fatalf("spent for now: %v, %v; want a slot at %v", slot, err, next)
			}
			if nowOnly { // the window ahead's admission it took stays for its window
				if slot, _, err := q.Reserve(ctx, next, next); err != nil || !slot.Equal(next) {
					t.Fatalf("at the next window: %v, %v", slot, err)
				}
			}
		})
	}
}

// A rate cut each node learns at its own moment: applied at once, the
// window they learn it in admits up to the rate of whichever node has not
// yet; scheduled for a window every node has learned it by, every window
// admits at one rate, the same at every node.
func TestQuotaRateScheduledAheadHoldsEveryNodeToOneLimit(t *testing.T) {
	start := time.Unix(1_700_000_000, 0) // a window boundary
	const before, after = 10, 4          // admissions a 1 s window
	for _, tc := range []struct {
		name      string
		scheduled bool
		want      []int // admitted in each of three windows
	}{
		{"at once", false, []int{7, 4, 4}},
		{"scheduled", true, []int{10, 4, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openBolt(t)
			var nodes [2]*roomstate.Quota
			for i := range nodes {
				q, err := roomstate.NewQuota(st, "r", 1, before, before, false)
				if err != nil {
					t.Fatal(err)
				}
				q.SetNowOnly(true)
				nodes[i] = q
			}
			learn := func(q *roomstate.Quota) {
				if tc.scheduled {
					q.SetRateFrom(after, start.Add(time.Second))
				} else {
					q.SetRate(after)
				}
			}
			// Node 0 learns the cut as the first window starts, node 1
			// halfway through it.
			learn(nodes[0])
			ctx := context.Background()
			for w, want := range tc.want {
				now := start.Add(time.Duration(w) * time.Second)
				got := 0
				for i := range 2 * before {
					q := nodes[i%2]
					if w == 0 && i == before {
						learn(nodes[1])
					}
					if slot, shared, err := q.Reserve(ctx, now, now); err == nil && shared && slot.Equal(now) {
						got++
					}
				}
				if got != want {
					t.Errorf("window %d admitted %d, want %d", w, got, want)
				}
			}
		})
	}
}

// Attempts refused while the current window is spent, however many at
// once, take nothing of the windows after it: what they took would be
// given there at the rate of the moment they took it.
func TestQuotaNowOnlyTakesNothingAhead(t *testing.T) {
	now := time.Unix(1_700_000_000, 200_000_000)
	st := openBolt(t)
	q, err := roomstate.NewQuota(st, "r", 1, 2, 2, false) // 1 s windows of 2
	if err != nil {
		t.Fatal(err)
	}
	q.SetNowOnly(true)
	ctx := context.Background()
	for range 2 {
		if _, _, err := q.Reserve(ctx, now, now); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			var spent *admission.QuotaSpentError
			if _, _, err := q.Reserve(ctx, now, now); !errors.As(err, &spent) {
				t.Errorf("spent window: %v, want QuotaSpentError", err)
			}
		})
	}
	wg.Wait()
	next := roomstate.Window{Index: now.Unix() + 1, Limit: 2, Expires: now.Add(time.Minute)}
	if got, err := st.ReserveBudget(ctx, "r", next, 2); err != nil || got.N != 2 {
		t.Fatalf("the next window has %d of 2 left (%v): the refused attempts took the rest", got.N, err)
	}
}

// A slot asked for a later window (a refused place held again) takes that
// window's admission and leaves what this node holds of the current one:
// the current window keeps giving slots from its block, and a refund there
// is spent again.
func TestQuotaNowOnlyLaterSlotKeepsTheCurrentWindow(t *testing.T) {
	now := time.Unix(1_700_000_000, 200_000_000)
	next := now.Truncate(time.Second).Add(time.Second)
	q, err := roomstate.NewQuota(openBolt(t), "r", 4, 4, 4, false) // 1 s windows of 4, blocks of 4
	if err != nil {
		t.Fatal(err)
	}
	q.SetNowOnly(true)
	ctx := context.Background()
	first, _, err := q.Reserve(ctx, now, now) // the current window's block: 3 left here
	if err != nil {
		t.Fatal(err)
	}
	if slot, shared, err := q.Reserve(ctx, next, now); err != nil || !shared || !slot.Equal(next) {
		t.Fatalf("a slot in the next window: %v, %v, %v", slot, shared, err)
	}
	q.Refund(first)
	for i := range 4 {
		if slot, shared, err := q.Reserve(ctx, now, now); err != nil || !shared || !slot.Equal(now) {
			t.Fatalf("admission %d of the current window's block: %v, %v, %v", i+1, slot, shared, err)
		}
	}
}

// A window under way keeps its rate however many changes are scheduled
// for the windows after it (a poll of seconds stores one a tick for the
// windows two polls ahead).
func TestQuotaKeepsTheRateOfTheWindowUnderWay(t *testing.T) {
	now := time.Unix(1_700_000_000, 0) // a window boundary
	// 1 s windows of 10.
	q, err := roomstate.NewQuota(openBolt(t), "r", 1, 10, 10, false)
	if err != nil {
		t.Fatal(err)
	}
	q.SetNowOnly(true)
	ctx := context.Background()
	if _, _, err := q.Reserve(ctx, now, now); err != nil {
		t.Fatal(err)
	}
	for tick := range 20 {
		q.SetRateFrom(1, now.Add(10*time.Second+time.Duration(tick)*time.Second))
	}
	got := 1
	for range 20 {
		if _, _, err := q.Reserve(ctx, now, now); err != nil {
			break
		}
		got++
	}
	if got != 10 {
		t.Errorf("the window under way admitted %d, want its 10", got)
	}
	later := now.Add(40 * time.Second)
	got = 0
	for range 20 {
		if _, _, err := q.Reserve(ctx, later, later); err != nil {
			break
		}
		got++
	}
	if got != 1 {
		t.Errorf("a window after the changes admitted %d, want 1", got)
	}
}
