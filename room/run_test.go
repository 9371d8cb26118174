package room

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/boltstore"
)

// stallingStore is a store whose population writes wait while stall is
// set, as a slow store's would: each first one reports on stalled.
type stallingStore struct {
	roomstate.Store
	stall   atomic.Bool
	stalled chan struct{}
	release chan struct{}
}

func (s *stallingStore) PublishPopulation(ctx context.Context, key, node string, v float64, until time.Time) error {
	if s.stall.Load() {
		select {
		case s.stalled <- struct{}{}:
		default:
		}
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Store.PublishPopulation(ctx, key, node, v, until)
}

// stallingBolt is a bolt store in the test's directory, and a
// stallingStore over it.
func stallingBolt(t *testing.T) (roomstate.Store, *stallingStore) {
	t.Helper()
	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "rooms.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bolt.Close() })
	return bolt, &stallingStore{Store: bolt, stalled: make(chan struct{}, 1), release: make(chan struct{})}
}

// A node whose tick waits on a slow store still polls: it adopts another
// node's change while the tick's store calls are under way, not after
// them.
func TestAPollIsNotHeldBehindATick(t *testing.T) {
	bolt, slow := stallingBolt(t)
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	cfg := Config{Room: "sale", Rate: 5}
	a, b := joinedNode(t, cfg, "a", slow, clock), joinedNode(t, cfg, "b", bolt, clock)

	ctx, cancel := context.WithCancel(t.Context())
	polls, ticks := make(chan time.Time), make(chan time.Time)
	done := make(chan struct{})
	go func() {
		a.runClusterOn(ctx, clock, polls, ticks)
		close(done)
	}()
	slow.stall.Store(true)
	ticks <- now
	<-slow.stalled // the tick is inside a store call

	rate := 7.0
	if err := b.Apply(RoomChange{Rate: &rate}, now); err != nil {
		t.Fatal(err)
	}
	want := b.cluster.shown.Load()
	for range 2 { // the second is taken once the first poll is done
		select {
		case polls <- now:
		case <-time.After(10 * time.Second):
			t.Fatal("a poll waited behind the tick's store calls")
		}
	}
	if got := a.cluster.shown.Load(); got != want {
		t.Errorf("node a holds version %d while its tick waits, want %d (node b's change)", got, want)
	}

	slow.stall.Store(false)
	close(slow.release)
	cancel()
	<-done
}

// A poll that wants a tick (TickWanted) gets one at once, not at the next
// tick's signal: the room's rate goes unused while it waits.
func TestAWantedTickDoesNotWaitForTheNextTick(t *testing.T) {
	_, watched := stallingBolt(t)
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	a := joinedNode(t, Config{Room: "sale", Rate: 5}, "a", watched, clock)

	ctx, cancel := context.WithCancel(t.Context())
	polls := make(chan time.Time)
	done := make(chan struct{})
	go func() {
		a.runClusterOn(ctx, clock, polls, nil) // no tick signal ever comes
		close(done)
	}()
	watched.stall.Store(true) // a tick's first store write reports
	a.cluster.tickWanted.Store(true)
	polls <- now
	select {
	case <-watched.stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("a wanted tick waited for the next tick's signal")
	}
	watched.stall.Store(false)
	close(watched.release)
	cancel()
	<-done
}
