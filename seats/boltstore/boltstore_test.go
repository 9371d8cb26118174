package boltstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) seats.Store {
		s, err := Open(filepath.Join(t.TempDir(), "seats.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestPurgeKeys: bbolt deletes idempotency records older than seats.KeyTTL,
// as DynamoDB's TTL does.
func TestPurgeKeys(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "seats.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	old, fresh := storetest.T0, storetest.T0.Add(seats.KeyTTL)
	for key, at := range map[string]time.Time{"old": old, "fresh": fresh} {
		if err := s.PutKey(ctx, key, seats.KeyRecord{ClaimedAt: at, Status: 409}); err != nil {
			t.Fatal(err)
		}
	}
	// More old records than one delete takes, written in one transaction.
	many := 2*purgeChunk + 7
	raw, err := json.Marshal(seats.KeyRecord{ClaimedAt: old, Status: 409})
	if err != nil {
		t.Fatal(err)
	}
	err = s.commit.do(ctx, func(tx *txn) error {
		for i := range many {
			key := fmt.Sprint("old-", i)
			if err := s.appendKey(tx, hashKey(key), entry(key, raw)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	before := s.Stats()
	n, err := s.PurgeKeys(fresh.Add(time.Minute).Add(-seats.KeyTTL))
	if err != nil || n != many+1 {
		t.Fatalf("PurgeKeys: %d %v, want %d", n, err, many+1)
	}
	if got := s.Stats().Writes - before.Writes; got != 3 {
		t.Fatalf("the purge took %d writes, want 3 of at most %d deletes", got, purgeChunk)
	}
	if _, found, err := s.Key(ctx, "old"); err != nil || found {
		t.Fatalf("old record kept: %v %v", found, err)
	}
	if _, found, err := s.Key(ctx, "fresh"); err != nil || !found {
		t.Fatalf("fresh record lost: %v %v", found, err)
	}
	// The index keeps only what the log keeps: a swept record costs no
	// memory.
	if got := indexed(s); len(got) != 1 || got[0] != hashKey("fresh") {
		t.Fatalf("the index holds %d entries after the purge, want fresh's alone", len(got))
	}
}

// indexed is the key hashes in a store's committed index.
func indexed(s *Store) []keyHash {
	s.keys.mu.RLock()
	defer s.keys.mu.RUnlock()
	return slices.Collect(maps.Keys(s.keys.seq))
}
