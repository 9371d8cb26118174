package boltstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/storetest"
)

// TestSweepShrinksIndex: the sweep gives back the index's memory with the
// records it deletes, so what a store holds follows the records of the
// last day, not the most it ever held; the records it keeps read back byte
// for byte, an expired key is new again, the log keeps only the kept
// records, its freed pages are reused, and a reopened store indexes the
// same keys.
func TestSweepShrinksIndex(t *testing.T) {
	const n = 30_000
	cases := []struct {
		name          string
		expired, kept int
	}{
		{"every record expired", n, 0},
		{"most records expired", n, n / 8},
		{"few records expired", n / 8, n},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, path := openNew(t)
			defer func() { s.Close() }()
			cutoff := storetest.T0.Add(seats.KeyTTL)
			base := heapAlloc()
			fillKeys(t, s, "expired-", c.expired, storetest.T0)
			fillKeys(t, s, "kept-", c.kept, cutoff) // claimed at the cutoff: kept
			full := heapAlloc() - base
			records := readKeyRecords(t, s, "kept-", c.kept)
			size := fileSize(t, path)

			if got, err := s.PurgeKeys(cutoff); err != nil || got != c.expired {
				t.Fatalf("PurgeKeys: %d %v, want %d", got, err, c.expired)
			}
			flush(t, s) // the overlay's share is the log's, not the index's
			after := heapAlloc() - base
			t.Logf("index of %d records: %d KiB; after sweeping %d: %d KiB", c.expired+c.kept, full>>10, c.expired, after>>10)
			// What is left costs at most twice its share of the peak, plus
			// what bbolt keeps of the pages freed (its freelist).
			if bound := 2*full*int64(c.kept)/int64(c.expired+c.kept) + full/4; after > bound {
				t.Errorf("after the sweep the store holds %d KiB more than when opened, want at most %d KiB (the index's memory was not given back)", after>>10, bound>>10)
			}
			if got := len(indexed(s)); got != c.kept {
				t.Errorf("index holds %d entries, want %d", got, c.kept)
			}
			checkRecords(t, s, records)
			if got := logLen(t, s); got != c.kept {
				t.Errorf("the log holds %d entries, want %d", got, c.kept)
			}
			// The sweep's freed pages hold the next day's records.
			fillKeys(t, s, "next-", c.expired, cutoff)
			if grown := fileSize(t, path); grown > size+size/4 {
				t.Errorf("refilling what was swept grew the file from %d to %d bytes", size, grown)
			}
			if c.expired > 0 {
				err := s.PutKey(context.Background(), "expired-0", seats.KeyRecord{ClaimedAt: cutoff, Status: 409})
				if err != nil {
					t.Errorf("PutKey under a swept key: %v, want it new", err)
				}
			}

			want := indexed(s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			var err error
			if s, err = Open(path); err != nil {
				t.Fatal(err)
			}
			if got := indexed(s); !sameKeys(got, want) {
				t.Errorf("reopened, the index holds %d entries, want the %d it held", len(got), len(want))
			}
			checkRecords(t, s, records)
		})
	}
}

// TestSweepDuringWrites: keyed writes committed while the sweep deletes
// and the index is rebuilt are all found, with their records, and so are
// the records the sweep keeps, read all along; the sweep deletes only
// what expired.
func TestSweepDuringWrites(t *testing.T) {
	cases := []struct {
		name                   string
		expired, kept, writers int
	}{
		{"rebuilt under writes", 8 * purgeChunk, 100, 8},
		{"one chunk swept", purgeChunk / 2, 100, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, path := openNew(t)
			defer func() { s.Close() }()
			ctx := context.Background()
			cutoff := storetest.T0.Add(seats.KeyTTL)
			fillKeys(t, s, "expired-", c.expired, storetest.T0)
			fillKeys(t, s, "kept-", c.kept, cutoff)
			records := readKeyRecords(t, s, "kept-", c.kept)

			stop := make(chan struct{})
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				written = map[string]seats.KeyRecord{}
			)
			for w := range c.writers {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						key := fmt.Sprintf("new-%d-%d", w, i)
						rec := seats.KeyRecord{ClaimedAt: cutoff.Add(time.Duration(i) * time.Millisecond), Fingerprint: key, Status: 409}
						if err := s.PutKey(ctx, key, rec); err != nil {
							t.Errorf("PutKey %s: %v", key, err)
							return
						}
						mu.Lock()
						written[key] = rec
						mu.Unlock()
					}
				})
			}
			wg.Go(func() { // readers of the kept records see them throughout
				for {
					select {
					case <-stop:
						return
					default:
					}
					for key, want := range records {
						if got, found, err := s.record(key); err != nil || !found || !bytes.Equal(got, want) {
							t.Errorf("%s during the sweep: found %v, %s, %v", key, found, got, err)
							return
						}
					}
				}
			})
			got, err := s.PurgeKeys(cutoff)
			close(stop)
			wg.Wait()
			if err != nil || got != c.expired {
				t.Fatalf("PurgeKeys: %d %v, want %d", got, err, c.expired)
			}
			if len(written) == 0 {
				t.Fatal("no write committed during the sweep")
			}
			check := func(s *Store) {
				t.Helper()
				checkRecords(t, s, records)
				for key, want := range written {
					got, found, err := s.Key(ctx, key)
					if err != nil || !found || got.Fingerprint != want.Fingerprint || !got.ClaimedAt.Equal(want.ClaimedAt) {
						t.Fatalf("%s written during the sweep: found %v, %+v, %v", key, found, got, err)
					}
					if err := s.PutKey(ctx, key, want); !errors.Is(err, seats.ErrKeyUsed) {
						t.Fatalf("PutKey %s again: %v, want ErrKeyUsed", key, err)
					}
				}
				if got, want := len(indexed(s)), c.kept+len(written); got != want {
					t.Errorf("index holds %d entries, want %d", got, want)
				}
			}
			check(s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(path); err != nil {
				t.Fatal(err)
			}
			check(s)
		})
	}
}

// fillKeys commits n records claimed at at, keyed prefix0 to prefix<n-1>,
// purgeChunk to a write as a group's members would, and checkpoints them
// into bbolt.
func fillKeys(t *testing.T, s *Store, prefix string, n int, at time.Time) {
	t.Helper()
	for from := 0; from < n; from += purgeChunk {
		err := s.commit.do(context.Background(), func(tx *txn) error {
			for i := from; i < min(from+purgeChunk, n); i++ {
				key := fmt.Sprint(prefix, i)
				raw, err := json.Marshal(seats.KeyRecord{ClaimedAt: at, Fingerprint: key, Status: 201,
					Session: &seats.Session{ID: "S-" + key, State: seats.StateReservation, Seats: []string{"A-1-1-1"}}})
				if err != nil {
					return err
				}
				if err := s.appendKey(tx, hashKey(key), entry(key, raw)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	flush(t, s)
}

// readKeyRecords reads every 97th record of fillKeys's n as stored.
func readKeyRecords(t *testing.T, s *Store, prefix string, n int) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for i := 0; i < n; i += 97 {
		key := fmt.Sprint(prefix, i)
		raw, found, err := s.record(key)
		if err != nil || !found {
			t.Fatalf("%s: found %v, %v", key, found, err)
		}
		out[key] = raw
	}
	return out
}

// checkRecords: each key's record reads back byte for byte.
func checkRecords(t *testing.T, s *Store, want map[string][]byte) {
	t.Helper()
	for key, raw := range want {
		got, found, err := s.record(key)
		if err != nil || !found || !bytes.Equal(got, raw) {
			t.Fatalf("%s: found %v, %s, %v; want %s", key, found, got, err, raw)
		}
	}
}

// logLen is how many entries the idempotency log holds, once checkpointed.
func logLen(t *testing.T, s *Store) int {
	t.Helper()
	flush(t, s)
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(keyLogBucket).Stats().KeyN
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func sameKeys(a, b []keyHash) bool {
	cmp := func(x, y keyHash) int { return bytes.Compare(x[:], y[:]) }
	slices.SortFunc(a, cmp)
	slices.SortFunc(b, cmp)
	return slices.Equal(a, b)
}

// heapAlloc is the live heap after a collection.
func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// flush checkpoints everything logged into bbolt.
func flush(t *testing.T, s *Store) {
	t.Helper()
	if err := s.commit.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}
