// Package storetest is the one conformance suite every roomstate.Store
// passes: compare-and-set of the control state (also raced), the place
// ledger (hold, use, release, expiry; holds and uses raced), budget reservations raced by many
// nodes, expiry, the population sum across nodes, rank blocks, and a
// cancelled context.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/roomstate"
)

// T0 is the suite's clock origin: midnight UTC two days ahead of the real
// clock. A store with TTL (DynamoDB, and DynamoDB Local too) deletes items
// whose expiry has passed by the real clock, so the injected time must never
// fall behind it, whatever the date the tests run on.
var T0 = time.Now().UTC().Truncate(24 * time.Hour).Add(48 * time.Hour)

// Run runs the suite; newStore returns an empty store, closed by the suite.
func Run(t *testing.T, newStore func(t *testing.T) roomstate.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s roomstate.Store, room string)
	}{
		{"ControlCompareAndSet", testControlCAS},
		{"ControlRacedCAS", testControlRace},
		{"LedgerConsumeOnce", testLedger},
		{"LedgerExpiry", testLedgerExpiry},
		{"LedgerRacedConsume", testLedgerRace},
		{"PlaceHoldAndUse", testPlaceHoldUse},
		{"PlaceRacedUse", testPlaceRacedUse},
		{"PlaceRecordsWhoUsedIt", testPlaceUsedBy},
		{"PlaceRecordsItsChargedSlot", testPlaceCharged},
		{"PlaceLapse", testPlaceLapse},
		{"PlaceRacedLapseAndUse", testPlaceRacedLapseAndUse},
		{"BudgetNeverExceedsLimit", testBudgetRace},
		{"BudgetReturn", testBudgetReturn},
		{"BudgetReturnLapsed", testBudgetReturnLapsed},
		{"BudgetAhead", testBudgetAhead},
		{"BudgetAllocatorsRaced", testBudgetAllocators},
		{"PopulationSum", testPopulation},
		{"SketchPerNode", testSketches},
		{"RankBlocks", testRanks},
		{"CancelledContext", testCancelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s, fmt.Sprintf("room%d", rand.Int64()))
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func control(rate float64) roomstate.Control {
	clock := queue.Clock{Origin: T0, Value: 12.5}.Then(T0.Add(time.Minute), 0.25).Then(T0.Add(2*time.Minute), 0)
	return roomstate.Control{
		State: admission.StateScheduled, SaleStart: T0.Add(time.Minute),
		Rate: rate, Burst: 20, Difficulty: 12, Cruise: 0.25, Clock: clock,
	}
}

func same(t *testing.T, got, want roomstate.Control) {
	t.Helper()
	g, errG := json.Marshal(got)
	w, errW := json.Marshal(want)
	if errG != nil || errW != nil {
		t.Fatalf("control does not encode: %v, %v", errG, errW)
	}
	if string(g) != string(w) {
		t.Errorf("control read back as\n%s\nwant\n%s", g, w)
	}
	for _, at := range []time.Time{T0, T0.Add(90 * time.Second), T0.Add(time.Hour)} {
		if got.Clock.At(at) != want.Clock.At(at) {
			t.Errorf("S(%v) = %v, want %v", at, got.Clock.At(at), want.Clock.At(at))
		}
	}
}

func testControlCAS(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	if _, _, err := s.LoadControl(c, room); !errors.Is(err, roomstate.ErrNotFound) {
		t.Fatalf("LoadControl of a new room: %v, want ErrNotFound", err)
	}
	v1, err := s.SaveControl(c, room, control(10), 0)
	if err != nil {
		t.Fatalf("first SaveControl: %v", err)
	}
	if v1 == 0 {
		t.Fatal("SaveControl returned version 0")
	}
	if _, err := s.SaveControl(c, room, control(99), 0); !errors.Is(err, roomstate.ErrConflict) {
		t.Fatalf("second create: %v, want ErrConflict", err)
	}
	got, v, err := s.LoadControl(c, room)
	if err != nil || v != v1 {
		t.Fatalf("LoadControl = version %d, %v; want %d", v, err, v1)
	}
	same(t, got, control(10))
	v2, err := s.SaveControl(c, room, control(20), v1)
	if err != nil || v2 <= v1 {
		t.Fatalf("SaveControl on v%d = v%d, %v", v1, v2, err)
	}
	if _, err := s.SaveControl(c, room, control(30), v1); !errors.Is(err, roomstate.ErrConflict) {
		t.Fatalf("SaveControl on a stale version: %v, want ErrConflict", err)
	}
	got, v, err = s.LoadControl(c, room)
	if err != nil || v != v2 {
		t.Fatalf("LoadControl = version %d, %v; want %d", v, err, v2)
	}
	same(t, got, control(20))
	if _, _, err := s.LoadControl(c, room+"-other"); !errors.Is(err, roomstate.ErrNotFound) {
		t.Fatalf("another room sees this room's control: %v", err)
	}
}

func testControlRace(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	v, err := s.SaveControl(c, room, control(1), 0)
	if err != nil {
		t.Fatal(err)
	}
	const racers = 16
	var wins, conflicts int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.SaveControl(c, room, control(float64(100+i)), v)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, roomstate.ErrConflict):
				conflicts++
			default:
				t.Errorf("racer %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || conflicts != racers-1 {
		t.Fatalf("%d wins and %d conflicts from %d racers on one version, want 1 and %d", wins, conflicts, racers, racers-1)
	}
}

func testLedger(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	until := T0.Add(time.Hour)
	if used, err := used(c, s, room, "w1", T0); err != nil || used {
		t.Fatalf("Used of a fresh id = %v, %v", used, err)
	}
	if ok, err := Consume(c, s, room, "w1", until, T0); err != nil || !ok {
		t.Fatalf("first Consume = %v, %v; want true", ok, err)
	}
	if ok, err := Consume(c, s, room, "w1", until, T0.Add(time.Second)); err != nil || ok {
		t.Fatalf("second Consume = %v, %v; want false", ok, err)
	}
	if used, err := used(c, s, room, "w1", T0); err != nil || !used {
		t.Fatalf("Used after Consume = %v, %v", used, err)
	}
	if ok, err := Consume(c, s, room+"-other", "w1", until, T0); err != nil || !ok {
		t.Fatalf("the same id in another room = %v, %v; want true", ok, err)
	}
	if err := s.ReleasePlace(c, room, "w1"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if used, err := used(c, s, room, "w1", T0); err != nil || used {
		t.Fatalf("Used after Release = %v, %v", used, err)
	}
	if ok, err := Consume(c, s, room, "w1", until, T0); err != nil || !ok {
		t.Fatalf("Consume after Release = %v, %v; want true", ok, err)
	}
	if err := s.ReleasePlace(c, room, "never-consumed"); err != nil {
		t.Fatalf("Release of an unknown id: %v", err)
	}
}

func testLedgerExpiry(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	until := T0.Add(time.Minute)
	if ok, err := Consume(c, s, room, "w", until, T0); err != nil || !ok {
		t.Fatalf("Consume = %v, %v", ok, err)
	}
	if used, err := used(c, s, room, "w", until.Add(-time.Millisecond)); err != nil || !used {
		t.Fatalf("Used just before expiry = %v, %v", used, err)
	}
	after := until.Add(time.Second)
	if used, err := used(c, s, room, "w", after); err != nil || used {
		t.Fatalf("Used after expiry = %v, %v", used, err)
	}
	if ok, err := Consume(c, s, room, "w", after.Add(time.Minute), after); err != nil || !ok {
		t.Fatalf("Consume after expiry = %v, %v; want true", ok, err)
	}
	if ok, err := Consume(c, s, room, "w", after.Add(time.Minute), after); err != nil || ok {
		t.Fatalf("Consume of the renewed id = %v, %v; want false", ok, err)
	}
}

func testLedgerRace(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	const ids, racers = 20, 16
	for i := range ids {
		id := fmt.Sprintf("raced-%d", i)
		wins := race(t, racers, func() (bool, error) {
			return Consume(c, s, room, id, T0.Add(time.Hour), T0)
		})
		if wins != 1 {
			t.Fatalf("%s consumed %d times by %d racers, want once", id, wins, racers)
		}
	}
}

// Consume holds a place as used outright: a one-step admission.
func Consume(c context.Context, s roomstate.Store, room, id string, until, now time.Time) (bool, error) {
	_, won, err := s.HoldPlace(c, room, id, queue.Place{State: queue.PlaceUsed}, until, now)
	return won, err
}

func used(c context.Context, s roomstate.Store, room, id string, now time.Time) (bool, error) {
	p, err := s.LookupPlace(c, room, id, now)
	return p.State == queue.PlaceUsed, err
}

func testPlaceHoldUse(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	until := T0.Add(time.Hour)
	slot := T0.Add(1500 * time.Millisecond)
	reserved := queue.Place{State: queue.PlaceReserved, Slot: slot}
	if p, err := s.LookupPlace(c, room, "p", T0); err != nil || p.State != queue.PlaceWaiting {
		t.Fatalf("LookupPlace of a new place = %+v, %v; want waiting", p, err)
	}
	if ok, err := s.UsePlace(c, room, "p", queue.Place{}, T0); err != nil || ok {
		t.Fatalf("UsePlace of a waiting place = %v, %v; want false", ok, err)
	}
	if got, won, err := s.HoldPlace(c, room, "p", reserved, until, T0); err != nil || !won || got != reserved {
		t.Fatalf("HoldPlace = %+v, %v, %v; want the reservation, won", got, won, err)
	}
	p, err := s.LookupPlace(c, room, "p", T0)
	if err != nil || p.State != queue.PlaceReserved || !p.Slot.Equal(slot) {
		t.Fatalf("LookupPlace = %+v, %v; want reserved with slot %v", p, err, slot)
	}
	other := queue.Place{State: queue.PlaceReserved, Slot: slot.Add(time.Second)}
	if got, won, err := s.HoldPlace(c, room, "p", other, until, T0); err != nil || won || got.State != queue.PlaceReserved || !got.Slot.Equal(slot) {
		t.Fatalf("second HoldPlace = %+v, %v, %v; want the standing reservation, lost", got, won, err)
	}
	if ok, err := s.UsePlace(c, room, "p", queue.Place{}, T0); err != nil || !ok {
		t.Fatalf("UsePlace of a reserved place = %v, %v; want true", ok, err)
	}
	if ok, err := s.UsePlace(c, room, "p", queue.Place{}, T0); err != nil || ok {
		t.Fatalf("UsePlace of a used place = %v, %v; want false", ok, err)
	}
	if got, won, err := s.HoldPlace(c, room, "p", reserved, until, T0); err != nil || won || got.State != queue.PlaceUsed {
		t.Fatalf("HoldPlace of a used place = %+v, %v, %v; want used, lost", got, won, err)
	}
	if used, err := used(c, s, room, "p", until.Add(-time.Second)); err != nil || !used {
		t.Fatalf("the used place's expiry changed: used = %v, %v", used, err)
	}
	if ok, err := s.UsePlace(c, room, "q", queue.Place{}, T0); err != nil || ok {
		t.Fatalf("UsePlace of an unknown place = %v, %v", ok, err)
	}
	if _, _, err := s.HoldPlace(c, room, "late", reserved, T0.Add(time.Second), T0); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.UsePlace(c, room, "late", queue.Place{}, T0.Add(2*time.Second)); err != nil || ok {
		t.Fatalf("UsePlace of an expired reservation = %v, %v; want false", ok, err)
	}
}

// testPlaceLapse: a place still holding the slot it is lapsed for, unused
// and unexpired, reads lapsed with that slot, and a hold replaces it (of
// holds raced, exactly one); any other record stands.
func testPlaceLapse(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	until := T0.Add(time.Hour)
	slot := T0.Add(1500 * time.Millisecond)
	reserved := queue.Place{State: queue.PlaceReserved, Slot: slot}
	charged := queue.Place{State: queue.PlaceReserved, Slot: slot, Charged: slot.Add(2 * time.Second)}
	tests := []struct {
		name   string
		held   *queue.Place // nil: no record
		until  time.Time
		used   bool // the place was used after its hold
		slot   time.Time
		lapsed bool
	}{
		{"reserved at the slot", &reserved, until, false, slot, true},
		{"reserved at the slot, charged another", &charged, until, false, slot, true},
		{"reserved at another slot", &reserved, until, false, slot.Add(time.Millisecond), false},
		{"used", &reserved, until, true, slot, false},
		{"used outright", &queue.Place{State: queue.PlaceUsed}, until, false, time.Time{}, false},
		{"expired", &reserved, T0.Add(time.Second), false, slot, false},
		{"unknown", nil, until, false, slot, false},
	}
	now := T0.Add(2 * time.Second)
	for i, tt := range tests {
		id := fmt.Sprintf("lapse-%d", i)
		if tt.held != nil {
			if _, won, err := s.HoldPlace(c, room, id, *tt.held, tt.until, T0); err != nil || !won {
				t.Fatalf("%s: HoldPlace = %v, %v", tt.name, won, err)
			}
		}
		if tt.used {
			if ok, err := s.UsePlace(c, room, id, queue.Place{By: "v1"}, T0); err != nil || !ok {
				t.Fatalf("%s: UsePlace = %v, %v", tt.name, ok, err)
			}
		}
		before, err := s.LookupPlace(c, room, id, now)
		if err != nil {
			t.Fatal(err)
		}
		lapsed, err := s.LapsePlace(c, room, id, tt.slot, now)
		if err != nil || lapsed != tt.lapsed {
			t.Fatalf("%s: LapsePlace = %v, %v; want %v", tt.name, lapsed, err, tt.lapsed)
		}
		after, err := s.LookupPlace(c, room, id, now)
		switch {
		case err != nil:
			t.Fatal(err)
		case tt.lapsed && (after != queue.Place{State: queue.PlaceLapsed, Slot: slot}):
			t.Fatalf("%s: lapsed, the place reads %+v, want lapsed at %v", tt.name, after, slot)
		case !tt.lapsed && after != before:
			t.Fatalf("%s: not lapsed, the place reads %+v, want %+v as before", tt.name, after, before)
		}
		if !tt.lapsed {
			continue
		}
		if ok, err := s.UsePlace(c, room, id, queue.Place{By: "v1"}, now); err != nil || ok {
			t.Fatalf("%s: UsePlace of a lapsed place = %v, %v; want false", tt.name, ok, err)
		}
		again := queue.Place{State: queue.PlaceReserved, Slot: slot.Add(5 * time.Second)}
		wins := race(t, 8, func() (bool, error) {
			_, won, err := s.HoldPlace(c, room, id, again, until, now)
			return won, err
		})
		if wins != 1 {
			t.Fatalf("%s: %d of 8 holds raced over the lapsed place won, want one", tt.name, wins)
		}
		if p, err := s.LookupPlace(c, room, id, now); err != nil || p != again {
			t.Fatalf("%s: held again after its lapse, the place reads %+v, %v; want %+v", tt.name, p, err, again)
		}
	}
}

// testPlaceRacedLapseAndUse: of a lapse and a use of one reservation raced,
// exactly one wins, and the place reads as the winner left it.
func testPlaceRacedLapseAndUse(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	slot := T0.Add(time.Second)
	for i := range 20 {
		id := fmt.Sprintf("raced-lapse-%d", i)
		if _, won, err := s.HoldPlace(c, room, id, queue.Place{State: queue.PlaceReserved, Slot: slot}, T0.Add(time.Hour), T0); err != nil || !won {
			t.Fatalf("HoldPlace = %v, %v", won, err)
		}
		var usedOK, lapsedOK bool
		var useErr, lapseErr error
		var wg sync.WaitGroup
		wg.Go(func() { usedOK, useErr = s.UsePlace(c, room, id, queue.Place{By: "v1"}, T0.Add(2*time.Second)) })
		wg.Go(func() { lapsedOK, lapseErr = s.LapsePlace(c, room, id, slot, T0.Add(2*time.Second)) })
		wg.Wait()
		if useErr != nil || lapseErr != nil {
			t.Fatalf("use: %v; lapse: %v", useErr, lapseErr)
		}
		if usedOK == lapsedOK {
			t.Fatalf("%s: used %v, lapsed %v; want exactly one", id, usedOK, lapsedOK)
		}
		p, err := s.LookupPlace(c, room, id, T0.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]queue.PlaceState{true: queue.PlaceUsed, false: queue.PlaceLapsed}[usedOK]; p.State != want {
			t.Fatalf("%s: used %v, the place reads %+v", id, usedOK, p)
		}
	}
}

// testPlaceCharged: a reserved place keeps the slot whose admission it
// was charged when that is not its slot, so a refusal on any node gives
// back that slot's; using the place drops it, and a reservation charged
// its own slot reads without one.
func testPlaceCharged(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	until := T0.Add(time.Hour)
	for _, tt := range []struct {
		name string
		p    queue.Place
	}{
		{"charged a later slot", queue.Place{State: queue.PlaceReserved, Slot: T0.Add(time.Second), Charged: T0.Add(61500 * time.Millisecond)}},
		{"charged its own slot", queue.Place{State: queue.PlaceReserved, Slot: T0.Add(time.Second)}},
	} {
		if got, won, err := s.HoldPlace(c, room, tt.name, tt.p, until, T0); err != nil || !won || got != tt.p {
			t.Fatalf("%s: HoldPlace = %+v, %v, %v; want it, won", tt.name, got, won, err)
		}
		p, err := s.LookupPlace(c, room, tt.name, T0)
		if err != nil || p.State != queue.PlaceReserved || !p.Slot.Equal(tt.p.Slot) || !p.Charged.Equal(tt.p.Charged) {
			t.Fatalf("%s: LookupPlace = %+v, %v; want %+v", tt.name, p, err, tt.p)
		}
		use := queue.Place{State: queue.PlaceUsed, By: "token", Pass: "pass", At: T0.Add(time.Second)}
		if ok, err := s.UsePlace(c, room, tt.name, use, T0.Add(time.Second)); err != nil || !ok {
			t.Fatalf("%s: UsePlace = %v, %v", tt.name, ok, err)
		}
		if p, err := s.LookupPlace(c, room, tt.name, T0.Add(time.Second)); err != nil || p.State != queue.PlaceUsed || !p.Charged.IsZero() || p.Pass != use.Pass {
			t.Fatalf("%s: used, LookupPlace = %+v, %v; want used, no charged slot", tt.name, p, err)
		}
	}
}

// testPlaceUsedBy: a used place keeps who used it and the pass they were
// given, held outright or used from a reservation, so the same token's
// retry can be answered with the same pass; a record without them reads
// without them.
func testPlaceUsedBy(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	until := T0.Add(time.Hour)
	at := T0.Add(1234567 * time.Nanosecond)
	first := queue.Place{State: queue.PlaceUsed, By: "digest-of-token-v3", Pass: "0190e0aa-pass-id", At: at}
	if got, won, err := s.HoldPlace(c, room, "held", first, until, T0); err != nil || !won || got != first {
		t.Fatalf("HoldPlace(used by) = %+v, %v, %v; want it, won", got, won, err)
	}
	if p, err := s.LookupPlace(c, room, "held", T0); err != nil || p.State != queue.PlaceUsed || p.By != first.By || p.Pass != first.Pass || !p.At.Equal(at) {
		t.Fatalf("LookupPlace = %+v, %v; want %+v", p, err, first)
	}
	// A second hold (another version of the token) gets the record that
	// stands, with who used it.
	other := queue.Place{State: queue.PlaceUsed, By: "digest-of-token-v4", Pass: "another", At: at.Add(time.Second)}
	if got, won, err := s.HoldPlace(c, room, "held", other, until, T0); err != nil || won || got.By != first.By || got.Pass != first.Pass || !got.At.Equal(at) {
		t.Fatalf("second HoldPlace = %+v, %v, %v; want %+v, lost", got, won, err, first)
	}

	reserved := queue.Place{State: queue.PlaceReserved, Slot: T0.Add(time.Second)}
	if _, won, err := s.HoldPlace(c, room, "slot", reserved, until, T0); err != nil || !won {
		t.Fatalf("HoldPlace(reserved) = %v, %v", won, err)
	}
	if p, err := s.LookupPlace(c, room, "slot", T0); err != nil || p.By != "" || p.Pass != "" || !p.At.IsZero() {
		t.Fatalf("a reservation reads %+v, %v; want no user", p, err)
	}
	use := queue.Place{State: queue.PlaceUsed, By: "slot-token", Pass: "slot-pass", At: T0.Add(time.Second)}
	if ok, err := s.UsePlace(c, room, "slot", use, T0.Add(time.Second)); err != nil || !ok {
		t.Fatalf("UsePlace = %v, %v", ok, err)
	}
	p, err := s.LookupPlace(c, room, "slot", T0.Add(time.Second))
	if err != nil || p.State != queue.PlaceUsed || p.By != use.By || p.Pass != use.Pass || !p.At.Equal(use.At) || !p.Slot.IsZero() {
		t.Fatalf("LookupPlace after UsePlace = %+v, %v; want %+v", p, err, use)
	}
	if ok, err := s.UsePlace(c, room, "slot", queue.Place{State: queue.PlaceUsed, By: "x", Pass: "y"}, T0.Add(time.Second)); err != nil || ok {
		t.Fatalf("a second UsePlace = %v, %v; want false", ok, err)
	}
	if p, err := s.LookupPlace(c, room, "slot", T0.Add(time.Second)); err != nil || p.By != use.By || p.Pass != use.Pass {
		t.Fatalf("a lost UsePlace changed who used the place: %+v, %v", p, err)
	}
	// Without a user (a record of an earlier version): none read back.
	if _, err := Consume(c, s, room, "plain", until, T0); err != nil {
		t.Fatal(err)
	}
	if p, err := s.LookupPlace(c, room, "plain", T0); err != nil || p.State != queue.PlaceUsed || p.By != "" || p.Pass != "" || !p.At.IsZero() {
		t.Fatalf("a plain used place reads %+v, %v", p, err)
	}
}

func testPlaceRacedUse(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	const places, racers = 10, 16
	for i := range places {
		id := fmt.Sprintf("reserved-%d", i)
		if _, won, err := s.HoldPlace(c, room, id, queue.Place{State: queue.PlaceReserved, Slot: T0}, T0.Add(time.Hour), T0); err != nil || !won {
			t.Fatalf("HoldPlace(%s) = %v, %v", id, won, err)
		}
		wins := race(t, racers, func() (bool, error) {
			return s.UsePlace(c, room, id, queue.Place{}, T0)
		})
		if wins != 1 {
			t.Fatalf("%s used %d times by %d racers, want once", id, wins, racers)
		}
	}
}

// race runs try from racers goroutines at once and counts how many won;
// an error fails the test.
func race(t *testing.T, racers int, try func() (bool, error)) int {
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range racers {
		wg.Go(func() {
			won, err := try()
			if err != nil {
				t.Errorf("raced call: %v", err)
			}
			if won {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	return int(wins.Load())
}

func window(idx, limit int64) roomstate.Window {
	return roomstate.Window{Index: idx, Limit: limit, Expires: T0.Add(time.Hour)}
}

func testBudgetRace(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	const limit, nodes, block = 100, 8, 7
	w := window(1, limit)
	granted := make([]int64, nodes)
	places := make([][]int64, nodes) // the places in the window's order each node was granted
	var wg sync.WaitGroup
	for n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				g, err := s.ReserveBudget(c, room, w, block)
				if err != nil {
					t.Errorf("node %d: %v", n, err)
					return
				}
				if g.N < 0 || g.N > block {
					t.Errorf("node %d got %d of a block of %d", n, g.N, block)
					return
				}
				if g.N == 0 {
					return
				}
				granted[n] += g.N
				for i := range g.N {
					places[n] = append(places[n], g.First+i)
				}
			}
		}()
	}
	wg.Wait()
	var total int64
	for _, g := range granted {
		total += g
	}
	if total != limit {
		t.Fatalf("racing nodes reserved %d of a window of %d (per node %v)", total, limit, granted)
	}
	seen := make(map[int64]int)
	for n, ps := range places {
		for _, p := range ps {
			if p < 0 || p >= limit {
				t.Fatalf("node %d was granted place %d of a window of %d", n, p, limit)
			}
			if other, dup := seen[p]; dup {
				t.Fatalf("place %d in the window's order granted to nodes %d and %d", p, other, n)
			}
			seen[p] = n
		}
	}
	if g, err := s.ReserveBudget(c, room, window(2, 3), block); err != nil || g.N != 3 || g.First != 0 {
		t.Fatalf("the next window granted %+v, %v; want its own limit 3 from place 0", g, err)
	}
	if g, err := s.ReserveBudget(c, room+"-other", w, block); err != nil || g.N != block || g.First != 0 {
		t.Fatalf("another room's window granted %+v, %v; want %d from place 0", g, err, block)
	}
}

// testBudgetReturn: admissions returned unspent from the window's end
// are granted again at their places; returned from below it (another
// grant came after theirs), at places of their own after every place it
// granted, as lapsed ones are.
func testBudgetReturn(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	w := window(7, 10)
	for i, step := range []struct {
		give, top int64 // returned before the reservation, from below top
		ask       int64
		want      roomstate.Grant
	}{
		{ask: 8, want: roomstate.Grant{N: 8}},
		{ask: 8, want: roomstate.Grant{N: 2, First: 8}},
		{give: 5, top: 10, ask: 8, want: roomstate.Grant{N: 5, First: 5}},
		{ask: 1, want: roomstate.Grant{First: 10}},
		// Places 7–9 were granted after 4–6: 4–6 come back after them.
		{give: 3, top: 7, ask: 8, want: roomstate.Grant{N: 3, First: 10, Lapsed: 3}},
		// The window ends at 13 again, with 3 lapsed: in place.
		{give: 2, top: 13, ask: 8, want: roomstate.Grant{N: 2, First: 11, Lapsed: 3}},
	} {
		if step.give > 0 {
			if err := s.ReturnBudget(c, room, w, step.give, step.top); err != nil {
				t.Fatalf("step %d: ReturnBudget: %v", i, err)
			}
		}
		if g, err := s.ReserveBudget(c, room, w, step.ask); err != nil || g != step.want {
			t.Fatalf("step %d: ReserveBudget(%d) after returning %d below %d = %+v, %v; want %+v", i, step.ask, step.give, step.top, g, err, step.want)
		}
	}
	if err := s.ReturnBudget(c, room, window(8, 10), 1, 1); err != nil {
		t.Fatalf("ReturnBudget to a window never granted: %v", err)
	}
	if g, err := s.ReserveBudget(c, room, window(8, 10), 10); err != nil || g != (roomstate.Grant{N: 10}) {
		t.Fatalf("a window returned to before any grant granted %+v, %v; want its limit from place 0", g, err)
	}
}

// testBudgetReturnLapsed: admissions returned lapsed are granted again at
// places of their own after every place the window granted, unlike those
// returned unspent, and the window says how many came back; a window takes
// back no more than it granted, and says how many it took.
func testBudgetReturnLapsed(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	w := window(11, 4)
	for i, step := range []struct {
		lapsed, unspent int64 // returned before the reservation
		taken           int64 // of the lapsed
		ask             int64
		want            roomstate.Grant
	}{
		{ask: 3, want: roomstate.Grant{N: 3}},
		// Places 0–2 granted: the lapsed one comes back as place 3.
		{lapsed: 1, taken: 1, ask: 4, want: roomstate.Grant{N: 2, First: 3, Lapsed: 1}},
		// Place 4, the window's last, returned unspent: granted again.
		{unspent: 1, ask: 4, want: roomstate.Grant{N: 1, First: 4, Lapsed: 1}},
		// 9 returned to a window with 4 granted: it takes 4.
		{lapsed: 9, taken: 4, ask: 1, want: roomstate.Grant{N: 1, First: 5, Lapsed: 5}},
	} {
		if step.lapsed > 0 {
			if taken, err := s.ReturnLapsed(c, room, w, step.lapsed); err != nil || taken != step.taken {
				t.Fatalf("step %d: ReturnLapsed(%d) = %d, %v; want %d taken", i, step.lapsed, taken, err, step.taken)
			}
		}
		if step.unspent > 0 {
			if err := s.ReturnBudget(c, room, w, step.unspent, 5); err != nil {
				t.Fatalf("step %d: ReturnBudget: %v", i, err)
			}
		}
		if g, err := s.ReserveBudget(c, room, w, step.ask); err != nil || g != step.want {
			t.Fatalf("step %d: ReserveBudget(%d) = %+v, %v; want %+v", i, step.ask, g, err, step.want)
		}
	}
	if taken, err := s.ReturnLapsed(c, room, window(12, 4), 1); err != nil || taken != 0 {
		t.Fatalf("ReturnLapsed to a window never granted = %d, %v; want none taken", taken, err)
	}
	if g, err := s.ReserveBudget(c, room, window(12, 4), 5); err != nil || g != (roomstate.Grant{N: 4}) {
		t.Fatalf("a window returned to before any grant granted %+v, %v; want its limit from place 0", g, err)
	}
}

// testBudgetAhead: a reservation made ahead of its window and granted
// marks the window, for every later grant there, whatever is returned; one
// that finds the window spent does not.
func testBudgetAhead(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	w, ahead := window(9, 4), window(9, 4)
	ahead.Ahead = true
	for i, step := range []struct {
		w         roomstate.Window
		ask, give int64 // give: returned after the reservation
		want      roomstate.Grant
	}{
		{w: w, ask: 1, want: roomstate.Grant{N: 1}},
		{w: ahead, ask: 1, want: roomstate.Grant{N: 1, First: 1, Ahead: true}},
		{w: w, ask: 1, give: 1, want: roomstate.Grant{N: 1, First: 2, Ahead: true}},
		{w: w, ask: 1, want: roomstate.Grant{N: 1, First: 2, Ahead: true}},
	} {
		g, err := s.ReserveBudget(c, room, step.w, step.ask)
		if err != nil || g != step.want {
			t.Fatalf("step %d: ReserveBudget = %+v, %v; want %+v", i, g, err, step.want)
		}
		if step.give > 0 {
			if err := s.ReturnBudget(c, room, step.w, step.give, g.First+g.N); err != nil {
				t.Fatal(err)
			}
		}
	}
	spent, spentAhead := window(10, 2), window(10, 2)
	spentAhead.Ahead = true
	if g, err := s.ReserveBudget(c, room, spent, 2); err != nil || g != (roomstate.Grant{N: 2}) {
		t.Fatalf("ReserveBudget = %+v, %v; want 2, not ahead", g, err)
	}
	if g, err := s.ReserveBudget(c, room, spentAhead, 1); err != nil || g != (roomstate.Grant{First: 2}) {
		t.Fatalf("ReserveBudget ahead in a spent window = %+v, %v; want none, not marked", g, err)
	}
	if g, err := s.ReserveBudget(c, room, spent, 1); err != nil || g != (roomstate.Grant{First: 2}) {
		t.Fatalf("ReserveBudget in a spent window asked ahead = %+v, %v; want none, not ahead", g, err)
	}
}

// testBudgetAllocators races nodes' Budget allocators, the way gateways use
// the store: together they admit exactly the window's limit.
func testBudgetAllocators(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	const nodes, rate = 3, 50.0
	now := T0.Add(250 * time.Millisecond)
	var admitted int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for n := range nodes {
		b, err := roomstate.NewBudget(s, room, 4, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ok, err := b.Take(c, now, rate)
				if err != nil {
					t.Errorf("node %d: %v", n, err)
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if admitted != rate {
		t.Fatalf("%d nodes admitted %d in a one-second window at %v/s", nodes, admitted, rate)
	}
}

func testPopulation(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	until := T0.Add(10 * time.Second)
	if sum, nodes, err := s.Population(c, room, T0); err != nil || sum != 0 || nodes != 0 {
		t.Fatalf("Population of a new room = %v over %d nodes, %v", sum, nodes, err)
	}
	for node, v := range map[string]float64{"a": 1.5, "b": 2.5, "c": 3} {
		u := until
		if node == "c" {
			u = T0.Add(time.Second)
		}
		if err := s.PublishPopulation(c, room, node, v, u); err != nil {
			t.Fatalf("PublishPopulation(%s): %v", node, err)
		}
	}
	if sum, nodes, err := s.Population(c, room, T0); err != nil || sum != 7 || nodes != 3 {
		t.Fatalf("Population = %v over %d nodes, %v; want 7 over 3", sum, nodes, err)
	}
	if err := s.PublishPopulation(c, room, "a", 0.5, until); err != nil {
		t.Fatal(err)
	}
	if sum, nodes, err := s.Population(c, room, T0); err != nil || sum != 6 || nodes != 3 {
		t.Fatalf("Population after a node republished = %v over %d nodes, %v; want 6 over 3", sum, nodes, err)
	}
	if sum, nodes, err := s.Population(c, room, T0.Add(2*time.Second)); err != nil || sum != 3 || nodes != 2 {
		t.Fatalf("Population after c's item expired = %v over %d nodes, %v; want 3 over 2", sum, nodes, err)
	}
	if sum, _, err := s.Population(c, room+"-other", T0); err != nil || sum != 0 {
		t.Fatalf("another room sees this room's population: %v, %v", sum, err)
	}
}

func testSketches(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	until := T0.Add(10 * time.Second)
	if got, err := s.Sketches(c, room, T0); err != nil || len(got) != 0 {
		t.Fatalf("Sketches of a new room = %q, %v", got, err)
	}
	big := bytes.Repeat([]byte{0, 1, 2, 3}, 2100) // a queue.Sketch is about 8 KB
	for node, sk := range map[string][]byte{"a": []byte("a1"), "b": big, "c": []byte("c1")} {
		u := until
		if node == "c" {
			u = T0.Add(time.Second)
		}
		if err := s.PublishSketch(c, room, node, sk, u); err != nil {
			t.Fatalf("PublishSketch(%s): %v", node, err)
		}
	}
	want := func(at time.Time, sketches ...[]byte) {
		t.Helper()
		got, err := s.Sketches(c, room, at)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(got, bytes.Compare)
		slices.SortFunc(sketches, bytes.Compare)
		if !slices.EqualFunc(got, sketches, bytes.Equal) {
			t.Fatalf("Sketches at %v = %d sketches %q..., want %d", at.Sub(T0), len(got), firstBytes(got), len(sketches))
		}
	}
	want(T0, []byte("a1"), big, []byte("c1"))
	if err := s.PublishSketch(c, room, "a", []byte("a2"), until); err != nil {
		t.Fatal(err)
	}
	want(T0, []byte("a2"), big, []byte("c1"))
	want(T0.Add(2*time.Second), []byte("a2"), big)
	if got, err := s.Sketches(c, room+"-other", T0); err != nil || len(got) != 0 {
		t.Fatalf("another room sees this room's sketches: %d, %v", len(got), err)
	}
}

// firstBytes is each sketch's first bytes, for a failure's message.
func firstBytes(sketches [][]byte) []string {
	var out []string
	for _, sk := range sketches {
		out = append(out, string(sk[:min(len(sk), 4)]))
	}
	return out
}

func testRanks(t *testing.T, s roomstate.Store, room string) {
	c := ctx(t)
	const nodes, blocks, size = 8, 10, 5
	firsts := make([][]int64, nodes)
	var wg sync.WaitGroup
	for n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range blocks {
				first, err := s.ReserveRanks(c, room, size)
				if err != nil {
					t.Errorf("node %d: %v", n, err)
					return
				}
				firsts[n] = append(firsts[n], first)
			}
		}()
	}
	wg.Wait()
	var all []int64
	for n, list := range firsts {
		if !slices.IsSorted(list) {
			t.Errorf("node %d's blocks are not increasing: %v", n, list)
		}
		all = append(all, list...)
	}
	slices.Sort(all)
	for i, first := range all {
		if want := all[0] + int64(i)*size; first != want {
			t.Fatalf("blocks overlap or leave gaps: block %d starts at %d, want %d (all %v)", i, first, want, all)
		}
	}
	next, err := s.ReserveRanks(c, room, 1)
	if err != nil || next != all[len(all)-1]+size {
		t.Fatalf("the next block starts at %d, %v; want %d", next, err, all[len(all)-1]+size)
	}
	r, err := roomstate.NewRanks(s, room, 3)
	if err != nil {
		t.Fatal(err)
	}
	prev := next
	for range 7 {
		rank, err := r.Next(c, time.Time{})
		if err != nil || rank <= prev {
			t.Fatalf("Ranks.Next = %d, %v after %d", rank, err, prev)
		}
		prev = rank
	}
}

func testCancelled(t *testing.T, s roomstate.Store, room string) {
	c, cancel := context.WithCancel(context.Background())
	cancel()
	calls := map[string]func() error{
		"LoadControl": func() error { _, _, err := s.LoadControl(c, room); return err },
		"SaveControl": func() error { _, err := s.SaveControl(c, room, control(1), 0); return err },
		"ReserveBudget": func() error {
			_, err := s.ReserveBudget(c, room, window(1, 10), 1)
			return err
		},
		"HoldPlace":         func() error { _, err := Consume(c, s, room, "w", T0.Add(time.Hour), T0); return err },
		"PublishPopulation": func() error { return s.PublishPopulation(c, room, "a", 1, T0.Add(time.Hour)) },
		"ReserveRanks":      func() error { _, err := s.ReserveRanks(c, room, 1); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", name, err)
		}
	}
}
