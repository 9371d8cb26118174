package boltstore

import (
	"context"
	"path/filepath"
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

// TestPurgeKeys is issue 12 finding 6: bbolt deletes idempotency records
// older than seats.KeyTTL, as DynamoDB's TTL does.
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
	n, err := s.PurgeKeys(fresh.Add(time.Minute).Add(-seats.KeyTTL))
	if err != nil || n != 1 {
		t.Fatalf("PurgeKeys: %d %v", n, err)
	}
	if _, found, err := s.Key(ctx, "old"); err != nil || found {
		t.Fatalf("old record kept: %v %v", found, err)
	}
	if _, found, err := s.Key(ctx, "fresh"); err != nil || !found {
		t.Fatalf("fresh record lost: %v %v", found, err)
	}
}
