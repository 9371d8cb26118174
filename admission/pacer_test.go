package admission

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestPacerRespacesOnARateChange: places re-spaced at 10/s before a cut
// to 1/s are re-spaced at the new rate, in the same order; a rate set again
// unchanged (a cluster node's share, every tick) moves nobody.
func TestPacerRespacesOnARateChange(t *testing.T) {
	p := newPacer(10, 1, t0)
	admitted := 0
	var dues []time.Time
	for i := range 25 {
		due, ok := p.pass(fmt.Sprint("place-", i), t0, t0)
		if ok {
			admitted++
			continue
		}
		dues = append(dues, due)
	}
	if admitted != 20 || len(dues) != 5 { // the burst: two seconds of the rate
		t.Fatalf("admitted %d at once, %d re-spaced; want 20 and 5", admitted, len(dues))
	}
	p.setRate(10, 1, t0)
	for i, want := range dues {
		if got, _ := p.pass(fmt.Sprint("place-", 20+i), t0, t0); !got.Equal(want) {
			t.Fatalf("the rate set again unchanged moved place %d from %v to %v", 20+i, want.Sub(t0), got.Sub(t0))
		}
	}
	cut := t0
	p.setRate(1, 1, cut)
	prev := cut
	for i := range dues {
		got, ok := p.pass(fmt.Sprint("place-", 20+i), t0, cut)
		if ok || got.Sub(prev) < 900*time.Millisecond {
			t.Fatalf("after the cut, place %d due %v after the one before it (admitted now: %v); want about a second", 20+i, got.Sub(prev), ok)
		}
		prev = got
	}
}

// TestPacerCreditsALateHolder: with the pacer's burst spent, a holder
// presenting more than pacerSlack after its slot goes in on credit, down
// to the pacer owing a burst; a holder on time, or within the slack, is
// re-spaced; and what was lent is paid back by the holders after it.
func TestPacerCreditsALateHolder(t *testing.T) {
	const rate = 10 // a burst of 20: two seconds of the rate
	tests := []struct {
		name     string
		late     time.Duration // how long after its slot each holder presents
		holders  int           // presenting after the burst is spent
		admitted int
	}{
		{"on time", 0, 5, 0},
		{"within the slack", pacerSlack, 5, 0},
		{"a minute late", time.Minute, 1, 1},
		{"a late crowd: one burst on credit", time.Minute, 30, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPacer(rate, 1, t0)
			for i := range 20 {
				if _, ok := p.pass(fmt.Sprint("burst-", i), t0, t0); !ok {
					t.Fatalf("burst holder %d re-spaced", i)
				}
			}
			admitted := 0
			var last time.Time
			for i := range tt.holders {
				due, ok := p.pass(fmt.Sprint("holder-", i), t0.Add(-tt.late), t0)
				if ok {
					admitted++
					continue
				}
				last = due
			}
			if admitted != tt.admitted {
				t.Errorf("%d of %d admitted, want %d", admitted, tt.holders, tt.admitted)
			}
			// Every holder past the burst is paid for at the rate: the
			// last re-spaced one is due when the pacer has refilled them.
			if want := t0.Add(time.Duration(tt.holders) * time.Second / rate); !last.IsZero() && !last.Equal(want) {
				t.Errorf("last holder due %v after the burst, want %v", last.Sub(t0), want.Sub(t0))
			}
			due, ok := p.pass("on-time-after", t0, t0)
			if want := t0.Add(time.Duration(tt.holders+1) * time.Second / rate); ok || !due.Equal(want) {
				t.Errorf("an on-time holder after them: due %v (admitted %v), want re-spaced to %v", due.Sub(t0), ok, want.Sub(t0))
			}
		})
	}
}

// racingLedger runs race once, inside the first Use of a place, before
// that Use reaches the ledger: a second attempt of the place judged
// between the first one's pacer check and its ledger write.
type racingLedger struct {
	*MemoryLedger
	race func()
}

func (l *racingLedger) Use(ctx context.Context, id string, used Place) (bool, error) {
	if race := l.race; race != nil {
		l.race = nil
		race()
	}
	return l.MemoryLedger.Use(ctx, id, used)
}

// slotHolder is a room admitting 1 a second and a place in it holding a
// slot: busy is the answer that gave it, first the place's first token.
type slotHolder struct {
	gate   *Gate
	room   *Room
	ledger *racingLedger
	first  WaitToken
	nonce  string
	who    Visitor
	busy   Decision
	now    time.Time // the ledger's clock
}

// holdingASlot follows the checkpoints of who's place, the bucket drained
// before each, until the place holds a slot.
func holdingASlot(t *testing.T, who Visitor) *slotHolder {
	t.Helper()
	h := &slotHolder{now: t0, who: who}
	h.ledger = &racingLedger{MemoryLedger: NewMemoryLedger(100, func() time.Time { return h.now })}
	h.gate = NewGate(testRing(t, "k1", "k1"), Policy{}, h.ledger, WithRandom(newSeeded(7)))
	h.room = testRoom(t, func(c *RoomConfig) { c.Rate = 1; c.Burst = 1 })
	tk, err := h.gate.Issue(h.room, who, t0)
	if err != nil {
		t.Fatal(err)
	}
	h.first, h.nonce = tk, solve(t, tk.Claims)
	token, at := tk.Token, tk.Claims.NextAttempt()
	for range 1000 {
		h.now = at
		for h.room.BucketLevel(at) > -1 {
			h.room.reserveAdmission(at, at)
		}
		h.busy = h.gate.Decide(context.Background(), h.room, Attempt{Token: token, Nonce: h.nonce, Visitor: who, Now: at})
		if h.busy.Outcome != OutcomeWait {
			break
		}
		token, at = h.busy.Next.Token, h.busy.Next.Claims.NextAttempt()
	}
	if h.busy.Outcome != OutcomeBusy {
		t.Fatalf("want a slot: %v (%v)", h.busy.Outcome, h.busy.Err)
	}
	return h
}

// TestVersionsOfOnePlaceAtItsSlotShareOneAdmission: two versions of a
// place holding a slot (two tabs of one login) present together at the
// slot. One is admitted; the other is not re-spaced behind its own place
// (a place is one admission): it is told to come back a moment later, and
// then gets the same pass.
func TestVersionsOfOnePlaceAtItsSlotShareOneAdmission(t *testing.T) {
	ctx := context.Background()
	login := Visitor{Subject: "user-1"}
	h := holdingASlot(t, login)
	slot := h.busy.Next.Claims.NextAttempt()
	h.now = slot
	var second Decision
	h.ledger.race = func() {
		second = h.gate.Decide(ctx, h.room, Attempt{Token: h.first.Token, Nonce: h.nonce, Visitor: login, Now: slot})
	}
	first := h.gate.Decide(ctx, h.room, Attempt{Token: h.busy.Next.Token, Nonce: h.nonce, Visitor: login, Now: slot})
	if first.Outcome != OutcomeAdmit {
		t.Fatalf("the first version at its slot: %v (%v), want admitted", first.Outcome, first.Err)
	}
	if second.Outcome != OutcomeBusy || second.RetryAfter > pacerRaceWait {
		t.Fatalf("the version racing it: %v, back in %v; want busy, back within %v", second.Outcome, second.RetryAfter, pacerRaceWait)
	}
	again := slot.Add(second.RetryAfter)
	h.now = again
	d := h.gate.Decide(ctx, h.room, Attempt{Token: second.Next.Token, Nonce: h.nonce, Visitor: login, Now: again})
	if d.Outcome != OutcomeAdmit || d.PassClaims.ID != first.PassClaims.ID {
		t.Fatalf("the racing version back: %v; want the first's pass", d.Outcome)
	}
}

// TestPacerHoldsOneTokenPerPlace: while an attempt for a place holds a
// pacer token, another for the same place takes none and is told to come
// back within pacerRaceWait; once the first gives its token back, the
// place passes again.
func TestPacerHoldsOneTokenPerPlace(t *testing.T) {
	p := newPacer(1, 1, t0)
	if _, ok := p.pass("a", t0, t0); !ok {
		t.Fatal("the first attempt did not pass")
	}
	level := p.bucket.level(t0)
	due, ok := p.pass("a", t0, t0)
	if ok || due.Sub(t0) > pacerRaceWait {
		t.Fatalf("a second attempt for the place in flight: passed %v, due in %v; want refused, due within %v", ok, due.Sub(t0), pacerRaceWait)
	}
	if got := p.bucket.level(t0); got != level {
		t.Fatalf("the racing attempt moved the pacer from %.3f to %.3f", level, got)
	}
	p.giveBack("a", t0)
	if _, ok := p.pass("a", t0, t0); !ok {
		t.Fatal("the place did not pass after its attempt gave the token back")
	}
	p.admitted("a", t0)
	if n := len(p.inflight); n != 0 {
		t.Fatalf("%d places still in flight after the admission", n)
	}
}

// TestRacingVersionsAtARespacedSlotMintNoPacerToken: a re-spaced place
// took its pacer token when it was re-spaced. Two versions of its token
// presented together at its due: one is admitted, and the other, losing
// the ledger's Use, gives back only a token it took itself (both passing
// on the slot's one token, the loser gave back one it never took: each
// such pair minted one, up to the pacer's burst, erasing the debt that
// holds slot holders back after a rate cut).
func TestRacingVersionsAtARespacedSlotMintNoPacerToken(t *testing.T) {
	ctx := context.Background()
	h := holdingASlot(t, Visitor{})
	g, room, ledger, tk, nonce, d := h.gate, h.room, h.ledger, h.first, h.nonce, h.busy
	// At its slot the pacer is spent (slot holders before it): re-spaced.
	slot := d.Next.Claims.NextAttempt()
	h.now = slot
	for i := 0; ; i++ {
		if _, ok := room.paceSlot(fmt.Sprint("other-", i), slot, slot); !ok {
			break
		}
	}
	d = g.Decide(ctx, room, Attempt{Token: d.Next.Token, Nonce: nonce, Now: slot})
	if d.Outcome != OutcomeBusy {
		t.Fatalf("at its slot with the pacer spent: %v, want busy (re-spaced)", d.Outcome)
	}
	due := d.Next.Claims.NextAttempt()
	h.now = due
	before := room.pacer.bucket.level(due)
	// Two versions of the place at its re-spaced due, together.
	var second Decision
	ledger.race = func() { second = g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: nonce, Now: due}) }
	first := g.Decide(ctx, room, Attempt{Token: d.Next.Token, Nonce: nonce, Now: due})
	if (first.Outcome == OutcomeAdmit) == (second.Outcome == OutcomeAdmit) {
		t.Fatalf("outcomes %v and %v: want one admission", first.Outcome, second.Outcome)
	}
	if after := room.pacer.bucket.level(due); after > before+1e-9 {
		t.Errorf("the pacer held %.3f tokens before the pair and %.3f after: one admitted place gave it %.3f", before, after, after-before)
	}
}

// TestPacerForgetsAnAttemptThatNeverSettled: an attempt that passed holds
// off its place's other versions while its admission is in flight, not
// forever: one that never settled (it panicked in a store call, so it
// neither admitted the place nor gave its token back) leaves the place
// free to pass once an admission could no longer be in flight.
func TestPacerForgetsAnAttemptThatNeverSettled(t *testing.T) {
	tests := []struct {
		name  string
		after time.Duration
		pass  bool
	}{
		{"while it may be in flight", pacerRaceWait, false},
		{"long after", time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPacer(1, 1, t0)
			if _, ok := p.pass("a", t0, t0); !ok {
				t.Fatal("the first attempt did not pass")
			}
			at := t0.Add(tt.after)
			due, ok := p.pass("a", t0, at)
			if ok != tt.pass {
				t.Fatalf("%v later: passed %v (due in %v), want %v", tt.after, ok, due.Sub(at), tt.pass)
			}
		})
	}
}

// TestASlotOutlivesAnAttemptThatDiedInFlight: an attempt at a place's slot
// passes the pacer and dies in the ledger's Use (a panic the server
// recovers): the place still holds its slot, and a version of its token
// presented a minute later is admitted, not told to come back in a moment
// (over and over, until its token runs out).
func TestASlotOutlivesAnAttemptThatDiedInFlight(t *testing.T) {
	ctx := context.Background()
	h := holdingASlot(t, Visitor{})
	slot := h.busy.Next.Claims.NextAttempt()
	h.now = slot
	h.ledger.race = func() { panic("store driver") }
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the ledger's Use did not panic")
			}
		}()
		h.gate.Decide(ctx, h.room, Attempt{Token: h.busy.Next.Token, Nonce: h.nonce, Now: slot})
	}()
	at := slot.Add(time.Minute)
	h.now = at
	d := h.gate.Decide(ctx, h.room, Attempt{Token: h.busy.Next.Token, Nonce: h.nonce, Now: at})
	if d.Outcome != OutcomeAdmit {
		t.Fatalf("%v after the attempt died: %v, back in %v (%v); want admitted", at.Sub(slot), d.Outcome, d.RetryAfter, d.Err)
	}
}

// TestAVersionRacingARequeueKeepsItsPlace: a version at its slot passes
// the pacer, and before its ledger write lands the place's admission,
// made by another version and turned away by the admission hook, is being
// requeued (Gate.Requeue: released, then held as a slot at its next
// checkpoint; two steps). The version's Use finds the place released: it
// is not told its token is used (the page's end), since the place is kept.
func TestAVersionRacingARequeueKeepsItsPlace(t *testing.T) {
	ctx := context.Background()
	login := Visitor{Subject: "user-1"}
	h := holdingASlot(t, login)
	slot := h.busy.Next.Claims.NextAttempt()
	h.now = slot
	place := h.busy.Next.Claims.Place()
	h.ledger.race = func() {
		if err := h.ledger.Release(ctx, place); err != nil {
			t.Fatal(err)
		}
	}
	d := h.gate.Decide(ctx, h.room, Attempt{Token: h.busy.Next.Token, Nonce: h.nonce, Visitor: login, Now: slot})
	if d.Outcome == OutcomeReused || d.Outcome == OutcomeAdmit {
		t.Fatalf("the version racing the requeue: %v; want an answer that keeps the place", d.Outcome)
	}
	if lvl := h.room.pacer.inflight; len(lvl) != 0 {
		t.Fatalf("%d places still in flight", len(lvl))
	}
}

// TestANodesShareLeavesThePacerAtTheRoomRate: a cluster node's bucket
// runs at its share of the rate, its pacer at the room's: a slot any node
// gave may be presented at this one, and re-spaced at a small node's share
// it would wait seconds for its turn (the shared budget caps the nodes
// together).
func TestANodesShareLeavesThePacerAtTheRoomRate(t *testing.T) {
	room := testRoom(t, func(c *RoomConfig) { c.Rate = 20; c.Burst = 20 })
	room.SetBucketRate(2, 2, t0) // a node that sees a tenth of the visitors
	if got := room.pacer.rate; got != 20 {
		t.Fatalf("pacer at %v/s, want the room's 20/s", got)
	}
	// Holders of slots given elsewhere, presenting here together at their
	// slots, pass at the room's rate: a burst of two seconds of it.
	passed := 0
	for i := range 40 {
		if _, ok := room.paceSlot(fmt.Sprint("place-", i), t0, t0); ok {
			passed++
		}
	}
	if passed != 40 {
		t.Fatalf("%d of 40 slot holders passed at once, want 40 (two seconds of 20/s)", passed)
	}
}
