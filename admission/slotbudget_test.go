package admission

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
)

// budgetUntil is a shared budget spent until open; err, when set, is what
// it answers instead.
type budgetUntil struct {
	open                  time.Time
	err                   error
	took, refunds, lapses int
}

func (b *budgetUntil) Reserve(_ context.Context, at, now time.Time) (time.Time, bool, error) {
	if b.err != nil {
		return time.Time{}, false, b.err
	}
	b.took++
	return later(later(at, now), b.open), true, nil
}

func (b *budgetUntil) Refund(time.Time) { b.refunds++ }

func (b *budgetUntil) Lapse(time.Time, time.Time) { b.lapses++ }

// TestASlotTakesItsBudgetWhenGiven: a place found eligible takes its
// admission from the room's shared budget at once, in the first window
// with one left, and holds its slot there; at the slot it is admitted
// without asking the budget again, whatever the budget says then. A budget
// out of reach when the slot would be given gives none: the place is
// asked to come back, holds nothing, and the bucket has its token back.
func TestASlotTakesItsBudgetWhenGiven(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want Outcome
	}{
		{"spent until later", nil, OutcomeBusy},
		{"out of reach", errors.New("store down"), OutcomeUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			h := &slotHolder{now: t0}
			h.ledger = &racingLedger{MemoryLedger: queue.NewMemoryLedger(100, func() time.Time { return h.now })}
			h.gate = NewGate(testRing(t, "k1", "k1"), Policy{}, h.ledger, WithRandom(newSeeded(7)))
			h.room = testRoom(t, func(c *RoomConfig) { c.Rate = 1; c.Burst = 1 })
			tk, err := h.gate.Issue(h.room, Visitor{}, t0)
			if err != nil {
				t.Fatal(err)
			}
			nonce := solve(t, tk.Claims)
			budget := &budgetUntil{err: tt.err}
			h.room.SetQuota(budget)
			token, at := tk.Token, tk.Claims.NextAttempt()
			var d Decision
			for range 1000 {
				budget.open = at.Add(3 * time.Second)
				level := h.room.BucketLevel(at)
				d = h.gate.Decide(ctx, h.room, Attempt{Token: token, Nonce: nonce, Now: at})
				if d.Outcome != OutcomeWait {
					if d.Outcome == OutcomeUnavailable && h.room.BucketLevel(at) != level {
						t.Fatalf("unavailable, and the bucket went from %.3f to %.3f", level, h.room.BucketLevel(at))
					}
					break
				}
				token, at = d.Next.Token, d.Next.Claims.NextAttempt()
			}
			if d.Outcome != tt.want {
				t.Fatalf("found eligible: %v (%v), want %v", d.Outcome, d.Err, tt.want)
			}
			held, err := h.ledger.Lookup(ctx, tk.Claims.Place())
			if tt.err != nil {
				if err != nil || held.State != queue.PlaceWaiting || budget.took != 0 {
					t.Fatalf("budget out of reach: the ledger holds %+v (%v), %d taken; want nothing", held, err, budget.took)
				}
				return
			}
			slot := d.Next.Claims.NextAttempt()
			if err != nil || held.State != queue.PlaceReserved || !held.Slot.Equal(budget.open) || slot.Before(budget.open) {
				t.Fatalf("the ledger holds %+v (%v), answered %v; want the place reserved at the budget's %v", held, err, slot, budget.open)
			}
			budget.err = errors.New("spent or down: not asked again")
			h.now = slot
			if d := h.gate.Decide(ctx, h.room, Attempt{Token: d.Next.Token, Nonce: nonce, Now: slot}); d.Outcome != OutcomeAdmit {
				t.Fatalf("at its slot: %v (%v), want admitted", d.Outcome, d.Err)
			}
			if budget.took != 1 || budget.refunds != 0 {
				t.Fatalf("the budget gave %d and got %d back, want 1 and 0", budget.took, budget.refunds)
			}
		})
	}
}

// TestARacingVersionGetsAnotherVersionsPassOnlyForItsLogin: two versions of
// a place holding a slot present at it on two nodes (each its own pacer)
// and both pass; the one losing the ledger's Use is given the winner's
// pass only when both are a login's (its other tab): another anonymous
// version, whose token is not the one admitted, is told its token is used.
func TestARacingVersionGetsAnotherVersionsPassOnlyForItsLogin(t *testing.T) {
	for _, tt := range []struct {
		name string
		who  Visitor
		want Outcome
	}{
		{"anonymous", Visitor{}, OutcomeReused},
		{"login", Visitor{Subject: "user-1"}, OutcomeAdmit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			h := holdingASlot(t, tt.who)
			// The other node: its own gate and room over the shared ledger.
			otherGate := NewGate(testRing(t, "k1", "k1"), Policy{}, h.ledger)
			other := testRoom(t, func(c *RoomConfig) { c.Rate = 1; c.Burst = 1 })
			slot := h.busy.Next.Claims.NextAttempt()
			h.now = slot
			before := h.room.pacer.Level(slot)
			var winner Decision
			h.ledger.race = func() {
				winner = otherGate.Decide(ctx, other, Attempt{Token: h.first.Token, Nonce: h.nonce, Visitor: tt.who, Now: slot})
			}
			loser := h.gate.Decide(ctx, h.room, Attempt{Token: h.busy.Next.Token, Nonce: h.nonce, Visitor: tt.who, Now: slot})
			if winner.Outcome != OutcomeAdmit {
				t.Fatalf("the version on the other node: %v (%v), want admitted", winner.Outcome, winner.Err)
			}
			if loser.Outcome != tt.want {
				t.Fatalf("the version losing the Use: %v, want %v", loser.Outcome, tt.want)
			}
			if loser.Outcome == OutcomeAdmit && loser.PassClaims.ID != winner.PassClaims.ID {
				t.Fatalf("the login's other version got pass %s, want the winner's %s", loser.PassClaims.ID, winner.PassClaims.ID)
			}
			if after := h.room.pacer.Level(slot); after != before {
				t.Fatalf("the losing node's pacer held %.3f tokens before and %.3f after: want the loser's token given back", before, after)
			}
		})
	}
}

// refundLog is a shared budget that always has an admission at the moment
// asked and records the slots it gives and gets back.
type refundLog struct{ given, refunded, lapsed []time.Time }

func (b *refundLog) Reserve(_ context.Context, at, now time.Time) (time.Time, bool, error) {
	slot := later(at, now)
	b.given = append(b.given, slot)
	return slot, true, nil
}

func (b *refundLog) Refund(slot time.Time) { b.refunded = append(b.refunded, slot) }

func (b *refundLog) Lapse(slot, _ time.Time) { b.lapsed = append(b.lapsed, slot) }

// TestARequeueGivesBackItsSlotsAdmission: a place admitted from a slot
// that the hook turns away gives back the admission of its slot's budget
// window, not one of the window it was admitted in: a place that
// presented late would otherwise give back an admission nobody took
// there, and the node would admit one more than that window's limit.
func TestARequeueGivesBackItsSlotsAdmission(t *testing.T) {
	for _, late := range []time.Duration{0, slotGrace - time.Second} {
		t.Run(late.String(), func(t *testing.T) {
			ctx := context.Background()
			h := holdingASlot(t, Visitor{})
			budget := &refundLog{}
			h.room.SetQuota(budget)
			held, err := h.ledger.Lookup(ctx, h.first.Claims.Place())
			if err != nil || held.State != queue.PlaceReserved {
				t.Fatalf("the ledger holds %+v (%v), want a slot", held, err)
			}
			// The slot came from the bucket before the quota was set: the
			// test's budget counts it as its own.
			slot := held.Slot
			budget.given = append(budget.given, slot)
			at := h.busy.Next.Claims.NextAttempt().Add(late)
			h.now = at
			d := h.gate.Decide(ctx, h.room, Attempt{Token: h.busy.Next.Token, Nonce: h.nonce, Now: at})
			if d.Outcome != OutcomeAdmit {
				t.Fatalf("at its slot, %v late: %v (%v), want admitted", late, d.Outcome, d.Err)
			}
			back := h.gate.Requeue(ctx, h.room, d, at)
			if back.Outcome != OutcomeWait {
				t.Fatalf("requeue: %v (%v), want wait", back.Outcome, back.Err)
			}
			if len(budget.refunded) != 1 || !budget.refunded[0].Equal(slot) {
				t.Fatalf("requeued %v after its slot %v: refunded %v, want the slot's admission", late, slot, budget.refunded)
			}
			if len(budget.given) != 2 || budget.given[1].Before(at) {
				t.Fatalf("requeued: slots given %v, want a second one from %v", budget.given, at)
			}
		})
	}
}

// landedLedger is a ledger whose Hold writes and then answers an error,
// as a store write that timed out after it landed.
type landedLedger struct{ *queue.MemoryLedger }

var errLanded = errors.New("timed out (the write landed)")

func (l landedLedger) Hold(ctx context.Context, id string, p queue.Place, until time.Time) (queue.Place, bool, error) {
	l.MemoryLedger.Hold(ctx, id, p, until)
	return queue.Place{}, false, errLanded
}

// TestALedgerErrorKeepsTheSlotsAdmission: a ledger error leaves unknown
// whether the place now holds its slot (or is used), so the admission the
// slot took stays taken: given back, another place would take it, and the
// place, admitted from its record, would be one more than the window
// grants.
func TestALedgerErrorKeepsTheSlotsAdmission(t *testing.T) {
	ctx := context.Background()
	now := t0
	ledger := landedLedger{queue.NewMemoryLedger(100, func() time.Time { return now })}
	g := NewGate(testRing(t, "k1", "k1"), Policy{}, ledger, WithRandom(newSeeded(7)))
	room := testRoom(t, func(c *RoomConfig) { c.State = StateOpen })
	budget := &refundLog{}
	room.SetQuota(budget)
	tk, err := g.Issue(room, Visitor{}, now)
	if err != nil {
		t.Fatal(err)
	}
	now = tk.Claims.NextAttempt()
	d := g.Decide(ctx, room, Attempt{Token: tk.Token, Nonce: solve(t, tk.Claims), Now: now})
	if d.Outcome != OutcomeUnavailable || !errors.Is(d.Err, errLanded) {
		t.Fatalf("the hold failed: %v (%v), want unavailable", d.Outcome, d.Err)
	}
	if len(budget.given) != 1 || len(budget.refunded) != 0 {
		t.Fatalf("slots given %v, given back %v; want one given and kept", budget.given, budget.refunded)
	}
}

// TestALatePresenterTakesTheSharedSlotItWouldHaveHad: on a shared quota a
// place presenting more than the pacer's slack late for the moment it was
// found eligible takes the slot of the first place this node gave one to
// since (it may have passed: due at once, through the pacer), never a
// later one than asking now gives; within the slack it is served as asked.
func TestALatePresenterTakesTheSharedSlotItWouldHaveHad(t *testing.T) {
	s := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	for _, tt := range []struct {
		name          string
		found, now    float64
		slot          float64 // the quota's slot asked now
		want          float64
		wantBackdated bool
	}{
		{"on time", 30, 30, 40, 40, false},
		{"within the slack", 28.5, 30, 40, 40, false},
		{"late: the slot given since, passed", 0.5, 30, 40, 10, true},
		{"late: the slot given since, still ahead", 2.5, 30, 40, 31, true},
		{"late, nothing given since", 25, 30, 40, 40, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			room := testRoom(t, func(c *RoomConfig) { c.Rate = 1; c.Burst = 1 })
			for _, g := range [][2]float64{{1, 10}, {2, 11}, {3, 31}} { // given at, slot
				room.sharedSlot(s(g[0]), s(g[1]), s(g[0]))
			}
			due, backdated := room.sharedSlot(s(tt.found), s(tt.slot), s(tt.now))
			if !due.Equal(s(tt.want)) || backdated != tt.wantBackdated {
				t.Fatalf("slot %v (backdated %v), want %vs (%v)", due.Sub(t0), backdated, tt.want, tt.wantBackdated)
			}
		})
	}
}

// TestLatenessCountsFromTheLaterOfFoundAndTold: on a shared quota a place
// is late by the time since the later of the moment it was found eligible
// and the moment its page was told to come: a page presenting on time for
// the moment told is served as asked even if found eligible before it (a
// node tells a moment from its view of the clock, a poll behind), and a
// place found eligible after the moment told is late only for the moment
// found.
func TestLatenessCountsFromTheLaterOfFoundAndTold(t *testing.T) {
	s := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	const next = 40 // the quota's slot asked now
	for _, tt := range []struct {
		name             string
		found, told, now float64
		want             float64 // the slot the place would have had
		wantDue          float64 // when it is due: want, or now if later
		wantBackdated    bool
	}{
		{"found before told, on time for told", 0.5, 28.5, 30, next, next, false},
		{"found before told, presented at told", 0.5, 30, 30, next, next, false},
		{"found before told, late for told", 0.5, 2.5, 30, 31, 31, true},
		{"found when told, late for both", 0.5, 0.5, 30, 10, 30, true},
		{"found after told, late for found", 2.5, 0.5, 30, 31, 31, true},
		{"found after told, within the slack of found", 28.5, 0.5, 30, next, next, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			room := testRoom(t, func(c *RoomConfig) { c.Rate = 1; c.Burst = 1 })
			room.SetQuota(&windowBudget{open: s(next)})
			for _, g := range [][2]float64{{1, 10}, {2, 11}, {3, 31}} { // given at, slot
				room.sharedSlot(s(g[0]), s(g[1]), s(g[0]))
			}
			gate := testGate(t, 100)
			gv, err := gate.slot(context.Background(), room, s(tt.found), s(tt.told), s(tt.now), s(tt.now))
			if err != nil {
				t.Fatal(err)
			}
			due, missed, charged, backdated := gv.slot, gv.missed, gv.charged, gv.backdated
			if !missed.Equal(s(tt.want)) || !due.Equal(s(tt.wantDue)) || backdated != tt.wantBackdated {
				t.Fatalf("found at %vs, told %vs, presented at %vs: slot %v due %v (backdated %v), want %vs due %vs (%v)",
					tt.found, tt.told, tt.now, missed.Sub(t0), due.Sub(t0), backdated, tt.want, tt.wantDue, tt.wantBackdated)
			}
			if !charged.Equal(s(next)) {
				t.Fatalf("charged %v, want the quota's slot, %vs", charged.Sub(t0), next)
			}
		})
	}
}

// lookupBarrier is a ledger that closes all once want look-ups of a round
// were made.
type lookupBarrier struct {
	*queue.MemoryLedger
	mu        sync.Mutex
	want, got int
	all       chan struct{}
}

func (l *lookupBarrier) round(want int) {
	l.want, l.got, l.all = want, 0, make(chan struct{})
}

func (l *lookupBarrier) Lookup(ctx context.Context, id string) (queue.Place, error) {
	l.mu.Lock()
	if l.got++; l.got == l.want {
		close(l.all)
	}
	l.mu.Unlock()
	return l.MemoryLedger.Lookup(ctx, id)
}

// racedBudget is a shared budget with an admission at the moment asked
// that gives it only once every attempt of the round has looked its place
// up, or after 250 ms (attempts judged one after another never all look
// it up first): attempts judged side by side all take one then.
type racedBudget struct {
	ledger        *lookupBarrier
	mu            sync.Mutex
	took, refunds int
}

func (b *racedBudget) Reserve(_ context.Context, at, now time.Time) (time.Time, bool, error) {
	select {
	case <-b.ledger.all:
	case <-time.After(250 * time.Millisecond): // judged one after another
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.took++
	return later(at, now), true, nil
}

func (b *racedBudget) Refund(time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refunds++
}

func (b *racedBudget) Lapse(time.Time, time.Time) {}

// TestALoginsTabsPresentingTogetherTakeOneAdmission: six tabs of one login,
// each with its own token, present together at every checkpoint at one
// node. When the place is found eligible one tab takes the budget's
// admission; the others find the place used and take none, so none is
// given back to go to a place this node finds later (on several nodes,
// after places found sooner elsewhere were given later slots).
func TestALoginsTabsPresentingTogetherTakeOneAdmission(t *testing.T) {
	const tabs = 6
	ctx := context.Background()
	ledger := &lookupBarrier{MemoryLedger: queue.NewMemoryLedger(100, func() time.Time { return t0 })}
	gate := NewGate(testRing(t, "k1", "k1"), Policy{}, ledger, WithRandom(newSeeded(7)))
	room := testRoom(t, func(c *RoomConfig) { c.Rate = 1; c.Burst = 1 })
	budget := &racedBudget{ledger: ledger}
	room.SetQuota(budget)
	who := Visitor{Subject: "user-1"}
	versions, nonces := make([]string, tabs), make([]string, tabs)
	var at time.Time
	for i := range tabs {
		tk, err := gate.Issue(room, who, t0)
		if err != nil {
			t.Fatal(err)
		}
		versions[i], nonces[i], at = tk.Token, solve(t, tk.Claims), tk.Claims.NextAttempt()
	}
	for range 1000 {
		ledger.round(tabs)
		ds := make([]Decision, tabs)
		var wg sync.WaitGroup
		for i := range tabs {
			wg.Go(func() {
				ds[i] = gate.Decide(ctx, room, Attempt{Token: versions[i], Nonce: nonces[i], Visitor: who, Now: at})
			})
		}
		wg.Wait()
		if ds[0].Outcome != OutcomeWait {
			for i, d := range ds {
				if d.Outcome != OutcomeAdmit || d.PassClaims.ID != ds[0].PassClaims.ID {
					t.Fatalf("tab %d: %v (%v), want admitted with the login's one pass", i, d.Outcome, d.Err)
				}
			}
			if budget.took != 1 || budget.refunds != 0 {
				t.Fatalf("the tabs took %d admissions and gave %d back, want 1 and 0", budget.took, budget.refunds)
			}
			return
		}
		for i, d := range ds {
			if d.Outcome != OutcomeWait || !d.Next.Claims.NextAttempt().Equal(ds[0].Next.Claims.NextAttempt()) {
				t.Fatalf("tab %d: %v at %v, want waiting with tab 0 (%v)", i, d.Outcome, d.Next.Claims, ds[0].Next.Claims)
			}
			versions[i] = d.Next.Token
		}
		at = ds[0].Next.Claims.NextAttempt()
	}
	t.Fatal("never found eligible")
}
