package admission

import (
	"context"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
)

// windowBudget is a shared budget whose every slot is at one moment, open
// (the start of its first window with an admission left), recording the
// slots it is given back.
type windowBudget struct {
	open            time.Time
	refunds, lapses []time.Time
}

func (b *windowBudget) Reserve(_ context.Context, at, now time.Time) (time.Time, bool, error) {
	return later(later(at, now), b.open), true, nil
}

func (b *windowBudget) Refund(slot time.Time) { b.refunds = append(b.refunds, slot) }

func (b *windowBudget) Lapse(slot, _ time.Time) { b.lapses = append(b.lapses, slot) }

// TestALatePresenterRefusedGivesBackTheSlotItWasCharged: on a shared quota
// a place presenting late takes the slot it would have had, passed
// (admitted at once) or still ahead (held in the ledger until then), while
// its admission is charged to the quota's next slot, a later window.
// Refused by the hook and requeued, it gives back the admission of the
// window it was charged, not of the slot it was admitted at.
func TestALatePresenterRefusedGivesBackTheSlotItWasCharged(t *testing.T) {
	const late = 10 * time.Second
	for _, tt := range []struct {
		name string
		// given is the slot of another place's grant, given a second
		// after the late place's checkpoint, relative to the moment the
		// late place presents: the slot the late place would have had.
		given time.Duration
		first Outcome // the late presentation's answer
	}{
		{"the slot it would have had passed", -8 * time.Second, OutcomeAdmit},
		{"the slot it would have had still ahead", 5 * time.Second, OutcomeBusy},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			p := newEligibleOnAQuota(t)
			gate, room, nonce := p.gate, p.room, p.nonce
			token, found := p.last()
			budget := &windowBudget{}
			room.SetQuota(budget)
			now := found.Add(late)
			missed := now.Add(tt.given)
			room.sharedSlot(found.Add(time.Second), missed, found.Add(time.Second))
			budget.open = now.Add(time.Minute)

			d := gate.Decide(ctx, room, Attempt{Token: token, Nonce: nonce, Now: now})
			if d.Outcome != tt.first {
				t.Fatalf("presented %v late: %v (%v), want %v", late, d.Outcome, d.Err, tt.first)
			}
			if d.Outcome == OutcomeBusy {
				if next := d.Next.Claims.NextAttempt(); !next.Equal(ceilMilli(missed)) {
					t.Fatalf("told to come back at %v, want the slot it would have had, %v", next, missed)
				}
				held, err := gate.ledger.Lookup(ctx, d.Claims.Place())
				if err != nil || held.State != queue.PlaceReserved || !held.Slot.Equal(missed) || !chargedSlot(held).Equal(budget.open) {
					t.Fatalf("the ledger holds %+v (%v), want the slot %v, charged %v", held, err, missed, budget.open)
				}
				now = ceilMilli(missed)
				if d = gate.Decide(ctx, room, Attempt{Token: d.Next.Token, Nonce: nonce, Now: now}); d.Outcome != OutcomeAdmit {
					t.Fatalf("at the slot it would have had: %v (%v), want admitted", d.Outcome, d.Err)
				}
			}
			gate.Requeue(ctx, room, d, now)
			if len(budget.refunds) != 1 || !budget.refunds[0].Equal(budget.open) {
				t.Fatalf("requeued: gave back %v, want the slot charged, %v", budget.refunds, budget.open)
			}
			if !d.Slot.Equal(budget.open) {
				t.Fatalf("the decision names slot %v, want the slot charged, %v", d.Slot, budget.open)
			}
		})
	}
}

// TestALatePlaceFoundEligibleAfterItsCheckpointIsLateForFound: a place
// presenting late with a token whose checkpoint it was not eligible at is
// found eligible at a later one, and is late for that one only: it takes
// the slot of the first grant given since it was found eligible, not one
// given since the moment its page was told (the rule itself, at Gate.slot:
// TestLatenessCountsFromTheLaterOfFoundAndTold).
func TestALatePlaceFoundEligibleAfterItsCheckpointIsLateForFound(t *testing.T) {
	ctx := context.Background()
	p := newEligibleOnAQuota(t)
	if len(p.tokens) < 2 {
		t.Fatal("want a place not eligible at its first checkpoint")
	}
	token, told := p.tokens[len(p.tokens)-2], p.told[len(p.told)-2]
	// Found eligible at that checkpoint at the latest, after told: the
	// walk from told may find it at a point of its grid between.
	_, found := p.last()
	now := found.Add(10 * time.Second)
	p.room.SetQuota(&windowBudget{open: now.Add(time.Minute)})
	sinceTold, sinceFound := now.Add(-8*time.Second), now.Add(5*time.Second)
	p.room.sharedSlot(told, sinceTold, told)
	p.room.sharedSlot(found.Add(time.Second), sinceFound, found.Add(time.Second))

	d := p.gate.Decide(ctx, p.room, Attempt{Token: token, Nonce: p.nonce, Now: now})
	if d.Outcome != OutcomeBusy || !d.Next.Claims.NextAttempt().Equal(ceilMilli(sinceFound)) {
		t.Fatalf("told %v, presented at %v: %v (%v), want busy until the slot given since it was found eligible, %v (given since told: %v)",
			told.Sub(t0), now.Sub(t0), d.Outcome, d.Err, sinceFound.Sub(t0), sinceTold.Sub(t0))
	}
}

// eligibleOnAQuota is a place on a room with a shared quota, each of
// whose checkpoints up to the one it is found eligible at was presented
// on time but that one: the same place with a room of its own is seen to
// be found eligible at the last of told, the checkpoints its tokens name.
type eligibleOnAQuota struct {
	gate   *Gate
	room   *Room
	nonce  string
	tokens []string    // the token told each checkpoint
	told   []time.Time // tokens[i]'s checkpoint; the last is found
}

func newEligibleOnAQuota(t *testing.T) eligibleOnAQuota {
	t.Helper()
	ctx := context.Background()
	setup := func() (eligibleOnAQuota, WaitToken) {
		p := eligibleOnAQuota{
			gate: NewGate(testRing(t, "k1", "k1"), Policy{}, queue.NewMemoryLedger(100, func() time.Time { return t0 }), WithRandom(newSeeded(7))),
			room: testRoom(t, func(c *RoomConfig) { c.Rate = 1; c.Burst = 1 }),
		}
		p.room.SetQuota(&windowBudget{})
		tk, err := p.gate.Issue(p.room, Visitor{}, t0)
		if err != nil {
			t.Fatal(err)
		}
		p.nonce = solve(t, tk.Claims)
		return p, tk
	}
	p, tk := setup()
	steps := 0
	for token, at := tk.Token, tk.Claims.NextAttempt(); ; steps++ {
		d := p.gate.Decide(ctx, p.room, Attempt{Token: token, Nonce: p.nonce, Now: at})
		if d.Outcome != OutcomeWait {
			break
		}
		if steps > 1000 {
			t.Fatal("never eligible")
		}
		token, at = d.Next.Token, d.Next.Claims.NextAttempt()
	}
	p, tk = setup()
	token, at := tk.Token, tk.Claims.NextAttempt()
	for range steps {
		p.tokens, p.told = append(p.tokens, token), append(p.told, at)
		d := p.gate.Decide(ctx, p.room, Attempt{Token: token, Nonce: p.nonce, Now: at})
		token, at = d.Next.Token, d.Next.Claims.NextAttempt()
	}
	p.tokens, p.told = append(p.tokens, token), append(p.told, at)
	return p
}

// last is the token of the checkpoint the place is found eligible at, and
// that checkpoint.
func (p eligibleOnAQuota) last() (token string, found time.Time) {
	return p.tokens[len(p.tokens)-1], p.told[len(p.told)-1]
}

// TestAFIFOPlaceOnTimeForItsCheckpointIsNotLate: a fifo place is found
// eligible at the moment the counter reached its key, which, the rate up
// since its page was told its checkpoint, is well before that checkpoint;
// presenting at that checkpoint it is on time, and takes the slot asking
// now gives, not the slot of a grant given since it was found eligible.
func TestAFIFOPlaceOnTimeForItsCheckpointIsNotLate(t *testing.T) {
	ctx := context.Background()
	gate := testGate(t, 1000)
	room := fifoRoom(t, 1, 0, StateQueue, time.Time{})
	room.SetQuota(&windowBudget{})
	for i := range 120 { // the places ahead
		claimedAt(t, gate, room, t0.Add(time.Duration(i)*time.Millisecond))
	}
	tk, err := gate.Issue(room, Visitor{}, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	nonce := solve(t, tk.Claims)
	// Waiting on time until told a checkpoint well ahead.
	token, asked, told := tk.Token, tk.Claims.NextAttempt(), tk.Claims.NextAttempt()
	for steps := 0; told.Sub(asked) < 10*time.Second; steps++ {
		if steps > 100 {
			t.Fatal("never told a checkpoint 10 s ahead")
		}
		room.Tick(told)
		d := gate.Decide(ctx, room, Attempt{Token: token, Nonce: nonce, Now: told})
		if d.Outcome != OutcomeWait {
			t.Fatalf("at %v: %v (%v), want wait", told.Sub(t0), d.Outcome, d.Err)
		}
		token, asked, told = d.Next.Token, told, d.Next.Claims.NextAttempt()
	}
	// The rate goes up once the page was told.
	if err := room.SetRate(100, 100, asked); err != nil {
		t.Fatal(err)
	}
	for at := asked; !at.After(told); at = at.Add(100 * time.Millisecond) {
		room.Tick(at)
	}
	claims, err := gate.Codec().ParseWait(token, room.Name(), told)
	if err != nil {
		t.Fatal(err)
	}
	view := room.View(told)
	from, threshold := gate.threshold(&view, claims, gate.Codec().Keys().Draw(claims.Lot).Number)
	found, ok := fifoFound(&view, claims, from+threshold, told)
	if !ok || told.Sub(found) <= queue.PacerSlack {
		t.Fatalf("found eligible at %v (%v), told %v: want found well before told", found.Sub(t0), ok, told.Sub(t0))
	}
	budget := &windowBudget{open: told.Add(time.Minute)}
	room.SetQuota(budget)
	given := told.Add(5 * time.Second) // the slot of every grant since found
	for at := found; at.Before(told); at = at.Add(time.Second) {
		room.sharedSlot(at, given, at)
	}

	d := gate.Decide(ctx, room, Attempt{Token: token, Nonce: nonce, Now: told})
	if d.Outcome != OutcomeBusy || !d.Next.Claims.NextAttempt().Equal(ceilMilli(budget.open)) {
		t.Fatalf("found at %v, on time at %v: %v (%v) until %v, want busy until the slot asking now gives, %v (a grant's since found: %v)",
			found.Sub(t0), told.Sub(t0), d.Outcome, d.Err, d.Next.Claims.NextAttempt().Sub(t0), budget.open.Sub(t0), given.Sub(t0))
	}
}
