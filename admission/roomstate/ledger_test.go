package roomstate_test

import (
	"context"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/storetest"
)

// TestLedgerIsTheRoomsLedger drives the queue.Ledger adapter through a
// place's life, and shows two nodes (two ledgers on one store) agreeing.
func TestLedgerIsTheRoomsLedger(t *testing.T) {
	s := openBolt(t)
	now := storetest.T0
	clock := func() time.Time { return now }
	var node1, node2 queue.Ledger = roomstate.NewLedger(s, "r", clock), roomstate.NewLedger(s, "r", clock)
	ctx := context.Background()
	until := now.Add(time.Minute)
	reserved := queue.Place{State: queue.PlaceReserved, Slot: now.Add(time.Second)}
	if _, won, err := node1.Hold(ctx, "p", reserved, until); err != nil || !won {
		t.Fatalf("node 1 Hold = %v, %v", won, err)
	}
	if got, won, err := node2.Hold(ctx, "p", reserved, until); err != nil || won || got.State != queue.PlaceReserved {
		t.Fatalf("node 2 Hold of node 1's place = %+v, %v, %v; want the standing reservation", got, won, err)
	}
	if ok, err := node2.Use(ctx, "p", queue.Place{}); err != nil || !ok {
		t.Fatalf("node 2 Use = %v, %v", ok, err)
	}
	if ok, err := node1.Use(ctx, "p", queue.Place{}); err != nil || ok {
		t.Fatalf("node 1 Use of a place node 2 used = %v, %v; want false", ok, err)
	}
	if err := node1.Release(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if p, err := node2.Lookup(ctx, "p"); err != nil || p.State != queue.PlaceWaiting {
		t.Fatalf("node 2 Lookup after node 1's Release = %+v, %v", p, err)
	}
	if _, won, err := node1.Hold(ctx, "q", reserved, until); err != nil || !won {
		t.Fatal(won, err)
	}
	now = until.Add(time.Second)
	if p, err := node2.Lookup(ctx, "q"); err != nil || p.State != queue.PlaceWaiting {
		t.Fatalf("Lookup of an expired reservation = %+v, %v; want waiting", p, err)
	}
}

// TestLedgerSkipsTheStoreForUnheldPlaces: through a Guard, as the gateway
// wires it, a lookup of a place the bolt store has no record of makes no
// store call (the observer sees none), and a held one still does.
func TestLedgerSkipsTheStoreForUnheldPlaces(t *testing.T) {
	s := openBolt(t)
	now := storetest.T0
	clock := func() time.Time { return now }
	var lookups int
	g := roomstate.NewGuard(s, time.Second, clock, func(op string, _ time.Duration, _ error) {
		if op == "lookup_place" {
			lookups++
		}
	})
	l := roomstate.NewLedger(g, "r", clock)
	ctx := context.Background()
	if p, err := l.Lookup(ctx, "waiting"); err != nil || p.State != queue.PlaceWaiting || lookups != 0 {
		t.Fatalf("Lookup of an unheld place = %+v, %v with %d store calls; want waiting with none", p, err, lookups)
	}
	if _, won, err := l.Hold(ctx, "used", queue.Place{State: queue.PlaceUsed}, now.Add(time.Minute)); err != nil || !won {
		t.Fatal(won, err)
	}
	if p, err := l.Lookup(ctx, "used"); err != nil || p.State != queue.PlaceUsed || lookups != 1 {
		t.Fatalf("Lookup of a used place = %+v, %v with %d store calls; want used, from the store", p, err, lookups)
	}
}
