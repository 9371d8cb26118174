package boltstore

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Idempotency records are appended to a log in commit order, and found
// through an index kept in memory, not on disk. Keyed by the key itself (a
// hash, so random), each record would dirty a leaf and branches of its own
// in its write's commit, more pages than the write's seat and session
// together; appended, a group's records share a page or two, and a commit
// flushes about half the pages. The price is memory and Open's time: the
// index holds an entry for every record of the last day (seats.KeyTTL),
// 30 to 60 bytes each (56 MB for a million), given back as the sweep
// deletes them (keyIndex.shrink), and Open reads the whole log to rebuild
// it.
var (
	// keyLogBucket maps a record's sequence number (8 bytes, big-endian,
	// in commit order) to its entry: the key's length (uvarint), the key
	// and the record's JSON (a seats.KeyRecord).
	keyLogBucket = []byte("idempotency-log")
	// legacyKeysBucket is where an older version kept the records, keyed by
	// the key itself; Open moves them into the log (migrate).
	legacyKeysBucket = []byte("idempotency")
	// metaBucket holds formatKey: the file's layout version.
	metaBucket = []byte("meta")
	formatKey  = []byte("format")
)

// format is the layout this version writes: 2 is the idempotency log. A
// file without a format is the layout before it (1), migrated at Open; a
// later one is refused.
const format = 2

// keyHash is a key's index entry: the first 16 bytes of its SHA-256, so
// every entry is the same small size whatever the key's length. (Two keys
// sharing one is as likely as guessing a 128-bit secret; a lookup compares
// the stored key anyway.)
type keyHash [16]byte

func hashKey(key string) keyHash {
	sum := sha256.Sum256([]byte(key))
	return keyHash(sum[:16])
}

// keyIndex finds a record's place in the log by its key. The committed
// entries are read by any goroutine; the pending ones, a group's own puts
// and deletes, belong to the committing goroutine, which alone writes the
// log, and join the committed ones once its group is logged.
type keyIndex struct {
	mu  sync.RWMutex
	seq map[keyHash]uint64 // committed: key → its record's sequence number

	// The committing goroutine's, reset by begin: the transaction's puts
	// (a sequence number) and deletes (0), and the next number to assign.
	pending       map[keyHash]uint64
	next, durable uint64
	// peak is the most entries seq has held since it was made: a Go map
	// keeps the memory of its largest size after deletes (shrink).
	peak int
}

// minShrink is the smallest peak worth rebuilding the index for.
const minShrink = 1024

func newKeyIndex() *keyIndex {
	return &keyIndex{seq: map[keyHash]uint64{}, pending: map[keyHash]uint64{}, next: 1, durable: 1}
}

// begin starts a transaction: nothing pending.
func (x *keyIndex) begin() {
	clear(x.pending)
	x.next = x.durable
}

// end finishes a transaction; if it committed, its puts and deletes join
// the committed entries (before any member of its group is answered).
func (x *keyIndex) end(committed bool) {
	if !committed || len(x.pending) == 0 {
		return
	}
	x.mu.Lock()
	for h, n := range x.pending {
		if n == 0 {
			delete(x.seq, h)
		} else {
			x.seq[h] = n
		}
	}
	x.peak = max(x.peak, len(x.seq))
	x.mu.Unlock()
	x.durable = x.next
	x.shrink()
}

// shrink rebuilds the committed index once it holds less than half its
// peak: a map keeps the buckets of its largest size, so a day's busiest
// hour, swept, would otherwise hold its memory for good. Run by the
// committing goroutine, the index's only writer, so the copy is read
// without the lock, and readers wait only for the swap. Halving bounds the
// cost: each rebuild copies at most half the entries deleted since the
// last.
func (x *keyIndex) shrink() {
	if x.peak < minShrink || len(x.seq) >= x.peak/2 {
		return
	}
	fresh := make(map[keyHash]uint64, len(x.seq))
	for h, n := range x.seq {
		fresh[h] = n
	}
	x.mu.Lock()
	x.seq = fresh
	x.mu.Unlock()
	x.peak = len(fresh)
}

// lookup is the committed sequence number of a key's record, if any.
func (x *keyIndex) lookup(h keyHash) (uint64, bool) {
	x.mu.RLock()
	n, ok := x.seq[h]
	x.mu.RUnlock()
	return n, ok
}

// inTx is lookup as the committing goroutine's transaction sees it, its
// own puts and deletes included.
func (x *keyIndex) inTx(h keyHash) (uint64, bool) {
	if n, ok := x.pending[h]; ok {
		return n, n != 0
	}
	return x.seq[h], x.seq[h] != 0 // only this goroutine writes seq: no lock
}

func seqKey(n uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), n) }

// entry is a log entry: the key and the record's JSON.
func entry(key string, rec []byte) []byte {
	return append(entryHead(key, len(rec)), rec...)
}

// entryHead is the start of a log entry, the key, with room for more.
func entryHead(key string, more int) []byte {
	b := make([]byte, 0, binary.MaxVarintLen64+len(key)+more)
	b = binary.AppendUvarint(b, uint64(len(key)))
	return append(b, key...)
}

var errBadEntry = errors.New("malformed idempotency log entry")

// splitEntry is entry's inverse.
func splitEntry(v []byte) (key, rec []byte, err error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || uint64(len(v)-w) < n {
		return nil, nil, errBadEntry
	}
	return v[w : w+int(n)], v[w+int(n):], nil
}

// used reports, inside a group, whether key has a record.
func (s *Store) used(t *txn, key string, h keyHash) (bool, error) {
	n, ok := s.keys.inTx(h)
	if !ok {
		return false, nil
	}
	v := t.get(string(keyLogBucket), string(seqKey(n)))
	if v == nil { // not in the log: no record
		return false, nil
	}
	k, _, err := splitEntry(v)
	if err != nil {
		return false, fmt.Errorf("idempotency record %d: %w", n, err)
	}
	return string(k) == key, nil
}

// appendKey appends a key's log entry (its hash h), inside a group.
func (s *Store) appendKey(t *txn, h keyHash, entry []byte) error {
	n := s.keys.next
	if err := t.put(string(keyLogBucket), string(seqKey(n)), entry); err != nil {
		return err
	}
	s.keys.next++
	s.keys.pending[h] = n
	return nil
}

// dropKey deletes the record at n, key's (nil: an entry unreadable, so
// not indexed), inside a group.
func (s *Store) dropKey(t *txn, key []byte, n uint64) error {
	if err := t.delete(string(keyLogBucket), string(seqKey(n))); err != nil || key == nil {
		return err
	}
	h := hashKey(string(key))
	if cur, ok := s.keys.inTx(h); ok && cur == n {
		s.keys.pending[h] = 0
	}
	return nil
}

// record reads key's record from the log (found false if it has none).
func (s *Store) record(key string) (rec []byte, found bool, err error) {
	n, ok := s.keys.lookup(hashKey(key))
	if !ok {
		return nil, false, nil
	}
	err = s.commit.read(func(snap *snapshot) error {
		v := snap.get(string(keyLogBucket), string(seqKey(n)))
		if v == nil { // purged since the lookup
			return nil
		}
		k, r, err := splitEntry(v)
		if err != nil {
			return err
		}
		if string(k) == key {
			rec, found = slices.Clone(r), true
		}
		return nil
	})
	return rec, found, err
}

// checkFormat refuses a file of a later layout than this version's. It
// runs in Open's transaction, before anything else reads the file.
func checkFormat(tx *bolt.Tx) error {
	if v := tx.Bucket(metaBucket).Get(formatKey); v != nil {
		if got, err := strconv.Atoi(string(v)); err != nil || got > format {
			return fmt.Errorf("the file's format is %q, this version reads at most %d: open it with a later fairgate", v, format)
		}
	}
	return nil
}

// openKeys moves an older layout's records into the log, and reads the
// log into the index. It runs in Open's transaction, after checkFormat.
func openKeys(tx *bolt.Tx, x *keyIndex) error {
	meta, log := tx.Bucket(metaBucket), tx.Bucket(keyLogBucket)
	if err := migrateKeys(tx, log); err != nil {
		return fmt.Errorf("moving idempotency records into the log: %w", err)
	}
	if err := meta.Put(formatKey, strconv.AppendInt(nil, format, 10)); err != nil {
		return err
	}
	// An entry that cannot be read is left out of the index (no lookup
	// finds it; the sweep deletes it), not a reason to refuse the file.
	err := log.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return nil
		}
		n := binary.BigEndian.Uint64(k)
		x.next, x.durable = n+1, n+1
		if key, _, err := splitEntry(v); err == nil {
			x.seq[hashKey(string(key))] = n
		}
		return nil
	})
	x.peak = len(x.seq)
	return err
}

// migrateKeys moves the records of the layout before the log (format 1:
// a bucket keyed by the key) to the end of the log, and drops that
// bucket, in Open's one transaction: a crash leaves the old layout whole.
func migrateKeys(tx *bolt.Tx, log *bolt.Bucket) error {
	old := tx.Bucket(legacyKeysBucket)
	if old == nil {
		return nil
	}
	n := uint64(1)
	if k, _ := log.Cursor().Last(); k != nil {
		n = binary.BigEndian.Uint64(k) + 1
	}
	log.FillPercent = 1
	err := old.ForEach(func(k, v []byte) error {
		n++
		return log.Put(seqKey(n-1), entry(string(k), v))
	})
	if err != nil {
		return err
	}
	return tx.DeleteBucket(legacyKeysBucket)
}
