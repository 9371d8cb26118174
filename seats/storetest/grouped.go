package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/fairgate/fairgate/seats"
)

// GroupedWrites runs writes concurrently, as a store that commits writes
// in groups would put them in one group: holds that succeed, two holds
// racing for one seat, a hold with a key already used, a hold of an
// unknown seat, a release of a seat not held and a checkout, each with its
// own Idempotency-Key. Each gets its own answer: a refusal fails neither
// the others nor itself beyond its refusal, leaves no record and changes
// nothing, and every write that succeeded committed with its record.
//
// group, if not nil, is called once the fixture is stored and before the
// writes start; the function it returns is called with the number of
// writes once they are all started, before their answers are awaited: a
// store's own test holds its commits back in between, so that the writes
// do share one group.
func GroupedWrites(t *testing.T, store seats.Store, group func() (launched func(n int))) {
	t.Helper()
	ctx := context.Background()
	svc := seats.NewService(store, func() time.Time { return T0 })
	event := fmt.Sprintf("grp%d", rand.Int64())
	if _, err := svc.CreateEvent(ctx, Event(event)); err != nil {
		t.Fatal(err)
	}
	sess := make([]seats.Session, 9)
	for i := range sess {
		s, err := svc.OpenSession(ctx, event, fmt.Sprint("g", i), fmt.Sprintf("tok-g%d-%s", i, event), T0, nil)
		if err != nil {
			t.Fatal(err)
		}
		sess[i] = s
	}
	// Session 8 holds a seat first, to check out and to release one not held.
	if _, err := store.Hold(ctx, seats.Hold{Session: sess[8].ID, Seats: []string{"AB-1-1-30"}, Now: T0}); err != nil {
		t.Fatal(err)
	}
	key := func(name string) *seats.Idempotency {
		return &seats.Idempotency{Key: name + "-" + event, Fingerprint: "fp-" + name, Status: 200}
	}
	used := seats.KeyRecord{ClaimedAt: T0, Fingerprint: "fp-earlier", Status: 409, Body: []byte(`{"error":{"code":"state"}}`)}
	if err := store.PutKey(ctx, key("used").Key, used); err != nil {
		t.Fatal(err)
	}

	at := T0.Add(time.Second)
	type write struct {
		name string
		key  *seats.Idempotency
		seat string // the seat it holds, if it is a hold
		run  func(key *seats.Idempotency) (seats.Session, error)
	}
	hold := func(i int, seat, name string) write {
		return write{name: name, key: key(name), seat: seat, run: func(k *seats.Idempotency) (seats.Session, error) {
			return store.Hold(ctx, seats.Hold{Session: sess[i].ID, Seats: []string{seat}, Now: at, Key: k})
		}}
	}
	writes := []write{
		hold(0, "A-1-1-1", "ok0"),
		hold(1, "A-1-1-2", "ok1"),
		hold(2, "A-1-1-3", "ok2"),
		hold(3, "AB-1-1-1", "ok3"),
		hold(4, "A-1-2-1", "race4"),
		hold(5, "A-1-2-1", "race5"),
		hold(6, "A-1-2-5", "used"),
		hold(7, "A-9-9-9", "unknown"),
		{name: "release", key: key("release"), run: func(k *seats.Idempotency) (seats.Session, error) {
			return store.Release(ctx, seats.Release{Session: sess[7].ID, Seat: "A-1-1-9", Now: at, Key: k})
		}},
		{name: "checkout", key: key("checkout"), run: func(k *seats.Idempotency) (seats.Session, error) {
			return store.Checkout(ctx, sess[8].ID, at, at.Add(5*time.Minute), k)
		}},
	}
	launched := func(int) {}
	if group != nil {
		launched = group()
	}
	errs := make([]error, len(writes))
	outs := make([]seats.Session, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = w.run(w.key)
		}()
	}
	launched(len(writes))
	wg.Wait()

	byName := map[string]int{}
	for i, w := range writes {
		byName[w.name] = i
	}
	won := func(name string) bool { return errs[byName[name]] == nil }
	for _, name := range []string{"ok0", "ok1", "ok2", "ok3", "checkout"} {
		if !won(name) {
			t.Errorf("%s failed beside the others: %v", name, errs[byName[name]])
		}
	}
	var taken *seats.TakenError
	switch {
	case won("race4") == won("race5"):
		t.Errorf("the race for one seat: %v and %v, want one winner", errs[byName["race4"]], errs[byName["race5"]])
	case !won("race4") && !errors.As(errs[byName["race4"]], &taken), !won("race5") && !errors.As(errs[byName["race5"]], &taken):
		t.Errorf("the loser of the race was not told the seat was taken: %v %v", errs[byName["race4"]], errs[byName["race5"]])
	}
	if err := errs[byName["used"]]; !errors.Is(err, seats.ErrKeyUsed) {
		t.Errorf("hold with a used key: %v", err)
	}
	if err := errs[byName["unknown"]]; !errors.Is(err, seats.ErrUnknownSeat) {
		t.Errorf("hold of an unknown seat: %v", err)
	}
	if err := errs[byName["release"]]; !errors.Is(err, seats.ErrNotHeld) {
		t.Errorf("release of a seat not held: %v", err)
	}

	// What is stored agrees with each answer.
	seatOf := map[string]seats.Seat{}
	for _, sec := range []string{"A", "AB"} {
		list, err := store.SectionSeats(ctx, event, sec)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			seatOf[s.ID] = s
		}
	}
	for i, w := range writes {
		rec, found, err := store.Key(ctx, w.key.Key)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case w.name == "used":
			if !found || rec.Status != used.Status || rec.Fingerprint != used.Fingerprint || string(rec.Body) != string(used.Body) {
				t.Errorf("the used key's record changed: %+v %v", rec, found)
			}
			if s := seatOf[w.seat]; s.StatusAt(at) != seats.Available {
				t.Errorf("a write with a used key took seat %s", w.seat)
			}
		case errs[i] == nil:
			if !found || rec.Session == nil || rec.Session.ID != outs[i].ID || rec.Fingerprint != w.key.Fingerprint || rec.Status != 200 {
				t.Errorf("%s succeeded without its record: %+v %v", w.name, rec, found)
			}
			if w.seat != "" && !seatOf[w.seat].LockedBy(outs[i].ID, at) {
				t.Errorf("%s succeeded but seat %s is %+v", w.name, w.seat, seatOf[w.seat])
			}
		default:
			if found {
				t.Errorf("refused %s left a record: %+v", w.name, rec)
			}
		}
	}
	if s := seatOf["A-1-2-1"]; !s.LockedBy(sess[4].ID, at) && !s.LockedBy(sess[5].ID, at) {
		t.Errorf("the raced seat is held by neither racer: %+v", s)
	}
	if got, err := store.Session(ctx, sess[8].ID); err != nil || got.State != seats.StateCheckout {
		t.Errorf("the checkout beside the refusals: %+v %v", got, err)
	}
}

func testGroupedWrites(t *testing.T, newStore func(t *testing.T) seats.Store) {
	store := newStore(t)
	t.Cleanup(func() { store.Close() })
	GroupedWrites(t, store, nil)
}
