package boltstore

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/storetest"
)

// TestKeysOfRolledBackGroup: a group whose member fails is rolled back and
// run again without it; the records of the members that commit are found,
// each with its own record, and the failed member's is not, also after
// reopening the file (the index is rebuilt from the log).
func TestKeysOfRolledBackGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seats.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	broken := errors.New("broken")
	put := func(key string, fail bool) func(*txn) error {
		raw, err := json.Marshal(seats.KeyRecord{ClaimedAt: storetest.T0, Fingerprint: key, Status: 200})
		if err != nil {
			t.Fatal(err)
		}
		return func(t *txn) error {
			if err := s.appendKey(t, hashKey(key), entry(key, raw)); err != nil {
				return err
			}
			if fail {
				return broken
			}
			return nil
		}
	}
	keys := map[string]bool{"a": true, "fails": false, "b": true, "c": true} // key → commits
	release := holdCommits(t, s)
	var wg sync.WaitGroup
	for key, commits := range keys {
		wg.Go(func() {
			if err := s.commit.do(context.Background(), put(key, !commits)); (err == nil) != commits {
				t.Errorf("%s: %v", key, err)
			}
		})
	}
	release(len(keys))
	wg.Wait()

	check := func(s *Store) {
		t.Helper()
		for key, commits := range keys {
			rec, found, err := s.Key(context.Background(), key)
			if err != nil || found != commits || (found && rec.Fingerprint != key) {
				t.Errorf("%s: found %v (want %v), record %+v, %v", key, found, commits, rec, err)
			}
			if _, ok := s.keys.lookup(hashKey(key)); ok != commits {
				t.Errorf("%s: in the index %v, want %v", key, ok, commits)
			}
		}
		for key, commits := range keys {
			err := s.PutKey(context.Background(), key, seats.KeyRecord{ClaimedAt: storetest.T0, Fingerprint: key, Status: 409})
			if errors.Is(err, seats.ErrKeyUsed) != commits {
				t.Errorf("PutKey %s again: %v", key, err)
			}
			keys[key] = true
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s)
}

// TestOpenMigratesKeyRecords: a file of the layout before the log (format
// 1: records in a bucket keyed by the key) opens with every record found,
// and a write under a recorded key is refused; the old bucket is gone and
// opening it again finds the same.
func TestOpenMigratesKeyRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seats.db")
	records := map[string]seats.KeyRecord{
		"k1": {ClaimedAt: storetest.T0, Fingerprint: "f1", Status: 200, Session: &seats.Session{ID: "S1", State: seats.StateReservation, Seats: []string{"A-1-1-1"}}},
		"k2": {ClaimedAt: storetest.T0, Fingerprint: "f2", Status: 409, Body: []byte(`{"error":"taken"}`)},
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"events", "seats", "sessions", "live", "tokens", "imports"} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		b, err := tx.CreateBucket(legacyKeysBucket)
		if err != nil {
			return err
		}
		for k, rec := range records {
			raw, err := json.Marshal(rec)
			if err != nil {
				return err
			}
			if err := b.Put([]byte(k), raw); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for k, want := range records {
			got, found, err := s.Key(context.Background(), k)
			wantJSON, _ := json.Marshal(want)
			gotJSON, _ := json.Marshal(got)
			if err != nil || !found || string(gotJSON) != string(wantJSON) {
				t.Errorf("%s: found %v, %s, %v; want %s", k, found, gotJSON, err, wantJSON)
			}
			if err := s.PutKey(context.Background(), k, seats.KeyRecord{Status: 409}); !errors.Is(err, seats.ErrKeyUsed) {
				t.Errorf("PutKey %s after the migration: %v", k, err)
			}
		}
		err = s.db.View(func(tx *bolt.Tx) error {
			if tx.Bucket(legacyKeysBucket) != nil {
				t.Error("the old records' bucket is still there")
			}
			if got := string(tx.Bucket(metaBucket).Get(formatKey)); got != "2" {
				t.Errorf("format %q, want 2", got)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenRefusesLaterFormat: a file of a later layout (or an unreadable
// format) is refused, with the reason, and left as it is.
func TestOpenRefusesLaterFormat(t *testing.T) {
	for _, format := range []string{"3", "x"} {
		t.Run(format, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "seats.db")
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			err = s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(metaBucket).Put(formatKey, []byte(format)) })
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err := Open(path); err == nil || !strings.Contains(err.Error(), "format") {
				if err == nil {
					s.Close()
				}
				t.Fatalf("Open of a format %s file: %v", format, err)
			}
		})
	}
}

// TestUnreadableLogEntry: a log entry that cannot be read does not keep
// the file from opening, is found by no lookup, is never overwritten by a
// later record, and the sweep deletes it.
func TestUnreadableLogEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seats.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	garbage := []byte{0xff} // a length with no end
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(keyLogBucket).Put(seqKey(7), garbage) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path); err != nil {
		t.Fatalf("reopening with an unreadable entry: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.PutKey(ctx, "k", seats.KeyRecord{ClaimedAt: storetest.T0.Add(seats.KeyTTL), Status: 409}); err != nil {
		t.Fatal(err)
	}
	if err := s.commit.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(keyLogBucket).Get(seqKey(7)); string(v) != string(garbage) {
			t.Errorf("entry 7 is %q", v)
		}
		if k, _ := tx.Bucket(keyLogBucket).Cursor().Last(); string(k) != string(seqKey(8)) {
			t.Errorf("the new record is at %x, want after the last entry", k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeKeys(storetest.T0.Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("PurgeKeys: %d %v, want the unreadable entry", n, err)
	}
	if _, found, err := s.Key(ctx, "k"); err != nil || !found {
		t.Fatalf("the record after it: %v %v", found, err)
	}
}
