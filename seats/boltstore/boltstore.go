// Package boltstore is the seat service's embedded store: one bbolt file
// and its log. Every change applies the domain's rule over a snapshot of
// the store, and concurrent changes are group-committed by the store's
// committer (one log record and one fdatasync for every write waiting,
// commit.go), so throughput does not pay a disk flush per request. A write
// is answered after its group's record is synced, so a crash loses nothing
// answered; bbolt takes the logged changes in checkpoints behind the
// writes (wal.go), and the reads see them before it does (overlay.go).
package boltstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fairgate/fairgate/seats"
)

var (
	eventsBucket   = []byte("events")
	seatsBucket    = []byte("seats") // nested: one bucket per event, keyed by seat id
	sessionsBucket = []byte("sessions")
	liveBucket     = []byte("live")   // user \x00 event → session id
	tokensBucket   = []byte("tokens") // waiting token id → session id
	// The idempotency records are in a log (keylog.go).
	// importsBucket marks the events being imported (import.go): their
	// seats are being written, their event is not stored yet.
	importsBucket = []byte("imports")
)

// Store is a seats.Store on a bbolt file.
type Store struct {
	db     *bolt.DB
	log    *wal
	commit *committer
	keys   *keyIndex
	stop   chan struct{}
	done   chan struct{}
	// afterChunk, in tests, runs after chunk n of an import committed.
	afterChunk func(n int)
}

// sweepEvery is how often idempotency records older than seats.KeyTTL are
// deleted (DynamoDB's TTL does this for the other store).
const sweepEvery = 10 * time.Minute

// initialMmap is the address space mapped for the file at first: 1 GiB
// of virtual memory (not resident: pages are read in as used) on 64-bit
// platforms, bbolt's default elsewhere.
const initialMmap = 1 << 30 * (strconv.IntSize / 64)

// Open opens (or creates) the store at path, and its log (path-log.0 and
// path-log.1), applying to bbolt whatever the log holds that it does not.
func Open(path string) (*Store, error) {
	// The freelist is rebuilt on open rather than written with every
	// commit, and kept as a map: a commit writes only the pages it changed.
	// The file is mapped with room to grow, so a growing file is not
	// remapped under load (a remap waits for every read in progress and
	// copies the group's dirty nodes out of the old mapping).
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType, InitialMmapSize: initialMmap})
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	log, err := openWAL(path)
	if err != nil {
		db.Close()
		return nil, err
	}
	keys := newKeyIndex()
	var seq uint64
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{eventsBucket, seatsBucket, sessionsBucket, liveBucket, tokensBucket, importsBucket, metaBucket, keyLogBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		if err := checkFormat(tx); err != nil {
			return err
		}
		if seq, err = replay(tx, log); err != nil {
			return fmt.Errorf("applying the log: %w", err)
		}
		if err := openKeys(tx, keys); err != nil {
			return err
		}
		return dropImports(tx)
	})
	if err != nil {
		log.close()
		db.Close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	s := &Store{db: db, log: log, commit: newCommitter(db, log, seq, keys), keys: keys, stop: make(chan struct{}), done: make(chan struct{})}
	go s.sweep(time.Now)
	return s, nil
}

// Close stops the sweeper and the committer (after the group in
// progress), checkpoints the log into bbolt and closes the files. The
// committer stops before the sweeper is waited for: a sweep waiting on it
// gets errClosed rather than holding Close up.
func (s *Store) Close() error {
	close(s.stop)
	err := s.commit.close()
	<-s.done
	return errors.Join(err, s.log.close(), s.db.Close())
}

// sweep deletes expired idempotency records until Close.
func (s *Store) sweep(now func() time.Time) {
	defer close(s.done)
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_, _ = s.PurgeKeys(now().Add(-seats.KeyTTL)) // a failed sweep is retried at the next tick
		}
	}
}

// PurgeKeys deletes the idempotency records claimed before cutoff and
// returns how many it deleted. It checkpoints the log, finds the records
// in a bbolt read transaction, beside the writes, and deletes them
// purgeChunk at a time as members of group commits, so a day's records
// never hold the committer, and the writes waiting behind it, for the
// length of a scan.
func (s *Store) PurgeKeys(cutoff time.Time) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), purgeFlushTimeout)
	defer cancel()
	if err := s.commit.Flush(ctx); err != nil {
		return 0, fmt.Errorf("checkpointing before a purge: %w", err)
	}
	type logged struct {
		key []byte
		seq uint64
	}
	var old []logged
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(keyLogBucket).ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return nil // not an entry: the log writes none
			}
			seq := binary.BigEndian.Uint64(k)
			key, raw, err := splitEntry(v)
			if err != nil { // unreadable: no lookup finds it
				old = append(old, logged{nil, seq})
				return nil
			}
			var rec struct {
				ClaimedAt time.Time `json:"claimed_at"`
			}
			if err := json.Unmarshal(raw, &rec); err != nil || rec.ClaimedAt.Before(cutoff) {
				old = append(old, logged{slices.Clone(key), seq})
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("finding old idempotency records: %w", err)
	}
	n := 0
	for chunk := range slices.Chunk(old, purgeChunk) {
		err := s.commit.do(context.Background(), func(t *txn) error {
			for _, r := range chunk {
				if err := s.dropKey(t, r.key, r.seq); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("deleting old idempotency records: %w", err)
		}
		n += len(chunk)
	}
	return n, nil
}

// purgeChunk is how many old records one group-commit member deletes.
const purgeChunk = 1000

// purgeFlushTimeout bounds the wait for the checkpoint a purge starts
// with: a disk that fails checkpoints fails the sweep, which the next
// tick tries again.
const purgeFlushTimeout = time.Minute

// Event implements seats.Store.
func (s *Store) Event(_ context.Context, id string) (seats.Event, error) {
	var ev seats.Event
	err := s.commit.read(func(r *snapshot) error {
		return getJSON(r, string(eventsBucket), id, &ev, "event")
	})
	return ev, err
}

// SectionSeats implements seats.Store. Seat ids start with their section
// and a '-' (section ids have none), so a section is one key range.
func (s *Store) SectionSeats(_ context.Context, event, section string) ([]seats.Seat, error) {
	out, _, err := s.page(event, section, "", 0)
	return out, err
}

// SeatPage implements seats.Store: the cursor is the last seat's key (a
// row's seats share the key prefix section-block-row-, so a row is one
// key range too).
func (s *Store) SeatPage(_ context.Context, event, section, after string, limit int) ([]seats.Seat, string, error) {
	if limit < 1 || limit > seats.SeatPageSize {
		limit = seats.SeatPageSize
	}
	return s.page(event, section, after, limit)
}

// page reads limit seats of a section after the key after, or every seat
// to the section's end if limit is 0.
func (s *Store) page(event, section, after string, limit int) ([]seats.Seat, string, error) {
	var (
		out        []seats.Seat
		last, next string
	)
	err := s.commit.read(func(r *snapshot) error {
		bucket := seatsOf(event)
		b := r.bucket(bucket)
		if b == nil || r.get(string(eventsBucket), event) == nil { // none, or not imported yet
			return fmt.Errorf("event %s: %w", event, seats.ErrNotFound)
		}
		// The log changes seats, never adds or deletes them: a page is
		// bbolt's keys, each with its value as logged if it was.
		changed := r.touches(bucket)
		prefix := []byte(section + "-")
		c := b.Cursor()
		k, v := c.Seek(prefix)
		if after != "" {
			if k, v = c.Seek([]byte(after)); k != nil && string(k) == after {
				k, v = c.Next()
			}
		}
		for ; k != nil && hasPrefix(k, prefix); k, v = c.Next() {
			if limit > 0 && len(out) == limit {
				next = last
				return nil
			}
			if changed {
				if c, ok := r.logged(place{bucket, string(k)}); ok && !c.deleted {
					v = c.value
				}
			}
			var seat seats.Seat
			if err := decodeSeat(v, &seat); err != nil {
				return fmt.Errorf("seat %s: %w", k, err)
			}
			seat.EventID = event
			out, last = append(out, seat), string(k)
		}
		return nil
	})
	return out, next, err
}

func hasPrefix(k, p []byte) bool { return len(k) >= len(p) && string(k[:len(p)]) == string(p) }

// CreateSession implements seats.Store.
func (s *Store) CreateSession(ctx context.Context, sess seats.Session, now time.Time, key *seats.Idempotency) error {
	k, err := newKeyed(key, now)
	if err != nil {
		return err
	}
	return s.batch(ctx, func(t *txn) error {
		if used, err := s.keyUsed(t, k); err != nil || used {
			return cmp.Or(err, seats.ErrKeyUsed)
		}
		if id := t.get(string(tokensBucket), sess.TokenID); sess.TokenID != "" && id != nil {
			return seats.ErrTokenUsed
		}
		liveKey := sess.UserID + "\x00" + sess.EventID
		if id := t.get(string(liveBucket), liveKey); id != nil {
			var other seats.Session
			if err := getSession(t, string(id), &other); err == nil && other.Live(now) {
				return &seats.SessionExistsError{Session: other.ID}
			}
		}
		if err := t.put(string(liveBucket), liveKey, []byte(sess.ID)); err != nil {
			return err
		}
		if sess.TokenID != "" {
			if err := t.put(string(tokensBucket), sess.TokenID, []byte(sess.ID)); err != nil {
				return err
			}
		}
		return s.putSession(t, sess, k)
	})
}

// Session implements seats.Store.
func (s *Store) Session(_ context.Context, id string) (seats.Session, error) {
	var sess seats.Session
	err := s.commit.read(func(r *snapshot) error { return getSession(r, id, &sess) })
	return sess, err
}

// Hold implements seats.Store.
func (s *Store) Hold(ctx context.Context, h seats.Hold) (seats.Session, error) {
	return s.change(ctx, h.Session, h.Seats, h.Now, h.Key, func(sess *seats.Session, list []*seats.Seat) error {
		return seats.ApplyHold(sess, list, h)
	})
}

// Release implements seats.Store.
func (s *Store) Release(ctx context.Context, r seats.Release) (seats.Session, error) {
	return s.change(ctx, r.Session, []string{r.Seat}, r.Now, r.Key, func(sess *seats.Session, list []*seats.Seat) error {
		return seats.ApplyRelease(sess, list[0], r)
	})
}

// Checkout implements seats.Store.
func (s *Store) Checkout(ctx context.Context, session string, now, until time.Time, key *seats.Idempotency) (seats.Session, error) {
	return s.change(ctx, session, nil, now, key, func(sess *seats.Session, list []*seats.Seat) error {
		return seats.ApplyCheckout(sess, list, now, until)
	})
}

// Confirm implements seats.Store.
func (s *Store) Confirm(ctx context.Context, session, reservation, paymentRef string, now time.Time, key *seats.Idempotency) (seats.Session, error) {
	return s.change(ctx, session, nil, now, key, func(sess *seats.Session, list []*seats.Seat) error {
		return seats.ApplyConfirm(sess, list, reservation, paymentRef, now)
	})
}

// Cancel implements seats.Store.
func (s *Store) Cancel(ctx context.Context, session string, now time.Time, key *seats.Idempotency) (seats.Session, error) {
	return s.change(ctx, session, nil, now, key, func(sess *seats.Session, list []*seats.Seat) error {
		return seats.ApplyCancel(sess, list, now)
	})
}

// change loads a session and seats (nil ids: the seats it holds), applies
// a rule and writes back what it changed, in one group commit with the
// request's idempotency record, if any. A rule's
// refusal is a result, not a failed transaction, so it does not roll back
// the other writes of its group.
func (s *Store) change(ctx context.Context, session string, ids []string, now time.Time, key *seats.Idempotency, rule func(*seats.Session, []*seats.Seat) error) (seats.Session, error) {
	var out seats.Session
	var refused error
	k, err := newKeyed(key, now)
	if err != nil {
		return seats.Session{}, err
	}
	err = s.batch(ctx, func(t *txn) error {
		refused = nil
		used, err := s.keyUsed(t, k)
		if err != nil {
			return err
		}
		if used {
			refused = seats.ErrKeyUsed
			return nil
		}
		var sess seats.Session
		if err := getSession(t, session, &sess); err != nil {
			refused = err
			return nil
		}
		bucket := seatsOf(sess.EventID)
		if !t.bucketExists(bucket) {
			return fmt.Errorf("seats of event %s are missing", sess.EventID)
		}
		want := ids
		if want == nil {
			want = sess.Seats
		}
		list := make([]*seats.Seat, len(want))
		for i, id := range want {
			if v := t.get(bucket, id); v != nil {
				list[i] = new(seats.Seat)
				if err := decodeSeat(v, list[i]); err != nil {
					return fmt.Errorf("seat %s: %w", id, err)
				}
			}
		}
		if err := rule(&sess, list); err != nil {
			refused = err
			return nil
		}
		for _, seat := range list {
			if seat != nil {
				if err := putSeat(t, bucket, seat); err != nil {
					return err
				}
			}
		}
		out = sess
		return s.putSession(t, sess, k)
	})
	if err != nil {
		return seats.Session{}, err
	}
	return out, refused
}

// Key implements seats.Store.
func (s *Store) Key(_ context.Context, key string) (seats.KeyRecord, bool, error) {
	raw, found, err := s.record(key)
	if err != nil || !found {
		return seats.KeyRecord{}, false, err
	}
	var rec seats.KeyRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return seats.KeyRecord{}, false, fmt.Errorf("idempotency record: %w", err)
	}
	return rec, true, nil
}

// PutKey implements seats.Store.
func (s *Store) PutKey(ctx context.Context, key string, rec seats.KeyRecord) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding idempotency record: %w", err)
	}
	k := &keyed{key: key, hash: hashKey(key)}
	return s.batch(ctx, func(t *txn) error {
		if used, err := s.keyUsed(t, k); err != nil || used {
			return cmp.Or(err, seats.ErrKeyUsed)
		}
		return s.appendKey(t, k.hash, entry(key, raw))
	})
}

// keyed is a write's idempotency key, hashed for the index and with its
// log entry begun (the record's head, all but the session), before the
// write waits for its group: the committing goroutine, which every write
// waits for, only appends the session.
type keyed struct {
	key  string
	hash keyHash
	head []byte
}

// newKeyed is key made ready for a write at now; nil without a key.
func newKeyed(key *seats.Idempotency, now time.Time) (*keyed, error) {
	if key == nil {
		return nil, nil
	}
	head, err := key.AppendRecordHead(entryHead(key.Key, 0), now)
	if err != nil {
		return nil, fmt.Errorf("encoding idempotency record: %w", err)
	}
	return &keyed{key: key.Key, hash: hashKey(key.Key), head: head}, nil
}

// keyUsed reports, inside a group, whether a write's key (if any) has a
// record.
func (s *Store) keyUsed(t *txn, k *keyed) (bool, error) {
	if k == nil {
		return false, nil
	}
	return s.used(t, k.key, k.hash)
}

// batch runs fn in a group commit, passing domain errors through: a
// refusal is fn's result, not a failure that would roll back its group.
func (s *Store) batch(ctx context.Context, fn func(*txn) error) error {
	var domain error
	err := s.commit.do(ctx, func(t *txn) error {
		domain = nil
		err := fn(t)
		var exists *seats.SessionExistsError
		if errors.Is(err, seats.ErrTokenUsed) || errors.Is(err, seats.ErrKeyUsed) || errors.As(err, &exists) {
			domain = err
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	return domain
}

// putSession writes a session and, with key, the write's idempotency
// record, encoding the session once for both.
func (s *Store) putSession(t *txn, sess seats.Session, key *keyed) error {
	raw, err := encodeSession(&sess)
	if err != nil {
		return fmt.Errorf("encoding session %s: %w", sess.ID, err)
	}
	if key != nil {
		// A fresh entry each run: a member may run again after a rollback.
		e := seats.CloseRecord(append(make([]byte, 0, len(key.head)+len(raw)+1), key.head...), raw)
		if err := s.appendKey(t, key.hash, e); err != nil {
			return err
		}
	}
	return t.put(string(sessionsBucket), sess.ID, raw)
}

// putSeat writes a seat into its event's bucket.
func putSeat(t *txn, bucket string, seat *seats.Seat) error {
	raw, err := encodeSeat(seat)
	if err != nil {
		return fmt.Errorf("encoding seat %s: %w", seat.ID, err)
	}
	return t.put(bucket, seat.ID, raw)
}

// getter reads a key's value: a snapshot, or a group's txn (its own
// changes included).
type getter interface {
	get(bucket, key string) []byte
}

// getSession reads a session (decodeSession); ErrNotFound if there is none.
func getSession(g getter, id string, sess *seats.Session) error {
	raw := g.get(string(sessionsBucket), id)
	if raw == nil {
		return fmt.Errorf("session %s: %w", id, seats.ErrNotFound)
	}
	if err := decodeSession(raw, sess); err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	return nil
}

func getJSON(g getter, bucket, key string, v any, what string) error {
	raw := g.get(bucket, key)
	if raw == nil {
		return fmt.Errorf("%s %s: %w", what, key, seats.ErrNotFound)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s %s: %w", what, key, err)
	}
	return nil
}

var _ seats.Store = (*Store)(nil)
