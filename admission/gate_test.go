package admission

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
)

// solve returns a solution for the ticket's challenge.
func solve(t testing.TB, c *tokens.WaitClaims) string {
	t.Helper()
	n, err := tokens.Solve(context.Background(), c.Ch, c.Dif)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatUint(n, 10)
}

// eligibleAt is when the ticket's visitor becomes eligible under the room's
// current clock: the test may know v, the gate's answers may not reveal it.
func eligibleAt(t testing.TB, g *Gate, room *Room, c *tokens.WaitClaims, now time.Time) time.Time {
	t.Helper()
	v := g.Codec().Keys().Lottery(c.Lot)
	when, ok := room.View(now).Clock.When(now, c.Srv+queue.Threshold(v))
	if !ok {
		t.Fatal("never eligible")
	}
	return when
}

func TestDecideAdmitsOnceEligible(t *testing.T) {
	g := testGate(t, 100)
	room := testRoom(t, nil)
	ctx := context.Background()
	tk, err := g.Issue(room, Visitor{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	first := tk.Claims
	nonce := solve(t, first)
	token, prev := tk.Token, ""
	at := first.NextAttempt()
	when := eligibleAt(t, g, room, first, t0)
	for range 1000 {
		d := g.Decide(ctx, room, Attempt{Token: token, Nonce: nonce, Now: at})
		if d.Outcome == OutcomeAdmit {
			if at.Before(when) {
				t.Fatalf("admitted at %v, before eligibility at %v", at, when)
			}
			if d.PassClaims.Wid != first.ID || d.PassClaims.Subject != first.Subject {
				t.Fatalf("pass %+v does not name its token", d.PassClaims)
			}
			pc, err := g.VerifyPass("sale", d.Pass, at)
			if err != nil || pc.ID != d.PassClaims.ID {
				t.Fatalf("VerifyPass: %+v, %v", pc, err)
			}
			// The same token again (its answer lost): the same pass.
			again := g.Decide(ctx, room, Attempt{Token: token, Nonce: nonce, Now: at.Add(time.Second)})
			if again.Outcome != OutcomeAdmit || !again.Again || again.Pass != d.Pass {
				t.Fatalf("second use: %v again=%v, same pass %v", again.Outcome, again.Again, again.Pass == d.Pass)
			}
			// Any other version of the place's token: used.
			if prev == "" {
				t.Fatal("admitted at the first attempt: no earlier version to replay")
			}
			if other := g.Decide(ctx, room, Attempt{Token: prev, Nonce: nonce, Now: at}); other.Outcome != OutcomeReused {
				t.Fatalf("an earlier version after the admission: %v", other.Outcome)
			}
			return
		}
		if d.Outcome != OutcomeWait {
			t.Fatalf("attempt at %v: %v (%v)", at.Sub(t0), d.Outcome, d.Err)
		}
		c := d.Next.Claims
		if c.ID != first.ID || c.Lot != first.Lot || c.Ch != first.Ch || c.Srv != first.Srv || c.IssuedAt != first.IssuedAt {
			t.Fatalf("re-signing moved a fixed claim: %+v vs %+v", c, first)
		}
		if d.RetryAfter < g.policy.MinBackoff*3/4 || d.RetryAfter > g.policy.MaxBackoff*5/4 {
			t.Fatalf("backoff %v out of bounds", d.RetryAfter)
		}
		prev, token, at = token, d.Next.Token, c.NextAttempt()
	}
	t.Fatal("never admitted")
}

func TestDecideRejections(t *testing.T) {
	ctx := context.Background()
	g := testGate(t, 100)
	room := testRoom(t, func(c *RoomConfig) { c.Difficulty = 8 })
	tk, err := g.Issue(room, Visitor{Subject: "user-1"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	nonce := solve(t, tk.Claims)
	at := tk.Claims.NextAttempt()
	tests := []struct {
		name    string
		attempt Attempt
		want    Outcome
		err     error
	}{
		{"malformed token", Attempt{Token: "x.y", Nonce: nonce, Now: at}, OutcomeInvalid, tokens.ErrMalformed},
		{"expired", Attempt{Token: tk.Token, Nonce: nonce, Now: at.Add(time.Hour)}, OutcomeInvalid, tokens.ErrExpired},
		{"wrong visitor", Attempt{Token: tk.Token, Nonce: nonce, Visitor: Visitor{Subject: "user-2"}, Now: at}, OutcomeInvalid, ErrIdentity},
		{"anonymous presenter", Attempt{Token: tk.Token, Nonce: nonce, Now: at}, OutcomeInvalid, ErrIdentity},
		{"malformed nonce", Attempt{Token: tk.Token, Nonce: "01", Visitor: Visitor{Subject: "user-1"}, Now: at}, OutcomeInvalid, tokens.ErrNonceMalformed},
		{"no nonce", Attempt{Token: tk.Token, Visitor: Visitor{Subject: "user-1"}, Now: at}, OutcomeInvalid, tokens.ErrNonceMalformed},
		{"right visitor", Attempt{Token: tk.Token, Nonce: nonce, Visitor: Visitor{Subject: "user-1"}, Now: at}, OutcomeWait, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := g.Decide(ctx, room, tt.attempt)
			if d.Outcome != tt.want || !errors.Is(d.Err, tt.err) {
				t.Fatalf("Decide = %v (%v), want %v (%v)", d.Outcome, d.Err, tt.want, tt.err)
			}
		})
	}
	// A nonce for the 8-bit challenge that fails a harder one.
	wrong := "0"
	for i := 0; tokens.VerifyWork(tk.Claims.Ch, 8, wrong) == nil; i++ {
		wrong = strconv.Itoa(i + 1)
	}
	if d := g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: wrong, Visitor: Visitor{Subject: "user-1"}, Now: at}); !errors.Is(d.Err, tokens.ErrWorkInsufficient) {
		t.Fatalf("wrong proof of work: %v (%v)", d.Outcome, d.Err)
	}
}

// TestEarlyAttemptsChangeNothing: an attempt before nxt gets the same token
// back, unsigned again, and leaves the place exactly where it was.
func TestEarlyAttemptsChangeNothing(t *testing.T) {
	ctx := context.Background()
	g := testGate(t, 100)
	room := testRoom(t, nil)
	tk, _ := g.Issue(room, Visitor{}, t0)
	nonce := solve(t, tk.Claims)
	for i := range 50 {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		d := g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: nonce, Now: at})
		if d.Outcome != OutcomeEarly || d.Next.Token != tk.Token || d.RetryAfter != tk.Claims.NextAttempt().Sub(at) {
			t.Fatalf("early attempt %d: %v, token changed %v, retry %v", i, d.Outcome, d.Next.Token != tk.Token, d.RetryAfter)
		}
	}
	if n := room.Population(t0.Add(time.Minute)); n != 0 {
		t.Fatalf("early attempts counted as %v present", n)
	}
}

// TestOldVersionsNoBetterThanNew: every version of a token names the same
// chain of checkpoints, so presenting an old version late gets exactly the
// answer the newest version gets.
func TestOldVersionsNoBetterThanNew(t *testing.T) {
	ctx := context.Background()
	g := testGate(t, 100)
	room := testRoom(t, func(c *RoomConfig) { c.Tau = time.Hour })
	tk, _ := g.Issue(room, Visitor{}, t0)
	nonce := solve(t, tk.Claims)
	versions := []string{tk.Token}
	token, at := tk.Token, tk.Claims.NextAttempt()
	for range 10 {
		d := g.Decide(ctx, room, Attempt{Token: token, Nonce: nonce, Now: at})
		if d.Outcome != OutcomeWait {
			t.Skipf("admitted early in the chain (%v); the draw is too lucky for this test", d.Outcome)
		}
		token, at = d.Next.Token, d.Next.Claims.NextAttempt()
		versions = append(versions, token)
	}
	// Every version presented at the newest checkpoint's moment, minus a
	// millisecond, names that checkpoint.
	for i, v := range versions[:len(versions)-1] {
		d := g.Decide(ctx, room, Attempt{Token: v, Nonce: nonce, Now: at.Add(-time.Millisecond)})
		if d.Outcome != OutcomeWait || !d.Next.Claims.NextAttempt().Equal(at) {
			t.Fatalf("version %d: %v, next %v, want %v", i, d.Outcome, d.Next.Claims.NextAttempt(), at)
		}
	}
}

func TestDecideRoomStates(t *testing.T) {
	ctx := context.Background()
	g := testGate(t, 100)
	room := testRoom(t, func(c *RoomConfig) { c.Burst = 1; c.Rate = 1 })
	tk, _ := g.Issue(room, Visitor{}, t0)
	nonce := solve(t, tk.Claims)
	when := eligibleAt(t, g, room, tk.Claims, t0)
	at := when.Add(time.Second)
	if at.Before(tk.Claims.NextAttempt()) {
		at = tk.Claims.NextAttempt()
	}
	if err := room.SetState(StatePaused, time.Time{}, t0); err != nil {
		t.Fatal(err)
	}
	if d := g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: nonce, Now: at}); d.Outcome != OutcomeWait {
		t.Fatalf("paused room: %v", d.Outcome)
	}
	if err := room.SetState(StateClosed, time.Time{}, t0); err != nil {
		t.Fatal(err)
	}
	if d := g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: nonce, Now: at}); d.Outcome != OutcomeClosed {
		t.Fatalf("closed room: %v", d.Outcome)
	}
	// Back to queue with the clock having stood still while paused: the
	// visitor is eligible as far after the resume as before the pause.
	resume := at
	if err := room.SetState(StateQueue, time.Time{}, resume); err != nil {
		t.Fatal(err)
	}
	late := resume.Add(when.Sub(t0) + time.Minute)
	// Empty the bucket of 1 at the resume, before the place's checkpoint,
	// for a second past late: a place presenting late takes the slot it
	// would have had at its checkpoint (Room.reserveAdmission), so slots
	// given after its checkpoint would not make it wait.
	// The queue opened anew at the resume, so its bucket starts with one
	// admission there (queue.Bucket.OpenAt): n reservations take the slots 0 s
	// to n−1 s after it, and the place the next.
	debt := late.Sub(resume)
	n := int(debt/time.Second) + 2
	for range n {
		room.reserveAdmission(resume, resume)
	}
	slot := resume.Add(time.Duration(n) * time.Second)
	d := g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: nonce, Now: late})
	// The slot, rounded up to nxt's millisecond.
	if d.Outcome != OutcomeBusy || d.RetryAfter < slot.Sub(late) || d.RetryAfter > slot.Sub(late)+time.Millisecond {
		t.Fatalf("eligible with an empty bucket: %v, slot in %v, want %v", d.Outcome, d.RetryAfter, slot.Sub(late))
	}
	// Any version, the old one too, holds the slot and no other.
	half := late.Add(slot.Sub(late) / 2)
	if d := g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: nonce, Now: half}); d.Outcome != OutcomeBusy || d.RetryAfter < slot.Sub(half) || d.RetryAfter > slot.Sub(half)+time.Millisecond {
		t.Fatalf("before the slot: %v in %v", d.Outcome, d.RetryAfter)
	}
	if d := g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: nonce, Now: d.Next.Claims.NextAttempt()}); d.Outcome != OutcomeAdmit {
		t.Fatalf("at the slot: %v (%v)", d.Outcome, d.Err)
	}
}

func TestScheduledPreQueue(t *testing.T) {
	ctx := context.Background()
	g := testGate(t, 100)
	start := t0.Add(10 * time.Minute)
	room := testRoom(t, func(c *RoomConfig) { c.State = StateScheduled; c.SaleStart = start })
	tk, _ := g.Issue(room, Visitor{}, t0.Add(time.Minute))
	if tk.Claims.Srv != 0 {
		t.Fatalf("pre-queue srv %v, want 0", tk.Claims.Srv)
	}
	if est, ok := tk.Estimate, tk.EstimateKnown; !ok || est < 9*time.Minute {
		t.Fatalf("pre-queue estimate %v %v", est, ok)
	}
	before := start.Add(-time.Second)
	if d := g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: "0", Now: before}); d.Outcome != OutcomeWait && d.Outcome != OutcomeEarly {
		t.Fatalf("before the start: %v (%v)", d.Outcome, d.Err)
	}
	if got := room.View(start).State; got != StateQueue {
		t.Fatalf("state at the start: %v", got)
	}
}

// TestEstimateRevealsNothing: every visitor of a room gets the same estimate
// at the same moment, whatever their lottery number.
func TestEstimateRevealsNothing(t *testing.T) {
	g := testGate(t, 100)
	room := testRoom(t, nil)
	var first time.Duration
	for i := range 50 {
		tk, err := g.Issue(room, Visitor{}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = tk.Estimate
		} else if tk.Estimate != first {
			t.Fatalf("estimates differ: %v vs %v", tk.Estimate, first)
		}
	}
}

func TestLedgerFullFailsClosed(t *testing.T) {
	ctx := context.Background()
	g := testGate(t, 1)
	room := testRoom(t, func(c *RoomConfig) { c.State = StateOpen })
	for i, want := range []Outcome{OutcomeAdmit, OutcomeUnavailable} {
		tk, _ := g.Issue(room, Visitor{}, t0)
		d := g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: "0", Now: tk.Claims.NextAttempt()})
		if d.Outcome != want {
			t.Fatalf("attempt %d: %v (%v), want %v", i, d.Outcome, d.Err, want)
		}
	}
}

func TestResumeChangesNothing(t *testing.T) {
	g := testGate(t, 100)
	room := testRoom(t, nil)
	tk, _ := g.Issue(room, Visitor{Subject: "u"}, t0)
	again, err := g.Resume(room, tk.Token, Visitor{Subject: "u"}, t0.Add(time.Second))
	if err != nil || again.Token != tk.Token {
		t.Fatalf("Resume: %v", err)
	}
	if _, err := g.Resume(room, tk.Token, Visitor{Subject: "someone else"}, t0); !errors.Is(err, ErrIdentity) {
		t.Fatalf("Resume by another visitor: %v", err)
	}
}

func TestBindingAndRequeue(t *testing.T) {
	ctx := context.Background()
	g := testGate(t, 100)
	room := testRoom(t, func(c *RoomConfig) { c.State = StateOpen })
	tk, err := g.Issue(room, Visitor{Binding: "net-a"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Claims.Bnd != "net-a" || tk.Claims.Subject == "" {
		t.Fatalf("claims %+v", tk.Claims)
	}
	at := tk.Claims.NextAttempt()
	if d := g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: "0", Visitor: Visitor{Binding: "net-b"}, Now: at}); !errors.Is(d.Err, ErrIdentity) {
		t.Fatalf("token from another network: %v (%v)", d.Outcome, d.Err)
	}
	d := g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: "0", Visitor: Visitor{Binding: "net-a"}, Now: at})
	if d.Outcome != OutcomeAdmit {
		t.Fatalf("same network: %v (%v)", d.Outcome, d.Err)
	}
	// The hook turned the admission away: the token waits again, unpunished,
	// holding its admission as a slot at its next checkpoint.
	back := g.Requeue(ctx, room, d, at)
	if back.Outcome != OutcomeWait || back.Next.Claims.ID != tk.Claims.ID || !back.Next.Claims.NextAttempt().After(at) {
		t.Fatalf("requeue: %v %+v", back.Outcome, back.Next.Claims)
	}
	if level := room.bucket.Level(at); level != 99 {
		t.Fatalf("requeue: bucket at %v of 100, want the place's admission kept (99)", level)
	}
	// The refused version again, at once: not judged again before the checkpoint.
	if d := g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: "0", Visitor: Visitor{Binding: "net-a"}, Now: at}); d.Outcome != OutcomeBusy || !d.Next.Claims.NextAttempt().Equal(back.Next.Claims.NextAttempt()) {
		t.Fatalf("refused version again: %v, want busy until %v", d.Outcome, back.Next.Claims.NextAttempt())
	}
	again := g.Decide(ctx, room, Attempt{Token: back.Next.Token, Nonce: "0", Visitor: Visitor{Binding: "net-a"}, Now: back.Next.Claims.NextAttempt()})
	if again.Outcome != OutcomeAdmit {
		t.Fatalf("after requeue: %v (%v)", again.Outcome, again.Err)
	}
	if level := room.bucket.Level(at); level != 99 {
		t.Fatalf("admitted from its slot: bucket at %v, want 99 (one admission for the place)", level)
	}
}

// TestCheckpointGrid: points are strictly increasing, spaced between the
// backoff bounds (MinBackoff near the start), and after() finds the first
// point after any moment.
func TestCheckpointGrid(t *testing.T) {
	g := testGate(t, 1)
	view := testRoom(t, nil).View(t0)
	for _, lot := range []string{"a", "b", "c"} {
		grid := g.grid(&view, lot)
		prev := grid.at(0)
		if prev.Before(t0) || prev.Sub(t0) >= g.policy.MinBackoff {
			t.Fatalf("first point at %v", prev.Sub(t0))
		}
		for n := int64(1); n < 400; n++ {
			p := grid.at(n)
			gap := p.Sub(prev)
			if gap < g.policy.MinBackoff-time.Millisecond || gap > g.policy.MaxBackoff+time.Millisecond {
				t.Fatalf("lot %s point %d: gap %v", lot, n, gap)
			}
			for _, probe := range []time.Time{prev, prev.Add(time.Millisecond), p.Add(-time.Millisecond)} {
				if got := grid.after(probe); got != n {
					t.Fatalf("after(%v) = %d, want %d", probe.Sub(t0), got, n)
				}
			}
			prev = p
		}
	}
}

// TestLateRespacedPlaceOutlivesItsDue: a place found eligible late (within
// the bucket's late memory) whose missed slot has passed is held in the ledger at now;
// re-spaced by the pacer (in debt past a burst: no credit), its new
// version's expiry is capped from that slot, so a re-spacing under
// TokenTTL keeps the place (the cap from the missed slot, minutes before,
// made it expire 2m18s before its due).
func TestLateRespacedPlaceOutlivesItsDue(t *testing.T) {
	ctx := context.Background()
	g := testGate(t, 1000)
	room := testRoom(t, func(c *RoomConfig) { c.Rate = 1; c.Burst = 1 })
	tk, err := g.Issue(room, Visitor{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	nonce := solve(t, tk.Claims)
	when := eligibleAt(t, g, room, tk.Claims, t0)
	token, claims := tk.Token, tk.Claims
	for claims.NextAttempt().Before(when) {
		d := g.Decide(ctx, room, Attempt{Token: token, Nonce: nonce, Now: claims.NextAttempt()})
		if d.Outcome != OutcomeWait {
			t.Fatalf("before eligibility: %v", d.Outcome)
		}
		token, claims = d.Next.Token, d.Next.Claims
	}
	found := claims.NextAttempt()       // eligible at this checkpoint
	room.reserveAdmission(found, found) // another place, on time there
	late := found.Add(4*time.Minute + 30*time.Second)
	for room.BucketLevel(late) > -1 { // the bucket binds when it presents
		room.reserveAdmission(late, late)
	}
	for i := range 500 { // a cut's re-spaced holders: the pacer owes 500 s
		room.paceSlot(fmt.Sprint("other-", i), late, late)
	}
	d := g.Decide(ctx, room, Attempt{Token: token, Nonce: nonce, Now: late})
	if d.Outcome != OutcomeBusy {
		t.Fatalf("late with the pacer in debt: %v (%v), want busy (re-spaced)", d.Outcome, d.Err)
	}
	due := d.Next.Claims.NextAttempt()
	if due.Sub(late) > g.policy.TokenTTL {
		t.Fatalf("re-spaced by %v, beyond TokenTTL: the test means nothing", due.Sub(late))
	}
	if exp := time.Unix(d.Next.Claims.ExpiresAt, 0); exp.Before(due) {
		t.Errorf("re-spaced by %v (under TokenTTL %v): the new version expires %v, %v before its due, so the place is lost",
			due.Sub(late), g.policy.TokenTTL, exp.Sub(late), due.Sub(exp))
	}
}

// TestLotteryPreQueueJudgedBeforeTheStart: a lottery pre-queue place's
// first checkpoint lies in the last MinBackoff before the sale start, on
// its draw's grid; the attempt there is judged, so the room knows its key
// when the clock starts (the keys Room.tickLottery passes at the start),
// and it is admitted nowhere before the start: its next checkpoint is
// after it. A token taken within MinBackoff of the start has none.
func TestLotteryPreQueueJudgedBeforeTheStart(t *testing.T) {
	ctx := context.Background()
	start := t0.Add(10 * time.Minute)
	backoff := DefaultPolicy.MinBackoff
	tests := []struct {
		name     string
		issued   time.Duration // before the start
		preStart bool          // first checkpoint before the start
	}{
		{"long before", 5 * time.Minute, true},
		{"half a minute before", 30 * time.Second, true},
		{"within a backoff", backoff / 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := testGate(t, 100)
			room := testRoom(t, func(c *RoomConfig) {
				c.State, c.SaleStart, c.Adaptive = StateScheduled, start, true
			})
			tk, err := g.Issue(room, Visitor{}, start.Add(-tt.issued))
			if err != nil {
				t.Fatal(err)
			}
			first := tk.Claims.NextAttempt()
			if got := first.Before(start); got != tt.preStart {
				t.Fatalf("first checkpoint %v from the start: before it %v, want %v", first.Sub(start), got, tt.preStart)
			}
			if !tt.preStart {
				return
			}
			if first.Before(start.Add(-backoff)) {
				t.Fatalf("first checkpoint %v before the start, want within %v", start.Sub(first), backoff)
			}
			d := g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: solve(t, tk.Claims), Now: first})
			if d.Outcome != OutcomeWait {
				t.Fatalf("at the checkpoint before the start: %v (%v), want wait", d.Outcome, d.Err)
			}
			if next := d.Next.Claims.NextAttempt(); next.Before(start) {
				t.Fatalf("next checkpoint %v before the start", start.Sub(next))
			}
			if split := room.presence.keysFrom(first, math.Inf(-1), 0, 0, time.Time{}); split.passed+len(split.ahead) != 1 {
				t.Fatalf("keys known before the start: %d passed, %d ahead; want the place's", split.passed, len(split.ahead))
			}
		})
	}
}

// TestFIFOPreQueueNotJudgedBeforeTheStart: a fifo room's pre-queue is
// known by its claims, so its grid keeps no point before the start.
func TestFIFOPreQueueNotJudgedBeforeTheStart(t *testing.T) {
	g := testGate(t, 100)
	start := t0.Add(10 * time.Minute)
	v := View{Order: OrderFIFO, Opens: start}
	grid := g.gridOf(&v, 0.5)
	if got := grid.at(grid.after(start.Add(-time.Minute))); got.Before(start) {
		t.Fatalf("fifo grid point %v before its origin", start.Sub(got))
	}
	v.Order = OrderLottery
	grid = g.gridOf(&v, 0.5)
	if got := grid.at(grid.after(start.Add(-time.Minute))); !got.Before(start) {
		t.Fatalf("lottery grid's first point %v after its origin, want one before", got.Sub(start))
	}
}
