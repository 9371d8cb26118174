package boltstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/fairgate/fairgate/seats"
)

// importChunk is how many seats one write of an import puts: small enough
// that the group it joins commits in milliseconds, so writes on other
// events wait for one chunk at most, never for the whole import.
const importChunk = 2000

// PutEvent implements seats.Store. The import is claimed (importsBucket),
// its seats are written importChunk at a time, each chunk a bbolt
// transaction of its own beside the log (the writes on other events never
// wait for one: they wait for the log, and checkpoints for one chunk at
// most), and the event is stored last, in a small transaction of its own:
// until then Event and SectionSeats do not find it, so no session can
// open half-way through. An import's transactions are synced by bbolt, and
// the log never holds its keys: the event's seats are in bbolt before any
// session can change them. An import that fails, or
// that ctx ends, is deleted; one cut off by a crash is deleted when the
// store is next opened.
//
// Seats are put in key order: bbolt splits a page only at commit, so
// within a transaction a key put in the middle of a large node moves
// every key after it: seats in layout order (S1, S10, …, S2) would make an
// import quadratic in its size.
func (s *Store) PutEvent(ctx context.Context, ev seats.Event, list []seats.Seat) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("importing event %s: %w", ev.ID, err)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encoding event %s: %w", ev.ID, err)
	}
	if err := s.claim(ev.ID); err != nil {
		return err
	}
	if err := s.putSeats(ctx, ev.ID, list); err != nil {
		s.abandon(ev.ID)
		return fmt.Errorf("importing the seats of %s: %w", ev.ID, err)
	}
	if err := ctx.Err(); err != nil {
		s.abandon(ev.ID)
		return fmt.Errorf("publishing event %s: %w", ev.ID, err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(importsBucket).Delete([]byte(ev.ID)); err != nil {
			return err
		}
		return tx.Bucket(eventsBucket).Put([]byte(ev.ID), raw)
	})
	if err != nil {
		s.abandon(ev.ID)
		return fmt.Errorf("publishing event %s: %w", ev.ID, err)
	}
	return nil
}

// claim marks the import of a new event and creates its seat bucket;
// ErrExists if the event, or an import of it, is there. Like the publish,
// it is not given up once asked (ctx is checked before): its outcome must
// be known, to be undone or not.
func (s *Store) claim(id string) error {
	var refused error
	err := s.db.Update(func(tx *bolt.Tx) error {
		refused = nil
		if tx.Bucket(eventsBucket).Get([]byte(id)) != nil || tx.Bucket(importsBucket).Get([]byte(id)) != nil {
			refused = fmt.Errorf("event %s (or its import in progress): %w", id, seats.ErrExists)
			return nil
		}
		if err := tx.Bucket(importsBucket).Put([]byte(id), nil); err != nil {
			return err
		}
		if _, err := tx.Bucket(seatsBucket).CreateBucket([]byte(id)); err != nil {
			return fmt.Errorf("seats of %s: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("claiming event %s: %w", id, err)
	}
	return refused
}

// importFill is how full an import leaves the pages of its seats: its
// keys come in order, each after the last, so a page split in half
// (bbolt's default) would stay half empty; a tenth is left for the seats'
// values to grow as they are held and sold.
const importFill = 0.9

// putSeats writes an import's seats in key order, a chunk per
// transaction. A chunk is encoded before its transaction, keeping the
// writer lock short, and only then: the import holds one chunk's encoding
// at a time.
func (s *Store) putSeats(ctx context.Context, event string, list []seats.Seat) error {
	order := make([]int, len(list))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(list[a].ID, list[b].ID) })
	keys, values := make([][]byte, 0, importChunk), make([][]byte, 0, importChunk)
	for n, chunk := 1, order; len(chunk) > 0; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		keys, values = keys[:0], values[:0]
		for _, i := range chunk[:min(importChunk, len(chunk))] {
			raw, err := encodeSeat(&list[i])
			if err != nil {
				return fmt.Errorf("encoding seat %s: %w", list[i].ID, err)
			}
			keys, values = append(keys, []byte(list[i].ID)), append(values, raw)
		}
		chunk = chunk[len(keys):]
		err := s.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(seatsBucket).Bucket([]byte(event))
			if b == nil {
				return fmt.Errorf("seats of %s are missing", event)
			}
			b.FillPercent = importFill
			for i, k := range keys {
				if err := b.Put(k, values[i]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if s.afterChunk != nil {
			s.afterChunk(n)
		}
	}
	return nil
}

// abandon deletes a failed import's seats and mark. If it fails too, the next Open deletes them.
func (s *Store) abandon(id string) {
	_ = s.db.Update(func(tx *bolt.Tx) error {
		return dropImport(tx, []byte(id))
	})
}

// dropImports deletes every import not completed (a crash cut them off).
func dropImports(tx *bolt.Tx) error {
	var ids [][]byte
	err := tx.Bucket(importsBucket).ForEach(func(k, _ []byte) error {
		ids = append(ids, slices.Clone(k))
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := dropImport(tx, id); err != nil {
			return err
		}
	}
	return nil
}

// dropImport deletes an import's seats and its mark.
func dropImport(tx *bolt.Tx, id []byte) error {
	if tx.Bucket(importsBucket).Get(id) == nil {
		return nil // not an import in progress: nothing of it to drop
	}
	if err := tx.Bucket(seatsBucket).DeleteBucket(id); err != nil && err != bolt.ErrBucketNotFound {
		return fmt.Errorf("dropping the seats of import %s: %w", id, err)
	}
	return tx.Bucket(importsBucket).Delete(id)
}
