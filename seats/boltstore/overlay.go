package boltstore

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// memtable is changes logged but not yet in bbolt. The committing
// goroutine alone adds to the current one (under the committer's lock,
// readers look under it too); once frozen for a checkpoint, it never
// changes again.
type memtable struct {
	changes map[place]change
	// buckets are the buckets changes has keys of.
	buckets map[string]bool
	// last is the sequence number of the last record it holds; bytes the
	// log bytes of its records; since when its first was logged.
	last  uint64
	bytes int
	since time.Time
}

func newMemtable() *memtable {
	return &memtable{changes: map[place]change{}, buckets: map[string]bool{}}
}

// add takes a logged record's changes, numbered seq, n bytes long.
func (m *memtable) add(changes map[place]change, seq uint64, n int, now time.Time) {
	if len(m.changes) == 0 {
		m.since = now
	}
	for p, c := range changes {
		m.changes[p] = c
		m.buckets[p.bucket] = true
	}
	m.last, m.bytes = seq, m.bytes+n
}

// snapshot is what a read sees: the changes logged and not yet in bbolt,
// newest first, over a bbolt read transaction. A checkpoint drops its
// memtable only after its transaction committed, and a snapshot whose
// transaction began before a memtable was dropped and whose memtables
// were taken after is taken again, so whatever a snapshot's memtables
// lack, its transaction has. The current memtable is read as it is at
// each lookup: a read sees every change logged before it began, and may
// see some logged while it runs (each of them durable).
type snapshot struct {
	c           *committer
	mem, frozen *memtable
	tx          *bolt.Tx
	// own is the mem the committing goroutine writes: it reads it without
	// the lock.
	own bool
	// opened are the buckets looked up so far (bucket).
	opened [4]openBucket
}

// openBucket is a bucket looked up in a snapshot's transaction (nil: it
// has none).
type openBucket struct {
	name string
	b    *bolt.Bucket
}

// bucket is a place's bucket in the snapshot's transaction (nil if there
// is none). The first few are kept: bbolt opens a bucket afresh at every
// lookup in a read transaction (a seek and allocations, twice for an
// event's nested seat bucket), and a group's members look up the same
// few buckets for every read and write.
func (s *snapshot) bucket(name string) *bolt.Bucket {
	for i := range s.opened {
		switch o := &s.opened[i]; o.name {
		case name:
			return o.b
		case "": // a free slot (no bucket is named "")
			o.name, o.b = name, bucketOf(s.tx, name)
			return o.b
		}
	}
	return bucketOf(s.tx, name)
}

// read runs fn on a snapshot of the store.
func (c *committer) read(fn func(*snapshot) error) error {
	s, err := c.snapshot(false)
	if err != nil {
		return err
	}
	defer s.tx.Rollback()
	return fn(s)
}

// snapshot begins a snapshot. bbolt's Begin is not called under the lock:
// it can wait for a commit that remaps the file, which waits for every
// read transaction, whose readers may wait for the lock.
func (c *committer) snapshot(own bool) (*snapshot, error) {
	for {
		dropped := c.cleared.Load()
		tx, err := c.db.Begin(false)
		if err != nil {
			return nil, fmt.Errorf("reading the store: %w", err)
		}
		c.mu.RLock()
		mem, frozen := c.mem, c.frozen
		c.mu.RUnlock()
		if c.cleared.Load() == dropped {
			return &snapshot{c: c, mem: mem, frozen: frozen, tx: tx, own: own}, nil
		}
		_ = tx.Rollback() // a checkpoint's memtable was dropped in between
	}
}

// get is a key's value (nil if it has none), valid while the snapshot is.
func (s *snapshot) get(bucket, key string) []byte {
	if c, ok := s.logged(place{bucket, key}); ok {
		if c.deleted {
			return nil
		}
		return c.value
	}
	b := s.bucket(bucket)
	if b == nil {
		return nil
	}
	return b.Get([]byte(key))
}

// logged is a place's change not yet in bbolt, if any.
func (s *snapshot) logged(p place) (change, bool) {
	if !s.own {
		s.c.mu.RLock()
	}
	c, ok := s.mem.changes[p]
	if !s.own {
		s.c.mu.RUnlock()
	}
	if ok {
		return c, true
	}
	if s.frozen != nil {
		c, ok = s.frozen.changes[p]
	}
	return c, ok
}

// touches reports whether the log changed keys of bucket that bbolt does
// not have yet (a scan need not look up the others).
func (s *snapshot) touches(bucket string) bool {
	if !s.own {
		s.c.mu.RLock()
	}
	in := s.mem.buckets[bucket]
	if !s.own {
		s.c.mu.RUnlock()
	}
	return in || (s.frozen != nil && s.frozen.buckets[bucket])
}

// bucketExists reports whether bbolt has the bucket (the overlay only
// changes keys of buckets that exist).
func (s *snapshot) bucketExists(bucket string) bool { return s.bucket(bucket) != nil }

// txn is a group's view while its members run: its own changes over a
// snapshot. What it puts is the txn's from then on, and outlives the
// snapshot's bbolt transaction: callers do not change a value after
// putting it, and never put a slice that get returned from bbolt.
type txn struct {
	*snapshot
	changes map[place]change
}

// get is a key's value as the group sees it, its own changes included.
func (t *txn) get(bucket, key string) []byte {
	if c, ok := t.changes[place{bucket, key}]; ok {
		if c.deleted {
			return nil
		}
		return c.value
	}
	return t.snapshot.get(bucket, key)
}

// put sets a key's value. The bucket must exist in bbolt: a checkpoint
// could not apply the change otherwise.
func (t *txn) put(bucket, key string, value []byte) error {
	if !t.bucketExists(bucket) {
		return fmt.Errorf("putting %q: bucket %q is missing", key, bucket)
	}
	if value == nil {
		value = []byte{} // a present key, however empty
	}
	t.changes[place{bucket, key}] = change{value: value}
	return nil
}

func (t *txn) delete(bucket, key string) error {
	if !t.bucketExists(bucket) {
		return fmt.Errorf("deleting %q: bucket %q is missing", key, bucket)
	}
	t.changes[place{bucket, key}] = change{deleted: true}
	return nil
}
