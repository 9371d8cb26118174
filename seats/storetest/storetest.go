// Package storetest is the one conformance suite every seats.Store passes:
// events, sessions, the hold transaction and its neighbours, idempotency
// records, a race of 200 sessions for 50 seats, and a randomised model test
// checked against the domain's own rules and the invariants that matter.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairgate/fairgate/seats"
)

// T0 is the suite's clock origin: midnight UTC two days ahead of the real
// clock. A store with TTL (DynamoDB, and DynamoDB Local too) deletes items
// whose expiry has passed by the real clock, so the injected time must never
// fall behind it, whatever the date the tests run on.
var T0 = time.Now().UTC().Truncate(24 * time.Hour).Add(48 * time.Hour)

// Event is the suite's fixture: section A with two rows of ten, section AB
// (to catch prefix mistakes) with one row of thirty, at most four seats a
// session.
func Event(id string) seats.Event {
	row := func(id string, n int) seats.Row {
		r := seats.Row{ID: id}
		for i := 1; i <= n; i++ {
			r.Seats = append(r.Seats, seats.SeatSpec{Number: i})
		}
		return r
	}
	return seats.Event{
		ID: id, Name: "Suite", MaxSeats: 4,
		HoldWindow: seats.Duration(10 * time.Minute), CheckoutWindow: seats.Duration(5 * time.Minute),
		Sections: []seats.Section{
			{ID: "A", Name: "A", Price: 5000, Blocks: []seats.Block{{ID: "1", Rows: []seats.Row{row("1", 10), row("2", 10)}}}},
			{ID: "AB", Name: "AB", Price: 3000, Blocks: []seats.Block{{ID: "1", Rows: []seats.Row{row("1", 30)}}}},
		},
	}
}

type fixture struct {
	t     *testing.T
	store seats.Store
	svc   *seats.Service
	event string
	ctx   context.Context
}

func setup(t *testing.T, newStore func(t *testing.T) seats.Store) *fixture {
	t.Helper()
	store := newStore(t)
	t.Cleanup(func() { store.Close() })
	f := &fixture{t: t, store: store, svc: seats.NewService(store, func() time.Time { return T0 }), event: fmt.Sprintf("ev%d", rand.Int64()), ctx: context.Background()}
	if _, err := f.svc.CreateEvent(f.ctx, Event(f.event)); err != nil {
		t.Fatalf("CreateEvent: %v", err)
	}
	return f
}

func (f *fixture) session(user string, now time.Time) seats.Session {
	f.t.Helper()
	s, err := f.svc.OpenSession(f.ctx, f.event, user, "tok-"+user+fmt.Sprint(rand.Int64()), now, nil)
	if err != nil {
		f.t.Fatalf("OpenSession(%s): %v", user, err)
	}
	return s
}

func (f *fixture) seat(id string) seats.Seat {
	f.t.Helper()
	sec, _, ok := strings.Cut(id, "-")
	if !ok {
		f.t.Fatalf("seat id %q names no section", id)
	}
	list, err := f.store.SectionSeats(f.ctx, f.event, sec)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, s := range list {
		if s.ID == id {
			return s
		}
	}
	f.t.Fatalf("no seat %s", id)
	return seats.Seat{}
}

// Run runs the whole suite against fresh stores from newStore.
func Run(t *testing.T, newStore func(t *testing.T) seats.Store) {
	t.Run("Events", func(t *testing.T) { testEvents(t, newStore) })
	t.Run("InterruptedImport", func(t *testing.T) { testInterruptedImport(t, newStore) })
	t.Run("Sessions", func(t *testing.T) { testSessions(t, newStore) })
	t.Run("Lifecycle", func(t *testing.T) { testLifecycle(t, newStore) })
	t.Run("LazyExpiry", func(t *testing.T) { testLazyExpiry(t, newStore) })
	t.Run("BestAvailable", func(t *testing.T) { testBest(t, newStore) })
	t.Run("IdempotencyKeys", func(t *testing.T) { testKeys(t, newStore) })
	t.Run("CancelledWrites", func(t *testing.T) { testCancelledWrites(t, newStore) })
	t.Run("GroupedWrites", func(t *testing.T) { testGroupedWrites(t, newStore) })
	t.Run("Race", func(t *testing.T) { testRace(t, newStore) })
	t.Run("Model", func(t *testing.T) { testModel(t, newStore) })
	t.Run("Stadium", func(t *testing.T) { testStadium(t, newStore) })
}

func testEvents(t *testing.T, newStore func(t *testing.T) seats.Store) {
	f := setup(t, newStore)
	ev, err := f.store.Event(f.ctx, f.event)
	if err != nil || len(ev.Sections) != 2 || ev.MaxSeats != 4 {
		t.Fatalf("Event: %+v %v", ev, err)
	}
	if _, err := f.svc.CreateEvent(f.ctx, Event(f.event)); !errors.Is(err, seats.ErrExists) {
		t.Fatalf("duplicate event: %v", err)
	}
	if _, err := f.store.Event(f.ctx, "nope"); !errors.Is(err, seats.ErrNotFound) {
		t.Fatalf("unknown event: %v", err)
	}
	a, err := f.store.SectionSeats(f.ctx, f.event, "A")
	if err != nil {
		t.Fatal(err)
	}
	ab, err := f.store.SectionSeats(f.ctx, f.event, "AB")
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 20 || len(ab) != 30 {
		t.Fatalf("section A has %d seats, AB %d", len(a), len(ab))
	}
	_, counts, err := f.svc.EventCounts(f.ctx, f.event)
	if err != nil || counts["A"].Available != 20 || counts["AB"].Total != 30 {
		t.Fatalf("counts %+v %v", counts, err)
	}
}

// testInterruptedImport: an import cut off at any point is invisible until
// it completes; reposting the same layout completes it; another layout under
// the same id is refused.
func testInterruptedImport(t *testing.T, newStore func(t *testing.T) seats.Store) {
	f := setup(t, newStore)
	for i, cut := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
		id := fmt.Sprintf("imp%d-%s", i, f.event)
		ctx, cancel := context.WithTimeout(f.ctx, cut)
		if cut == 0 {
			cancel()
		}
		_, err := f.svc.CreateEvent(ctx, Event(id))
		cancel()
		if err != nil {
			if _, err := f.store.Event(f.ctx, id); !errors.Is(err, seats.ErrNotFound) {
				t.Fatalf("import cut at %v is visible: %v", cut, err)
			}
			other := Event(id)
			other.Name = "another layout"
			switch _, err := f.svc.CreateEvent(f.ctx, other); {
			case err == nil:
				continue // the cut import never reached the store: the other layout is the event
			case !errors.Is(err, seats.ErrExists):
				t.Fatalf("another layout over an interrupted import: %v", err)
			}
			if _, err := f.svc.CreateEvent(f.ctx, Event(id)); err != nil {
				t.Fatalf("resuming the import cut at %v: %v", cut, err)
			}
		}
		if _, err := f.svc.CreateEvent(f.ctx, Event(id)); !errors.Is(err, seats.ErrExists) {
			t.Fatalf("reposting a complete import: %v", err)
		}
		for sec, n := range map[string]int{"A": 20, "AB": 30} {
			list, err := f.store.SectionSeats(f.ctx, id, sec)
			if err != nil || len(list) != n {
				t.Fatalf("import cut at %v: section %s has %d seats (%v)", cut, sec, len(list), err)
			}
		}
	}
}

func testSessions(t *testing.T, newStore func(t *testing.T) seats.Store) {
	f := setup(t, newStore)
	s1, err := f.svc.OpenSession(f.ctx, f.event, "alice", "wid-1", T0, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.store.Session(f.ctx, s1.ID)
	if err != nil || got.UserID != "alice" || got.State != seats.StateReservation || got.Limit != 4 {
		t.Fatalf("Session: %+v %v", got, err)
	}
	_, err = f.svc.OpenSession(f.ctx, f.event, "alice", "wid-2", T0.Add(time.Minute), nil)
	var exists *seats.SessionExistsError
	if !errors.As(err, &exists) || exists.Session != s1.ID {
		t.Fatalf("second live session: %v", err)
	}
	if _, err := f.svc.OpenSession(f.ctx, f.event, "bob", "wid-1", T0, nil); !errors.Is(err, seats.ErrTokenUsed) {
		t.Fatalf("token reused: %v", err)
	}
	// Once the first has expired, alice may open another.
	if _, err := f.svc.OpenSession(f.ctx, f.event, "alice", "wid-3", T0.Add(11*time.Minute), nil); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if _, err := f.store.Session(f.ctx, "nope"); !errors.Is(err, seats.ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	if _, err := f.svc.OpenSession(f.ctx, "nope", "carol", "wid-9", T0, nil); !errors.Is(err, seats.ErrNotFound) {
		t.Fatalf("unknown event: %v", err)
	}
}

func testLifecycle(t *testing.T, newStore func(t *testing.T) seats.Store) {
	f := setup(t, newStore)
	a := f.session("alice", T0)
	b := f.session("bob", T0)
	now := T0.Add(time.Minute)
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: a.ID, Seats: []string{"A-1-1-1", "A-1-1-2"}, Now: now}); err != nil {
		t.Fatalf("hold: %v", err)
	}
	// Bob's hold overlaps one seat: all or nothing, naming the taken seat.
	_, err := f.store.Hold(f.ctx, seats.Hold{Session: b.ID, Seats: []string{"A-1-1-3", "A-1-1-2"}, Now: now})
	var taken *seats.TakenError
	if !errors.As(err, &taken) || !slices.Equal(taken.Seats, []string{"A-1-1-2"}) {
		t.Fatalf("overlapping hold: %v", err)
	}
	if st := f.seat("A-1-1-3"); st.StatusAt(now) != seats.Available {
		t.Fatal("a failed hold locked a seat")
	}
	// A hold naming its user is refused, in its own transaction, on a
	// session of someone else.
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: a.ID, User: "bob", Seats: []string{"A-1-1-3"}, Now: now}); !errors.Is(err, seats.ErrForbidden) {
		t.Fatalf("bob holds in alice's session: %v", err)
	}
	if st := f.seat("A-1-1-3"); st.StatusAt(now) != seats.Available {
		t.Fatal("a hold in another user's session locked a seat")
	}
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: a.ID, User: "alice", Seats: []string{"A-1-1-1"}, Now: now}); err != nil {
		t.Fatalf("alice re-holds in her own session: %v", err)
	}
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: a.ID, Seats: []string{"A-1-1-3", "A-1-1-4", "A-1-1-5"}, Now: now}); !errors.Is(err, seats.ErrLimit) {
		t.Fatalf("over the limit: %v", err)
	}
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: a.ID, Seats: []string{"A-9-9-9"}, Now: now}); !errors.Is(err, seats.ErrUnknownSeat) {
		t.Fatalf("unknown seat: %v", err)
	}
	// Holding a seat already held is a no-op, not a conflict.
	sess, err := f.store.Hold(f.ctx, seats.Hold{Session: a.ID, Seats: []string{"A-1-1-1"}, Now: now})
	if err != nil || len(sess.Seats) != 2 {
		t.Fatalf("re-hold: %+v %v", sess, err)
	}
	if _, err := f.store.Release(f.ctx, seats.Release{Session: a.ID, User: "bob", Seat: "A-1-1-2", Now: now}); !errors.Is(err, seats.ErrForbidden) {
		t.Fatalf("bob releases in alice's session: %v", err)
	}
	if _, err := f.store.Release(f.ctx, seats.Release{Session: a.ID, User: "alice", Seat: "A-1-1-2", Now: now}); err != nil {
		t.Fatalf("release: %v", err)
	}
	if _, err := f.store.Release(f.ctx, seats.Release{Session: a.ID, Seat: "A-1-1-2", Now: now}); !errors.Is(err, seats.ErrNotHeld) {
		t.Fatalf("double release: %v", err)
	}
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: b.ID, Seats: []string{"A-1-1-2"}, Now: now}); err != nil {
		t.Fatalf("bob holds the released seat: %v", err)
	}
	checkoutAt := T0.Add(9 * time.Minute)
	until := checkoutAt.Add(5 * time.Minute)
	sess, err = f.store.Checkout(f.ctx, a.ID, checkoutAt, until, nil)
	if err != nil || sess.State != seats.StateCheckout || !sess.ExpiresAt.Equal(until) {
		t.Fatalf("checkout: %+v %v", sess, err)
	}
	if st := f.seat("A-1-1-1"); !st.ExpiresAt.Equal(until) {
		t.Fatalf("checkout did not extend the lock: %v", st.ExpiresAt)
	}
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: a.ID, Seats: []string{"A-1-2-1"}, Now: checkoutAt}); !errors.Is(err, seats.ErrState) {
		t.Fatalf("hold during checkout: %v", err)
	}
	// Past the hold window but within checkout: confirm still works.
	late := T0.Add(12 * time.Minute)
	sess, err = f.store.Confirm(f.ctx, a.ID, "R1", "pay-1", late, nil)
	if err != nil || sess.State != seats.StateFinalised || sess.Reservation != "R1" {
		t.Fatalf("confirm: %+v %v", sess, err)
	}
	if st := f.seat("A-1-1-1"); st.Status != seats.Reserved || st.Reservation != "R1" {
		t.Fatalf("reserved seat: %+v", st)
	}
	if _, err := f.store.Cancel(f.ctx, a.ID, late, nil); !errors.Is(err, seats.ErrState) {
		t.Fatalf("cancel after confirm: %v", err)
	}
	// Bob cancels: his seat is free again.
	if _, err := f.store.Cancel(f.ctx, b.ID, now, nil); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if st := f.seat("A-1-1-2"); st.StatusAt(now) != seats.Available {
		t.Fatalf("cancel kept the seat: %+v", st)
	}
	if _, err := f.store.Confirm(f.ctx, b.ID, "R2", "pay", now, nil); !errors.Is(err, seats.ErrState) {
		t.Fatalf("confirm a cancelled session: %v", err)
	}
}

func testLazyExpiry(t *testing.T, newStore func(t *testing.T) seats.Store) {
	f := setup(t, newStore)
	a := f.session("alice", T0)
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: a.ID, Seats: []string{"AB-1-1-5"}, Now: T0}); err != nil {
		t.Fatal(err)
	}
	later := T0.Add(10*time.Minute + time.Second)
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: a.ID, Seats: []string{"AB-1-1-6"}, Now: later}); !errors.Is(err, seats.ErrExpired) {
		t.Fatalf("hold after expiry: %v", err)
	}
	if _, err := f.store.Checkout(f.ctx, a.ID, later, later.Add(time.Minute), nil); !errors.Is(err, seats.ErrExpired) {
		t.Fatalf("checkout after expiry: %v", err)
	}
	// Nobody swept the lock, yet the seat is available to others.
	b := f.session("bob", later)
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: b.ID, Seats: []string{"AB-1-1-5"}, Now: later}); err != nil {
		t.Fatalf("taking an expired lock: %v", err)
	}
}

func testBest(t *testing.T, newStore func(t *testing.T) seats.Store) {
	f := setup(t, newStore)
	blocker := f.session("blocker", T0)
	// Row A-1-1: seats 3 and 7 taken, leaving runs 1-2, 4-6, 8-10.
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: blocker.ID, Seats: []string{"A-1-1-3", "A-1-1-7"}, Now: T0}); err != nil {
		t.Fatal(err)
	}
	a := f.session("alice", T0)
	sess, err := f.svc.HoldBest(f.ctx, a.ID, "alice", 2, []string{"A"}, T0, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 1-2 fits exactly; it is the first run without a lone seat.
	if !slices.Equal(sess.Seats, []string{"A-1-1-1", "A-1-1-2"}) {
		t.Fatalf("best 2: %v", sess.Seats)
	}
	b := f.session("bob", T0)
	sess, err = f.svc.HoldBest(f.ctx, b.ID, "bob", 2, []string{"A"}, T0, nil)
	// 4-6 would leave a lone seat; 8-10 too; row 2 is whole.
	if err != nil || !slices.Equal(sess.Seats, []string{"A-1-2-1", "A-1-2-2"}) {
		t.Fatalf("best 2 without lone seats: %v %v", sess.Seats, err)
	}
	c := f.session("carol", T0)
	sess, err = f.svc.HoldBest(f.ctx, c.ID, "carol", 3, []string{"A", "AB"}, T0, nil)
	if err != nil || len(sess.Seats) != 3 {
		t.Fatalf("best 3: %v %v", sess.Seats, err)
	}
	d := f.session("dave", T0)
	if _, err := f.svc.HoldBest(f.ctx, d.ID, "dave", 5, []string{"A"}, T0, nil); !errors.Is(err, seats.ErrLimit) {
		var taken *seats.TakenError
		if !errors.As(err, &taken) {
			t.Fatalf("best 5 over the limit of 4: %v", err)
		}
	}
}

func idem(key string) *seats.Idempotency {
	return &seats.Idempotency{Key: key, Fingerprint: "fp-" + key, Status: 200}
}

// testKeys: the idempotency record commits with the write; a retry of a
// committed write changes nothing and finds the original answer; a refused
// write leaves no record behind; only refusals are recorded with PutKey.
func testKeys(t *testing.T, newStore func(t *testing.T) seats.Store) {
	f := setup(t, newStore)
	k := func(name string) string { return name + "-" + f.event }
	if _, found, err := f.store.Key(f.ctx, k("none")); err != nil || found {
		t.Fatalf("unknown key: found %v, %v", found, err)
	}

	// A refusal is recorded once.
	refusal := seats.KeyRecord{ClaimedAt: T0, Fingerprint: "fp", Status: 409, Body: []byte(`{"error":{}}`)}
	if err := f.store.PutKey(f.ctx, k("refused"), refusal); err != nil {
		t.Fatal(err)
	}
	if err := f.store.PutKey(f.ctx, k("refused"), refusal); !errors.Is(err, seats.ErrKeyUsed) {
		t.Fatalf("second PutKey: %v", err)
	}
	rec, found, err := f.store.Key(f.ctx, k("refused"))
	if err != nil || !found || rec.Status != 409 || string(rec.Body) != `{"error":{}}` || rec.Fingerprint != "fp" || !rec.ClaimedAt.Equal(T0) {
		t.Fatalf("refusal record: %+v %v %v", rec, found, err)
	}

	// Opening a session: a retry with the key finds the first session.
	open := idem(k("open"))
	open.Status = 201
	first := seats.Session{ID: "S1" + f.event, EventID: f.event, UserID: "alice", TokenID: "w1" + f.event, State: seats.StateReservation,
		Limit: 4, CreatedAt: T0, ExpiresAt: T0.Add(10 * time.Minute), Seats: []string{}}
	if err := f.store.CreateSession(f.ctx, first, T0, open); err != nil {
		t.Fatal(err)
	}
	retry := first
	retry.ID, retry.TokenID = "S2"+f.event, "w2"+f.event
	if err := f.store.CreateSession(f.ctx, retry, T0.Add(time.Second), open); !errors.Is(err, seats.ErrKeyUsed) {
		t.Fatalf("retried open: %v", err)
	}
	if _, err := f.store.Session(f.ctx, retry.ID); !errors.Is(err, seats.ErrNotFound) {
		t.Fatalf("a retried open created a second session: %v", err)
	}
	rec, found, err = f.store.Key(f.ctx, open.Key)
	if err != nil || !found || rec.Status != 201 || rec.Session == nil || rec.Session.ID != first.ID {
		t.Fatalf("open record: %+v %v %v", rec, found, err)
	}

	// A hold, its retry, a refused hold.
	hold := idem(k("hold"))
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: first.ID, Seats: []string{"A-1-1-1"}, Now: T0, Key: hold}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: first.ID, Seats: []string{"A-1-1-2"}, Now: T0.Add(time.Second), Key: hold}); !errors.Is(err, seats.ErrKeyUsed) {
		t.Fatalf("retried hold with other seats: %v", err)
	}
	if st := f.seat("A-1-1-2"); st.StatusAt(T0) != seats.Available {
		t.Fatal("a replayed key changed a seat")
	}
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: first.ID, Seats: []string{"A-9-9-9"}, Now: T0, Key: idem(k("bad"))}); !errors.Is(err, seats.ErrUnknownSeat) {
		t.Fatalf("hold of an unknown seat: %v", err)
	}
	if _, found, err := f.store.Key(f.ctx, k("bad")); err != nil || found {
		t.Fatalf("a refused write left a record: %v %v", found, err)
	}
	if _, err := f.store.Release(f.ctx, seats.Release{Session: first.ID, Seat: "A-1-1-1", Now: T0, Key: idem(k("release"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Release(f.ctx, seats.Release{Session: first.ID, Seat: "A-1-1-1", Now: T0, Key: idem(k("release"))}); !errors.Is(err, seats.ErrKeyUsed) {
		t.Fatalf("retried release: %v", err)
	}
	if _, err := f.store.Hold(f.ctx, seats.Hold{Session: first.ID, Seats: []string{"A-1-1-3"}, Now: T0, Key: idem(k("hold2"))}); err != nil {
		t.Fatal(err)
	}

	// Checkout and confirm: the client never saw the answer, its retry
	// learns the reservation id.
	if _, err := f.store.Checkout(f.ctx, first.ID, T0, T0.Add(5*time.Minute), idem(k("checkout"))); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Checkout(f.ctx, first.ID, T0, T0.Add(5*time.Minute), idem(k("checkout"))); !errors.Is(err, seats.ErrKeyUsed) {
		t.Fatalf("retried checkout: %v", err)
	}
	confirm := idem(k("confirm"))
	if _, err := f.store.Confirm(f.ctx, first.ID, "R-"+first.ID, "pay", T0.Add(time.Minute), confirm); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Confirm(f.ctx, first.ID, "R-"+first.ID, "pay", T0.Add(2*time.Minute), confirm); !errors.Is(err, seats.ErrKeyUsed) {
		t.Fatalf("retried confirm: %v", err)
	}
	rec, found, err = f.store.Key(f.ctx, confirm.Key)
	if err != nil || !found || rec.Session == nil || rec.Session.Reservation != "R-"+first.ID || rec.Session.State != seats.StateFinalised || rec.Status != 200 {
		t.Fatalf("confirm record: %+v %v %v", rec, found, err)
	}
	if _, err := f.store.Cancel(f.ctx, first.ID, T0.Add(time.Minute), idem(k("cancel"))); !errors.Is(err, seats.ErrState) {
		t.Fatalf("cancel after confirm: %v", err)
	}
}

// testCancelledWrites: writes whose context ends at every point of their
// flight, from before the call to after the commit. Whatever the caller saw,
// the idempotency record exists exactly when the change happened, and the
// retry with the same key completes the write or finds the original answer.
func testCancelledWrites(t *testing.T, newStore func(t *testing.T) seats.Store) {
	f := setup(t, newStore)
	list, err := f.store.SectionSeats(f.ctx, f.event, "AB")
	if err != nil {
		t.Fatal(err)
	}
	for i, seat := range list[:24] {
		sess := f.session(fmt.Sprintf("c%d", i), T0)
		key := idem(fmt.Sprintf("cut-%d-%s", i, f.event))
		h := seats.Hold{Session: sess.ID, Seats: []string{seat.ID}, Now: T0, Key: key}
		ctx, cancel := context.WithTimeout(f.ctx, time.Duration(i)*200*time.Microsecond)
		_, cutErr := f.store.Hold(ctx, h)
		cancel()
		committed := agreed(t, f, key.Key, sess.ID, seat.ID)
		if cutErr == nil && !committed {
			t.Fatalf("write %d reported success but did not commit", i)
		}
		_, err := f.store.Hold(f.ctx, h)
		switch {
		case committed && !errors.Is(err, seats.ErrKeyUsed):
			t.Fatalf("retry of committed write %d: %v", i, err)
		case !committed && err != nil && !errors.Is(err, seats.ErrKeyUsed):
			t.Fatalf("retry of cut-off write %d: %v", i, err)
		}
		if !agreed(t, f, key.Key, sess.ID, seat.ID) {
			t.Fatalf("write %d did not commit on retry", i)
		}
	}
}

// agreed waits for an interrupted write to settle (a store may finish a
// write its caller gave up on) and reports whether it committed: the
// record exists if and only if the seat is held.
func agreed(t *testing.T, f *fixture, key, session, seat string) bool {
	t.Helper()
	for try := 0; ; try++ {
		_, found, err := f.store.Key(f.ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		held := f.seat(seat).LockedBy(session, T0)
		if found == held {
			return found
		}
		if try == 50 {
			t.Fatalf("idempotency record %v but seat held %v: the record is not atomic with the write", found, held)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testRace: 200 sessions race for 50 seats (section A's 20 and 30 of AB),
// each holding two seats at random. Every seat ends with at most one owner,
// every loser is told which seats were taken, and the counts agree.
func testRace(t *testing.T, newStore func(t *testing.T) seats.Store) {
	f := setup(t, newStore)
	var all []string
	for _, sec := range []string{"A", "AB"} {
		list, err := f.store.SectionSeats(f.ctx, f.event, sec)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			all = append(all, s.ID)
		}
	}
	sessions := make([]seats.Session, 200)
	for i := range sessions {
		sessions[i] = f.session(fmt.Sprintf("u%d", i), T0)
	}
	var mu sync.Mutex
	won := map[string]string{}
	var wg sync.WaitGroup
	for i, sess := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 7))
			a, b := r.IntN(len(all)), r.IntN(len(all)-1)
			if b >= a {
				b++
			}
			want := []string{all[a], all[b]}
			_, err := f.store.Hold(f.ctx, seats.Hold{Session: sess.ID, Seats: want, Now: T0.Add(time.Second)})
			var taken *seats.TakenError
			switch {
			case err == nil:
				mu.Lock()
				for _, s := range want {
					if prev, ok := won[s]; ok {
						t.Errorf("seat %s won by %s and %s", s, prev, sess.ID)
					}
					won[s] = sess.ID
				}
				mu.Unlock()
			case errors.As(err, &taken):
				if len(taken.Seats) == 0 {
					t.Errorf("a loser was not told which seats")
				}
				for _, s := range taken.Seats {
					if !slices.Contains(want, s) {
						t.Errorf("loser told of seat %s it did not ask for", s)
					}
				}
			default:
				t.Errorf("hold: %v", err)
			}
		}()
	}
	wg.Wait()
	now := T0.Add(2 * time.Second)
	locked := 0
	for _, sec := range []string{"A", "AB"} {
		list, err := f.store.SectionSeats(f.ctx, f.event, sec)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if s.StatusAt(now) == seats.Locked {
				locked++
				if won[s.ID] != s.Session {
					t.Errorf("seat %s locked by %s, but %q won it", s.ID, s.Session, won[s.ID])
				}
			}
		}
	}
	if locked != len(won) || locked == 0 {
		t.Fatalf("%d seats locked, %d won", locked, len(won))
	}
	_, counts, err := f.svc.EventCounts(f.ctx, f.event)
	if err != nil {
		t.Fatal(err)
	}
	if counts["A"].Locked+counts["AB"].Locked != locked {
		t.Fatalf("counts %+v disagree with %d locked seats", counts, locked)
	}
}
