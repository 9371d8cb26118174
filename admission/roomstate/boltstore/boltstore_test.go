package boltstore

import (
	"context"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) roomstate.Store { return open(t, dbPath(t)) })
}

func TestSweepDeletesOnlyExpired(t *testing.T) {
	s := open(t, dbPath(t))
	defer s.Close()
	ctx := context.Background()
	t0 := storetest.T0
	mustConsume := func(id string, until time.Time) {
		if ok, err := storetest.Consume(ctx, s, "r", id, until, t0); err != nil || !ok {
			t.Fatalf("Consume(%s) = %v, %v", id, ok, err)
		}
	}
	mustConsume("old", t0.Add(time.Second))
	mustConsume("live", t0.Add(time.Hour))
	if err := s.PublishPopulation(ctx, "r", "n", 1, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReserveBudget(ctx, "r", roomstate.Window{Index: 1, Limit: 5, Expires: t0.Add(time.Second)}, 2); err != nil {
		t.Fatal(err)
	}
	n, err := s.Sweep(ctx, t0.Add(time.Minute))
	if err != nil || n != 3 {
		t.Fatalf("Sweep = %d, %v; want 3 expired items deleted", n, err)
	}
	if p, err := s.LookupPlace(ctx, "r", "live", t0.Add(time.Minute)); err != nil || p.State != queue.PlaceUsed {
		t.Fatalf("Sweep dropped a live place: %+v, %v", p, err)
	}
}

// TestRestartKeepsRoomState is the single-machine promise: after a restart
// the clock, the ledger and the rank counter are where they were.
func TestRestartKeepsRoomState(t *testing.T) {
	path := dbPath(t)
	ctx := context.Background()
	t0 := storetest.T0
	s := open(t, path)
	c := roomstate.Control{State: "queue", Rate: 5, Burst: 1, Cruise: 0.5}
	c.Clock = c.Clock.From(t0, 0.5)
	if _, err := s.SaveControl(ctx, "r", c, 0); err != nil {
		t.Fatal(err)
	}
	if ok, err := storetest.Consume(ctx, s, "r", "w", t0.Add(time.Hour), t0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	first, err := s.ReserveRanks(ctx, "r", 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	got, v, err := s.LoadControl(ctx, "r")
	if err != nil || v != 1 || got.Clock.At(t0.Add(10*time.Second)) != 5 {
		t.Fatalf("after a restart: version %d, S(t0+10s) = %v, %v; want version 1, S = 5", v, got.Clock.At(t0.Add(10*time.Second)), err)
	}
	if ok, err := storetest.Consume(ctx, s, "r", "w", t0.Add(time.Hour), t0); err != nil || ok {
		t.Fatalf("a consumed id was consumable again after a restart: %v, %v", ok, err)
	}
	if next, err := s.ReserveRanks(ctx, "r", 1); err != nil || next != first+10 {
		t.Fatalf("ranks after a restart start at %d, %v; want %d", next, err, first+10)
	}
}
