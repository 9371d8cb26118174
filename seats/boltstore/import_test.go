package boltstore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/storetest"
)

// hidden fails t unless the store answers that event id does not exist.
func hidden(t *testing.T, s *Store, id string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Event(ctx, id); !errors.Is(err, seats.ErrNotFound) {
		t.Fatalf("event %s: %v, want ErrNotFound", id, err)
	}
	if _, err := s.SectionSeats(ctx, id, "S1"); !errors.Is(err, seats.ErrNotFound) {
		t.Fatalf("seats of %s: %v, want ErrNotFound", id, err)
	}
}

// invisible fails t unless nothing of event id is in the store: no event,
// no seats, no import mark.
func invisible(t *testing.T, s *Store, id string) {
	t.Helper()
	hidden(t, s, id)
	err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(seatsBucket).Bucket([]byte(id)) != nil || tx.Bucket(importsBucket).Get([]byte(id)) != nil {
			return errors.New("its seats or its import mark are left")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("event %s: %v", id, err)
	}
}

// TestImportInChunks: a large import is written a chunk per commit, holds
// on another event commit between its chunks, the event is invisible
// until the last, and an import that fails part-way leaves nothing.
func TestImportInChunks(t *testing.T) {
	const sections = 2 // 5,000 seats: three chunks
	chunks := (sections*2500 + importChunk - 1) / importChunk
	tests := []struct {
		name   string
		failAt int // the chunk after which the import's ctx ends; 0: none
	}{
		{"complete", 0},
		{"cut after the first chunk", 1},
		{"cut after the last chunk", chunks},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			svc := seats.NewService(s, func() time.Time { return storetest.T0 })
			bg := context.Background()
			if _, err := svc.CreateEvent(bg, grid("other", 1)); err != nil {
				t.Fatal(err)
			}
			sess, err := svc.OpenSession(bg, "other", "u", "", storetest.T0, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			seen := 0
			s.afterChunk = func(n int) {
				seen = n
				hidden(t, s, "big")
				seat := seats.SeatID("S1", "1", "1", n)
				if _, err := svc.HoldSeats(bg, sess.ID, "u", []string{seat}, storetest.T0, nil); err != nil {
					t.Errorf("hold between chunks %d and %d: %v", n, n+1, err)
				}
				if n == tt.failAt {
					cancel()
				}
			}
			_, err = svc.CreateEvent(ctx, grid("big", sections))
			s.afterChunk = nil
			if tt.failAt > 0 {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("import cut after chunk %d: %v", tt.failAt, err)
				}
				invisible(t, s, "big")
				if _, err := svc.CreateEvent(bg, grid("big", sections)); err != nil {
					t.Fatalf("importing again: %v", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if tt.failAt == 0 && seen != chunks {
				t.Fatalf("%d chunks, want %d", seen, chunks)
			}
			for _, sec := range []string{"S1", "S2"} {
				if list, err := s.SectionSeats(bg, "big", sec); err != nil || len(list) != 2500 {
					t.Fatalf("section %s: %d seats, %v", sec, len(list), err)
				}
			}
		})
	}
}

// TestOpenDropsCutImports: an import a crash cut off (its mark and some
// seats, no event) is deleted when the store is opened again.
func TestOpenDropsCutImports(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seats.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(importsBucket).Put([]byte("cut"), nil); err != nil {
			return err
		}
		b, err := tx.Bucket(seatsBucket).CreateBucket([]byte("cut"))
		if err != nil {
			return err
		}
		raw, err := encodeSeat(&seats.Seat{ID: "S1-1-1-1", Section: "S1", Block: "1", Row: "1", Number: 1, Status: seats.Available})
		if err != nil {
			return err
		}
		return b.Put([]byte("S1-1-1-1"), raw)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	invisible(t, s, "cut")
	if err := s.PutEvent(context.Background(), seats.Event{ID: "cut"}, nil); err != nil {
		t.Fatalf("importing the cut event again: %v", err)
	}
}
