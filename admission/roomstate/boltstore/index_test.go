package boltstore

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/storetest"
)

// readTxs is how many read transactions the store has started.
func readTxs(s *Store) int { return s.db.Stats().TxN }

// inFile reports whether the file holds a record (live or not) of the place.
func inFile(t *testing.T, s *Store, room, id string) bool {
	t.Helper()
	var found bool
	if err := s.db.View(func(tx *bolt.Tx) error {
		found = tx.Bucket(ledgerBucket).Get(subKey(room, id)) != nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

// TestLookupOfUnheldPlaceReadsNothing pins what the admit poll relies on:
// a place never admitted or slotted is answered from memory, with no read
// transaction, and every place held is still read from the file — before
// and after a restart, a release and a sweep.
func TestLookupOfUnheldPlaceReadsNothing(t *testing.T) {
	path := dbPath(t)
	ctx := context.Background()
	t0 := storetest.T0
	s := open(t, path)
	lookup := func(id string, want queue.PlaceState, wantReads int) {
		t.Helper()
		before := readTxs(s)
		p, err := s.LookupPlace(ctx, "r", id, t0)
		if err != nil || p.State != want {
			t.Fatalf("LookupPlace(%s) = %+v, %v; want state %d", id, p, err, want)
		}
		if got := readTxs(s) - before; got != wantReads {
			t.Fatalf("LookupPlace(%s) started %d read transactions, want %d", id, got, wantReads)
		}
		if got := roomstate.MayHoldPlace(s, "r", id); got != (wantReads > 0) {
			t.Fatalf("MayHoldPlace(%s) = %v, want %v", id, got, wantReads > 0)
		}
	}
	lookup("never", queue.PlaceWaiting, 0)
	if ok, err := storetest.Consume(ctx, s, "r", "used", t0.Add(time.Hour), t0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, err := s.HoldPlace(ctx, "r", "slot", queue.Place{State: queue.PlaceReserved, Slot: t0.Add(time.Second)}, t0.Add(time.Hour), t0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ok, err := storetest.Consume(ctx, s, "r", "old", t0.Add(time.Second), t0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	lookup("used", queue.PlaceUsed, 1)
	lookup("slot", queue.PlaceReserved, 1)
	lookup("never", queue.PlaceWaiting, 0)
	// The same place id in another room is another place.
	if roomstate.MayHoldPlace(s, "other", "used") {
		t.Fatal("a place held in room r is indexed in room other")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	lookup("used", queue.PlaceUsed, 1)
	lookup("slot", queue.PlaceReserved, 1)
	lookup("never", queue.PlaceWaiting, 0)
	if err := s.ReleasePlace(ctx, "r", "slot"); err != nil {
		t.Fatal(err)
	}
	lookup("slot", queue.PlaceWaiting, 0)
	if n, err := s.Sweep(ctx, t0.Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want the one expired place", n, err)
	}
	if roomstate.MayHoldPlace(s, "r", "old") {
		t.Fatal("a swept place is still indexed")
	}
	lookup("used", queue.PlaceUsed, 1)
}

// TestPlaceIndexNeverMissesARecord races holds, uses, releases, sweeps and
// lookups on a few places, then checks the one rule the index must keep:
// a place it says the file cannot hold is not in the file.
func TestPlaceIndexNeverMissesARecord(t *testing.T) {
	s := open(t, dbPath(t))
	defer s.Close()
	ctx := context.Background()
	t0 := storetest.T0
	ids := []string{"a", "b", "c", "d"}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range 150 {
				id := ids[rng.IntN(len(ids))]
				// Some records expire at once, so the sweeps delete them.
				until := t0.Add(time.Duration(rng.IntN(2)) * time.Hour)
				var err error
				switch rng.IntN(5) {
				case 0:
					_, _, err = s.HoldPlace(ctx, "r", id, queue.Place{State: queue.PlaceReserved, Slot: t0}, until, t0.Add(-time.Second))
				case 1:
					_, err = s.UsePlace(ctx, "r", id, queue.Place{}, t0.Add(-time.Second))
				case 2:
					err = s.ReleasePlace(ctx, "r", id)
				case 3:
					_, err = s.Sweep(ctx, t0)
				default:
					_, err = s.LookupPlace(ctx, "r", id, t0)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if !roomstate.MayHoldPlace(s, "r", id) && inFile(t, s, "r", id) {
			t.Fatalf("place %s is in the file but the index says it cannot be", id)
		}
	}
	// And the index forgets: after a sweep at the end of time, nothing.
	if _, err := s.Sweep(ctx, t0.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if roomstate.MayHoldPlace(s, "r", id) {
			t.Fatalf("place %s still indexed after every record was swept", id)
		}
	}
}

// TestPlaceIndexKeepsAKeyWrittenDuringADelete is the ordering the race
// above may miss: a delete that commits while a put of the same place is
// in flight must not drop the key, or the put would land unindexed.
func TestPlaceIndexKeepsAKeyWrittenDuringADelete(t *testing.T) {
	x := newPlaceIndex()
	done := x.write("r", "p")
	x.deleted(placeKey{"r", "p"}) // a release or sweep committed meanwhile
	if !x.mayHold("r", "p") {
		t.Fatal("a delete dropped a key while a put of it was in flight")
	}
	done()
	if !x.mayHold("r", "p") {
		t.Fatal("the key of a finished put is gone")
	}
	x.deleted(placeKey{"r", "p"})
	if x.mayHold("r", "p") {
		t.Fatal("a delete with no put in flight kept the key")
	}
	if len(x.writing) != 0 {
		t.Fatalf("writes in flight left behind: %v", x.writing)
	}
}
