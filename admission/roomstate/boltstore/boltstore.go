// Package boltstore is the embedded room-state store: one bbolt file,
// durable on one machine, so a restart keeps the queue, the clock and the
// used-place ledger.
//
// Writes are group-committed with db.Batch: concurrent admissions share one
// transaction and one fsync, and a call returns only after its write is on
// disk. A crash therefore loses only writes whose calls had not returned
// (the batch in flight), never a consumed id the caller was told it won.
package boltstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/roomstate"
)

var (
	controlBucket    = []byte("control")    // room → stored
	budgetBucket     = []byte("budget")     // room \x00 window → used, expires; and "l" → lapsed, expires
	ledgerBucket     = []byte("ledger")     // room \x00 place id → until, state, slot
	populationBucket = []byte("population") // room \x00 node → value, until
	ranksBucket      = []byte("ranks")      // room → next rank
	sketchBucket     = []byte("sketch")     // room \x00 node → until, sketch
)

// Store is a roomstate.Store on a bbolt file.
type Store struct {
	db      *bolt.DB
	timeout time.Duration
	places  *placeIndex
}

// Open opens (or creates) the store at path. Every call is bounded by
// callTimeout (zero: roomstate.DefaultCallTimeout) or its context's deadline.
func Open(path string, callTimeout time.Duration) (*Store, error) {
	if callTimeout <= 0 {
		callTimeout = roomstate.DefaultCallTimeout
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: callTimeout})
	if err != nil {
		return nil, fmt.Errorf("opening room state %s: %w", path, err)
	}
	// Group commits: many concurrent admissions share one fsync.
	db.MaxBatchDelay = 2 * time.Millisecond
	db.MaxBatchSize = 256
	places := newPlaceIndex()
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{controlBucket, budgetBucket, ledgerBucket, populationBucket, ranksBucket, sketchBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return places.load(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("creating room state buckets in %s: %w", path, err)
	}
	return &Store{db: db, timeout: callTimeout, places: places}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

type stored struct {
	Version uint64            `json:"version"`
	Control roomstate.Control `json:"control"`
}

// LoadControl implements roomstate.Store.
func (s *Store) LoadControl(ctx context.Context, room string) (roomstate.Control, uint64, error) {
	var st stored
	err := s.view(ctx, "loading control state", func(tx *bolt.Tx) error {
		raw := tx.Bucket(controlBucket).Get([]byte(room))
		if raw == nil {
			return fmt.Errorf("room %s: %w", room, roomstate.ErrNotFound)
		}
		return json.Unmarshal(raw, &st)
	})
	if err != nil {
		return roomstate.Control{}, 0, err // op may still run past its deadline: read none of its results
	}
	return st.Control, st.Version, nil
}

// SaveControl implements roomstate.Store.
func (s *Store) SaveControl(ctx context.Context, room string, c roomstate.Control, prev uint64) (uint64, error) {
	var version uint64
	err := s.batch(ctx, "saving control state", func(tx *bolt.Tx) (error, error) {
		b := tx.Bucket(controlBucket)
		var cur stored
		if raw := b.Get([]byte(room)); raw != nil {
			if err := json.Unmarshal(raw, &cur); err != nil {
				return nil, fmt.Errorf("room %s: %w", room, err)
			}
		}
		if cur.Version != prev {
			return fmt.Errorf("room %s is at version %d, not %d: %w", room, cur.Version, prev, roomstate.ErrConflict), nil
		}
		version = prev + 1
		raw, err := json.Marshal(stored{Version: version, Control: c})
		if err != nil {
			return nil, err
		}
		return nil, b.Put([]byte(room), raw)
	})
	if err != nil {
		return 0, err // op may still run past its deadline: read none of its results
	}
	return version, nil
}

// ReserveBudget implements roomstate.Store. A window's value is what it
// granted (less what was returned), with aheadBit set once a reservation
// was made ahead of it, and its expiry; what was returned to it lapsed is
// a value of its own (lapsedKey), which a file written before it never
// has and a binary before it never reads.
func (s *Store) ReserveBudget(ctx context.Context, room string, w roomstate.Window, n int64) (roomstate.Grant, error) {
	var g roomstate.Grant
	err := s.batch(ctx, "reserving budget", func(tx *bolt.Tx) (error, error) {
		b := tx.Bucket(budgetBucket)
		k := windowKey(room, w.Index)
		used, ahead := budgetValue(b.Get(k))
		lapsed, _ := budgetValue(b.Get(lapsedKey(k)))
		g = roomstate.Grant{N: max(0, min(n, w.Limit-used)), First: used + lapsed, Ahead: ahead, Lapsed: lapsed}
		if g.N == 0 {
			return nil, nil
		}
		g.Ahead = ahead || w.Ahead
		return nil, b.Put(k, budgetPair(used+g.N, g.Ahead, w.Expires))
	})
	if err != nil {
		return roomstate.Grant{}, err // op may still run past its deadline: read none of its results
	}
	return g, nil
}

// ReturnBudget implements roomstate.Store.
func (s *Store) ReturnBudget(ctx context.Context, room string, w roomstate.Window, n, top int64) error {
	return s.batch(ctx, "returning budget", func(tx *bolt.Tx) (error, error) {
		_, err := giveBack(tx.Bucket(budgetBucket), windowKey(room, w.Index), n, top, w.Expires)
		return nil, err
	})
}

// ReturnLapsed implements roomstate.Store.
func (s *Store) ReturnLapsed(ctx context.Context, room string, w roomstate.Window, n int64) (int64, error) {
	var taken int64
	err := s.batch(ctx, "returning lapsed budget", func(tx *bolt.Tx) (error, error) {
		var err error
		taken, err = giveBack(tx.Bucket(budgetBucket), windowKey(room, w.Index), n, -1, w.Expires)
		return nil, err
	})
	if err != nil {
		return 0, err // op may still run past its deadline: read none of its results
	}
	return taken, nil
}

// giveBack returns n admissions to the window at key k and reports how
// many it took: all n in place when top is the window's end (the place
// after every grant and lapsed return) and it granted that many, else (a
// negative top always) as many as it granted, counted lapsed, so the
// window grants them at places after its end.
func giveBack(b *bolt.Bucket, k []byte, n, top int64, expires time.Time) (int64, error) {
	raw := b.Get(k)
	used, ahead := budgetValue(raw)
	if len(raw) != 16 {
		return 0, nil
	}
	lapsed, _ := budgetValue(b.Get(lapsedKey(k)))
	if used+lapsed == top && used >= n {
		return n, b.Put(k, budgetPair(used-n, ahead, expires))
	}
	if n = min(n, used); n <= 0 {
		return 0, nil
	}
	if err := b.Put(lapsedKey(k), budgetPair(lapsed+n, false, expires)); err != nil {
		return 0, err
	}
	return n, b.Put(k, budgetPair(used-n, ahead, expires))
}

// aheadBit marks, in a budget window's count, a window slots were given
// ahead in.
const aheadBit = 1 << 63

func budgetValue(raw []byte) (used int64, ahead bool) {
	if len(raw) != 16 {
		return 0, false
	}
	v := binary.BigEndian.Uint64(raw)
	return int64(v &^ aheadBit), v&aheadBit != 0
}

func budgetPair(used int64, ahead bool, expires time.Time) []byte {
	v := uint64(used)
	if ahead {
		v |= aheadBit
	}
	return pair(v, expires)
}

// lapsedKey is the key of what was returned lapsed to the window whose
// key is window: its key and a byte more, so no window's key.
func lapsedKey(window []byte) []byte { return append(slices.Clip(window), 'l') }

// A place record is until (8 bytes), state (1), slot (8), big-endian;
// then, for a reserved place charged another slot's admission, charged
// (8: a record of 25 bytes), or, for a used place that records who used
// it, at (8), the length of by (1), by and pass (the rest). A record of
// 17 bytes is a place charged its own slot, with no by or pass.
func encodePlace(p queue.Place, until time.Time) []byte {
	v := binary.BigEndian.AppendUint64(nil, uint64(until.UnixNano()))
	v = append(v, byte(p.State))
	v = binary.BigEndian.AppendUint64(v, uint64(slotNanos(p.Slot)))
	if p.State == queue.PlaceReserved && !p.Charged.IsZero() {
		return binary.BigEndian.AppendUint64(v, uint64(p.Charged.UnixNano()))
	}
	if p.By == "" && p.Pass == "" || len(p.By) > 255 {
		return v
	}
	v = binary.BigEndian.AppendUint64(v, uint64(slotNanos(p.At)))
	v = append(v, byte(len(p.By)))
	v = append(v, p.By...)
	return append(v, p.Pass...)
}

// decodePlace returns the record unexpired at now, or ok false.
func decodePlace(v []byte, now time.Time) (p queue.Place, until int64, ok bool) {
	switch n := len(v); {
	case n == 17:
	case n == placeCharged:
		p.Charged = nanosTime(int64(binary.BigEndian.Uint64(v[17:])))
	case n > placeCharged && n >= 26+int(v[25]):
		p.At = nanosTime(int64(binary.BigEndian.Uint64(v[17:])))
		by := int(v[25])
		p.By, p.Pass = string(v[26:26+by]), string(v[26+by:])
	default:
		return queue.Place{}, 0, false
	}
	until = int64(binary.BigEndian.Uint64(v))
	if now.UnixNano() >= until {
		return queue.Place{}, 0, false
	}
	p.State = queue.PlaceState(v[8])
	p.Slot = nanosTime(int64(binary.BigEndian.Uint64(v[9:])))
	return p, until, true
}

// placeCharged is the length of a reserved place's record with charged.
const placeCharged = 25

// nanosTime is the time of Unix nanoseconds n, zero for 0 (slotNanos).
func nanosTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func slotNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// HoldPlace implements roomstate.Store.
func (s *Store) HoldPlace(ctx context.Context, room, id string, p queue.Place, until, now time.Time) (queue.Place, bool, error) {
	var standing queue.Place
	var won bool
	defer s.places.write(room, id)()
	err := s.batch(ctx, "holding place "+id, func(tx *bolt.Tx) (error, error) {
		b := tx.Bucket(ledgerBucket)
		k := subKey(room, id)
		if cur, _, ok := decodePlace(b.Get(k), now); ok && cur.State != queue.PlaceLapsed {
			standing, won = cur, false
			return nil, nil
		}
		standing, won = p, true
		return nil, b.Put(k, encodePlace(p, until))
	})
	if err != nil {
		return queue.Place{}, false, err // op may still run past its deadline: read none of its results
	}
	return standing, won, nil
}

// UsePlace implements roomstate.Store.
func (s *Store) UsePlace(ctx context.Context, room, id string, p queue.Place, now time.Time) (bool, error) {
	var won bool
	defer s.places.write(room, id)()
	err := s.batch(ctx, "using place "+id, func(tx *bolt.Tx) (error, error) {
		b := tx.Bucket(ledgerBucket)
		k := subKey(room, id)
		cur, until, ok := decodePlace(b.Get(k), now)
		won = ok && cur.State == queue.PlaceReserved
		if !won {
			return nil, nil
		}
		return nil, b.Put(k, encodePlace(queue.Place{State: queue.PlaceUsed, By: p.By, Pass: p.Pass, At: p.At}, time.Unix(0, until)))
	})
	if err != nil {
		return false, err // op may still run past its deadline: read none of its results
	}
	return won, nil
}

// LookupPlace implements roomstate.Store.
func (s *Store) LookupPlace(ctx context.Context, room, id string, now time.Time) (queue.Place, error) {
	if !s.places.mayHold(room, id) {
		return queue.Place{}, ctx.Err()
	}
	var p queue.Place
	err := s.view(ctx, "reading place "+id, func(tx *bolt.Tx) error {
		p, _, _ = decodePlace(tx.Bucket(ledgerBucket).Get(subKey(room, id)), now)
		return nil
	})
	if err != nil {
		return queue.Place{}, err // op may still run past its deadline: read none of its results
	}
	return p, nil
}

// ReleasePlace implements roomstate.Store.
func (s *Store) ReleasePlace(ctx context.Context, room, id string) error {
	err := s.batch(ctx, "releasing place "+id, func(tx *bolt.Tx) (error, error) {
		return nil, tx.Bucket(ledgerBucket).Delete(subKey(room, id))
	})
	if err == nil {
		s.places.deleted(placeKey{room, id})
	}
	return err
}

// LapsePlace implements roomstate.Store.
func (s *Store) LapsePlace(ctx context.Context, room, id string, slot, now time.Time) (bool, error) {
	var lapsed bool
	err := s.batch(ctx, "lapsing place "+id, func(tx *bolt.Tx) (error, error) {
		b := tx.Bucket(ledgerBucket)
		k := subKey(room, id)
		cur, until, ok := decodePlace(b.Get(k), now)
		lapsed = ok && cur.State == queue.PlaceReserved && cur.Slot.Equal(slot)
		if !lapsed {
			return nil, nil
		}
		return nil, b.Put(k, encodePlace(queue.Place{State: queue.PlaceLapsed, Slot: slot}, time.Unix(0, until)))
	})
	if err != nil {
		return false, err // op may still run past its deadline: read none of its results
	}
	return lapsed, nil
}

// MayHoldPlace implements roomstate.PlaceIndex from memory: false only if
// the file certainly holds no record of the place.
func (s *Store) MayHoldPlace(room, id string) bool { return s.places.mayHold(room, id) }

// PublishPopulation implements roomstate.Store.
func (s *Store) PublishPopulation(ctx context.Context, room, node string, value float64, until time.Time) error {
	return s.batch(ctx, "publishing population", func(tx *bolt.Tx) (error, error) {
		return nil, tx.Bucket(populationBucket).Put(subKey(room, node), pair(math.Float64bits(value), until))
	})
}

// Population implements roomstate.Store.
func (s *Store) Population(ctx context.Context, room string, now time.Time) (float64, int, error) {
	var sum float64
	var nodes int
	err := s.view(ctx, "reading population", func(tx *bolt.Tx) error {
		sum, nodes = 0, 0
		prefix := subKey(room, "")
		c := tx.Bucket(populationBucket).Cursor()
		for k, v := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, v = c.Next() {
			if len(v) != 16 || now.UnixNano() >= int64(binary.BigEndian.Uint64(v[8:])) {
				continue
			}
			sum += math.Float64frombits(binary.BigEndian.Uint64(v[:8]))
			nodes++
		}
		return nil
	})
	if err != nil {
		return 0, 0, err // op may still run past its deadline: read none of its results
	}
	return sum, nodes, nil
}

// PublishSketch implements roomstate.Store.
func (s *Store) PublishSketch(ctx context.Context, room, node string, sketch []byte, until time.Time) error {
	v := append(binary.BigEndian.AppendUint64(nil, uint64(until.UnixNano())), sketch...)
	return s.batch(ctx, "publishing sketch", func(tx *bolt.Tx) (error, error) {
		return nil, tx.Bucket(sketchBucket).Put(subKey(room, node), v)
	})
}

// Sketches implements roomstate.Store.
func (s *Store) Sketches(ctx context.Context, room string, now time.Time) ([][]byte, error) {
	var sketches [][]byte
	err := s.view(ctx, "reading sketches", func(tx *bolt.Tx) error {
		sketches = sketches[:0]
		prefix := subKey(room, "")
		c := tx.Bucket(sketchBucket).Cursor()
		for k, v := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, v = c.Next() {
			if len(v) < 8 || now.UnixNano() >= int64(binary.BigEndian.Uint64(v)) {
				continue
			}
			sketches = append(sketches, append([]byte(nil), v[8:]...)) // v lives only in tx
		}
		return nil
	})
	if err != nil {
		return nil, err // op may still run past its deadline: read none of its results
	}
	return sketches, nil
}

// ReserveRanks implements roomstate.Store.
func (s *Store) ReserveRanks(ctx context.Context, room string, n int64) (int64, error) {
	var first int64
	err := s.batch(ctx, "reserving ranks", func(tx *bolt.Tx) (error, error) {
		b := tx.Bucket(ranksBucket)
		first = 0
		if raw := b.Get([]byte(room)); len(raw) == 8 {
			first = int64(binary.BigEndian.Uint64(raw))
		}
		return nil, b.Put([]byte(room), binary.BigEndian.AppendUint64(nil, uint64(first+n)))
	})
	if err != nil {
		return 0, err // op may still run past its deadline: read none of its results
	}
	return first, nil
}

// Sweep deletes ledger, budget and population items expired at now and
// reports how many. DynamoDB's TTL does this there; here the owner of the
// store calls it now and then (a minute is plenty: expired items are
// already ignored, they only take space).
func (s *Store) Sweep(ctx context.Context, now time.Time) (int, error) {
	deleted := 0
	var places []placeKey // the ledger's deleted keys
	err := s.batch(ctx, "sweeping expired room state", func(tx *bolt.Tx) (error, error) {
		deleted, places = 0, places[:0]
		expiredAt := map[string]func(v []byte) bool{
			string(ledgerBucket): func(v []byte) bool {
				_, _, live := decodePlace(v, now)
				return !live
			},
			string(budgetBucket): func(v []byte) bool {
				return len(v) == 16 && now.UnixNano() >= int64(binary.BigEndian.Uint64(v[8:]))
			},
			string(populationBucket): func(v []byte) bool {
				return len(v) == 16 && now.UnixNano() >= int64(binary.BigEndian.Uint64(v[8:]))
			},
			string(sketchBucket): func(v []byte) bool {
				return len(v) < 8 || now.UnixNano() >= int64(binary.BigEndian.Uint64(v))
			},
		}
		for name, expired := range expiredAt {
			c := tx.Bucket([]byte(name)).Cursor()
			for k, v := c.First(); k != nil; {
				if !expired(v) {
					k, v = c.Next()
					continue
				}
				if err := c.Delete(); err != nil {
					return nil, err
				}
				if name == string(ledgerBucket) {
					if pk, ok := splitKey(k); ok {
						places = append(places, pk)
					}
				}
				deleted++
				k, v = c.Seek(k)
			}
		}
		return nil, nil
	})
	if err != nil {
		return 0, err // op may still run past its deadline: read none of its results
	}
	s.places.deleted(places...)
	return deleted, nil
}

// batch runs fn in a group commit bounded by the call deadline. fn returns
// the call's refusal (a result, which commits the rest of the batch) and a
// failure (which aborts it).
func (s *Store) batch(ctx context.Context, what string, fn func(*bolt.Tx) (refusal, failure error)) error {
	var refusal error
	err := s.bounded(ctx, func() error {
		return s.db.Batch(func(tx *bolt.Tx) error {
			var failure error
			refusal, failure = fn(tx)
			return failure
		})
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return refusal
}

func (s *Store) view(ctx context.Context, what string, fn func(*bolt.Tx) error) error {
	err := s.bounded(ctx, func() error { return s.db.View(fn) })
	if err != nil && !errors.Is(err, roomstate.ErrNotFound) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return err
}

// bounded runs op, giving up at the call's deadline. bbolt cannot cancel a
// transaction, so a write abandoned at its deadline may still commit: the
// caller was told it failed and fails closed (a consumed id it did not
// admit stays consumed), which never admits twice. Because op may still be
// running, a caller given an error reads nothing op writes.
func (s *Store) bounded(ctx context.Context, op func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func subKey(room, sub string) []byte { return []byte(room + "\x00" + sub) }

func windowKey(room string, idx int64) []byte {
	return binary.BigEndian.AppendUint64(subKey(room, ""), uint64(idx))
}

func pair(x uint64, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, x), uint64(t.UnixNano()))
}

func hasPrefix(k, p []byte) bool { return len(k) >= len(p) && string(k[:len(p)]) == string(p) }

var _ roomstate.Store = (*Store)(nil)
