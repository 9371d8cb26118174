package admission

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
)

// racingLedger runs race once, inside the first Use of a place, before
// that Use reaches the ledger: a second attempt of the place judged
// between the first one's pacer check and its ledger write.
type racingLedger struct {
	*queue.MemoryLedger
	race func()
}

func (l *racingLedger) Use(ctx context.Context, id string, used queue.Place) (bool, error) {
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
	h.ledger = &racingLedger{MemoryLedger: queue.NewMemoryLedger(100, func() time.Time { return h.now })}
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

// atItsSlot is holdingASlot at the moment its slot is due.
func atItsSlot(t *testing.T, who Visitor) (*slotHolder, time.Time) {
	t.Helper()
	h := holdingASlot(t, who)
	slot := h.busy.Next.Claims.NextAttempt()
	h.now = slot
	return h, slot
}

// TestVersionsOfOnePlaceAtItsSlotShareOneAdmission: two versions of a
// place holding a slot (two tabs of one login) present together at the
// slot at one node, the second while the first's admission is being
// written. The second waits for the first's turn, then gets the same
// pass: it is neither re-spaced behind its own place (a place is one
// admission) nor told to come back.
func TestVersionsOfOnePlaceAtItsSlotShareOneAdmission(t *testing.T) {
	ctx := context.Background()
	login := Visitor{Subject: "user-1"}
	h, slot := atItsSlot(t, login)
	second := make(chan Decision, 1)
	h.ledger.race = func() {
		go func() {
			second <- h.gate.Decide(ctx, h.room, Attempt{Token: h.first.Token, Nonce: h.nonce, Visitor: login, Now: slot})
		}()
	}
	first := h.gate.Decide(ctx, h.room, Attempt{Token: h.busy.Next.Token, Nonce: h.nonce, Visitor: login, Now: slot})
	if first.Outcome != OutcomeAdmit {
		t.Fatalf("the first version at its slot: %v (%v), want admitted", first.Outcome, first.Err)
	}
	if d := received(t, second); d.Outcome != OutcomeAdmit || d.PassClaims.ID != first.PassClaims.ID {
		t.Fatalf("the version presented with it: %v (%v); want the first's pass", d.Outcome, d.Err)
	}
}

// TestRacingVersionsAtARespacedSlotTakeOnePacerToken: a re-spaced place
// took its pacer token when it was re-spaced. Two versions of its token
// presented together at its due at one node: one is admitted on that
// token, and the other takes none (each such pair taking a second would
// erase the debt that holds slot holders back after a rate cut).
func TestRacingVersionsAtARespacedSlotTakeOnePacerToken(t *testing.T) {
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
	before := room.pacer.Level(due)
	// Two versions of the place at its re-spaced due, together.
	second := make(chan Decision, 1)
	ledger.race = func() {
		go func() { second <- g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: nonce, Now: due}) }()
	}
	first := g.Decide(ctx, room, Attempt{Token: d.Next.Token, Nonce: nonce, Now: due})
	if s := received(t, second); (first.Outcome == OutcomeAdmit) == (s.Outcome == OutcomeAdmit) {
		t.Fatalf("outcomes %v and %v: want one admission", first.Outcome, s.Outcome)
	}
	if after := room.pacer.Level(due); math.Abs(after-before) > 1e-9 {
		t.Errorf("the pacer held %.3f tokens before the pair and %.3f after: want the re-spaced slot's token only, none taken or minted", before, after)
	}
}

// TestASlotOutlivesAnAttemptThatDiedInFlight: an attempt at a place's slot
// passes the pacer and dies in the ledger's Use (a panic the server
// recovers): the place still holds its slot and the attempt's turn ended,
// and a version of its token presented a minute later is admitted.
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
	bounded, cancel := context.WithTimeout(ctx, 10*time.Second) // a turn left taken fails, not hangs
	defer cancel()
	d := h.gate.Decide(bounded, h.room, Attempt{Token: h.busy.Next.Token, Nonce: h.nonce, Now: at})
	if d.Outcome != OutcomeAdmit {
		t.Fatalf("%v after the attempt died: %v, back in %v (%v); want admitted", at.Sub(slot), d.Outcome, d.RetryAfter, d.Err)
	}
}

// TestAVersionRacingARequeueKeepsItsPlace: a version at its slot passes
// the pacer, and before its ledger write lands the place's admission,
// made by another version at another node and turned away by the
// admission hook, is being requeued there (Gate.Requeue: released, then
// held as a slot at its next checkpoint; two steps). The version's Use finds the place released: it
// is not told its token is used (the page's end), since the place is kept.
func TestAVersionRacingARequeueKeepsItsPlace(t *testing.T) {
	ctx := context.Background()
	login := Visitor{Subject: "user-1"}
	h, slot := atItsSlot(t, login)
	place := h.busy.Next.Claims.Place()
	h.ledger.race = func() {
		if err := h.ledger.Release(ctx, place); err != nil {
			t.Fatal(err)
		}
	}
	before := h.room.pacer.Level(slot)
	d := h.gate.Decide(ctx, h.room, Attempt{Token: h.busy.Next.Token, Nonce: h.nonce, Visitor: login, Now: slot})
	if d.Outcome == OutcomeReused || d.Outcome == OutcomeAdmit {
		t.Fatalf("the version racing the requeue: %v; want an answer that keeps the place", d.Outcome)
	}
	if after := h.room.pacer.Level(slot); after != before {
		t.Fatalf("the pacer held %.3f tokens before and %.3f after: want the version's token given back", before, after)
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

// received is what ch gives within 10 s: an attempt left waiting for a
// turn fails the test rather than hanging it.
func received(t *testing.T, ch <-chan Decision) Decision {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10 s")
		return Decision{}
	}
}
