package boltstore

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// The store's writes are made durable by a log, not by bbolt's commit.
// A group's changes (the final value of each key it wrote, or its
// deletion) are one record, written at the log's end and synced with one
// fdatasync; only then is any member answered. bbolt takes the changes
// later, many groups at a time, in a checkpoint: one synced transaction
// that also stores the sequence number of the last record it holds
// (appliedKey). Until then the store's reads find them in memory (the
// overlay, overlay.go).
//
// Why not bbolt's own commit: it writes the group's scattered pages and
// then its meta page, each followed by an fdatasync, and its pages are
// written again by the next group. Why not bbolt with NoSync and this log:
// bbolt writes its two meta pages in turn, so after a power cut the meta
// page of a transaction whose pages never reached the disk may be the one
// it opens; bbolt must only ever hold synced transactions.
//
// The log is two files, written in turn: a checkpoint's changes are the
// records of one file, and the next records go to the other, from its
// start. A file is never truncated; what is left of an earlier turn after
// the last record is told apart by the turn's salt (a random number each
// turn draws and each of its records carries, so no bytes written before
// the turn, a client's included, can pass for one of its records) and by
// the sequence numbers (each record's is the one before it plus one), and
// a record cut short by a crash by its checksum. Open applies every
// record after the last one bbolt holds, in one synced transaction,
// before anything is read.

// appliedKey, in metaBucket, is the sequence number of the last log
// record a checkpoint applied.
var appliedKey = []byte("log-applied")

// recordHeader is a record's length and the CRC-32C of what follows it.
const recordHeader = 8

// maxRecord bounds a record's length as read back: a length beyond it is
// not a record.
const maxRecord = 1 << 30

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// change is a key's new value, or its deletion.
type change struct {
	value   []byte
	deleted bool
}

// place is a key in a bucket: a top-level bucket's name, or seatsOf's.
type place struct{ bucket, key string }

// seatsOf is the name of an event's seat bucket (nested in seatsBucket)
// in a place; bucket names have no NUL.
func seatsOf(event string) string { return string(seatsBucket) + "\x00" + event }

// bucketOf finds a place's bucket in tx; nil if there is none.
func bucketOf(tx *bolt.Tx, name string) *bolt.Bucket {
	if event, ok := strings.CutPrefix(name, string(seatsBucket)+"\x00"); ok {
		return tx.Bucket(seatsBucket).Bucket([]byte(event))
	}
	return tx.Bucket([]byte(name))
}

// encodeRecord appends the record of changes, numbered seq, of the turn
// salt, to b: its header, the salt, the number, the count, then each
// change (a flag, the bucket, the key and, unless deleted, the value), in
// key order.
func encodeRecord(b []byte, salt, seq uint64, changes map[place]change) []byte {
	start := len(b)
	b = append(b, make([]byte, recordHeader)...)
	b = binary.BigEndian.AppendUint64(b, salt)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = binary.AppendUvarint(b, uint64(len(changes)))
	for _, p := range sortedPlaces(changes) {
		c := changes[p]
		flag := byte(0)
		if c.deleted {
			flag = 1
		}
		b = append(b, flag)
		b = appendBytes(b, p.bucket)
		b = appendBytes(b, p.key)
		if !c.deleted {
			b = appendBytes(b, c.value)
		}
	}
	payload := b[start+recordHeader:]
	binary.BigEndian.PutUint32(b[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(payload, castagnoli))
	return b
}

// appendBytes appends s with its length. It takes a value as it is, not
// converted to a string: a conversion copies it, and the committer encodes
// every record, on the path every write waits on.
func appendBytes[T string | []byte](b []byte, s T) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// sortedPlaces is the places of changes in bucket and key order: bbolt
// puts keys in order cheaply, and a log record reads the same every time.
func sortedPlaces(changes map[place]change) []place {
	out := make([]place, 0, len(changes))
	for p := range changes {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b place) int {
		if c := strings.Compare(a.bucket, b.bucket); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	return out
}

// record is a log record read back.
type record struct {
	salt, seq uint64
	changes   map[place]change
}

var errBadRecord = errors.New("malformed log record")

// readRecords reads a log file's run of records from its start: each
// whole, with a good checksum, of the first one's turn and numbered one
// after the one before it. The first that is not ends the run (the end of
// what was written, a record a crash cut short, or what an earlier turn
// left).
func readRecords(data []byte) []record {
	var out []record
	for len(data) >= recordHeader {
		n := binary.BigEndian.Uint32(data)
		if n > maxRecord || int(n) > len(data)-recordHeader {
			break
		}
		payload := data[recordHeader : recordHeader+int(n)]
		if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(data[4:]) {
			break
		}
		rec, err := decodeRecord(payload)
		if err != nil || (len(out) > 0 && (rec.salt != out[0].salt || rec.seq != out[len(out)-1].seq+1)) {
			break
		}
		out = append(out, rec)
		data = data[recordHeader+int(n):]
	}
	return out
}

// decodeRecord is encodeRecord's inverse, for a payload whose checksum
// held.
func decodeRecord(p []byte) (record, error) {
	if len(p) < 16 {
		return record{}, errBadRecord
	}
	rec := record{salt: binary.BigEndian.Uint64(p), seq: binary.BigEndian.Uint64(p[8:])}
	p = p[16:]
	count, w := binary.Uvarint(p)
	if w <= 0 || count > uint64(len(p)) {
		return record{}, errBadRecord
	}
	p = p[w:]
	rec.changes = make(map[place]change, count)
	for range count {
		if len(p) < 1 {
			return record{}, errBadRecord
		}
		deleted := p[0] == 1
		p = p[1:]
		var bucket, key, value []byte
		var ok bool
		if bucket, p, ok = cutBytes(p); !ok {
			return record{}, errBadRecord
		}
		if key, p, ok = cutBytes(p); !ok {
			return record{}, errBadRecord
		}
		if !deleted {
			if value, p, ok = cutBytes(p); !ok {
				return record{}, errBadRecord
			}
		}
		rec.changes[place{string(bucket), string(key)}] = change{value: bytes.Clone(value), deleted: deleted}
	}
	return rec, nil
}

func cutBytes(p []byte) (field, rest []byte, ok bool) {
	n, w := binary.Uvarint(p)
	if w <= 0 || n > uint64(len(p)-w) {
		return nil, p, false
	}
	return p[w : w+int(n)], p[w+int(n):], true
}

// wal is the log's two files, where the next record goes and the turn's
// salt. It belongs to the committing goroutine.
type wal struct {
	files [2]*os.File
	cur   int
	off   int64
	salt  uint64
	// sync is fdatasync (tests make it fail).
	sync func(*os.File) error
	// broken is set when a failed record could not be unmade: every
	// later append fails with it, until the store is opened again.
	broken error
}

// logPaths are the log files of the store at path.
func logPaths(path string) [2]string { return [2]string{path + "-log.0", path + "-log.1"} }

// openWAL opens (or creates) the log files of the store at path.
func openWAL(path string) (*wal, error) {
	w := &wal{salt: rand.Uint64(), sync: fdatasync}
	created := false
	for i, p := range logPaths(path) {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			w.close()
			return nil, fmt.Errorf("opening log %s: %w", p, err)
		}
		w.files[i] = f
		if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
			created = true
		}
	}
	if created { // a new file's name must survive a power cut too
		if err := syncDir(filepath.Dir(path)); err != nil {
			w.close()
			return nil, err
		}
	}
	return w, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// readAll reads both files' runs of records.
func (w *wal) readAll() ([]record, error) {
	var out []record
	for _, f := range w.files {
		data, err := os.ReadFile(f.Name())
		if err != nil {
			return nil, fmt.Errorf("reading log %s: %w", f.Name(), err)
		}
		out = append(out, readRecords(data)...)
	}
	return out, nil
}

// encode appends the record of changes, numbered seq, in this turn.
func (w *wal) encode(b []byte, seq uint64, changes map[place]change) []byte {
	return encodeRecord(b, w.salt, seq, changes)
}

// append writes rec at the current file's end and syncs it. A record
// whose write or sync failed may be on the disk all the same: its header
// is overwritten with a length no record has, and synced, so neither
// Open nor a later turn finds it (the next record goes in its place). If
// that fails too, the log refuses every later record.
func (w *wal) append(rec []byte) error {
	if w.broken != nil {
		return w.broken
	}
	f := w.files[w.cur]
	if len(rec)-recordHeader > maxRecord {
		return fmt.Errorf("a log record of %d bytes: at most %d", len(rec), maxRecord)
	}
	_, err := f.WriteAt(rec, w.off)
	if err == nil {
		err = w.sync(f)
	}
	if err == nil {
		w.off += int64(len(rec))
		return nil
	}
	err = fmt.Errorf("writing log %s: %w", f.Name(), err)
	unmade := binary.BigEndian.AppendUint32(make([]byte, 0, recordHeader), maxRecord+1)
	unmade = append(unmade, 0, 0, 0, 0)
	if _, uerr := f.WriteAt(unmade, w.off); uerr != nil || w.sync(f) != nil {
		w.broken = fmt.Errorf("the log cannot be written until the store is opened again: %w", err)
		return fmt.Errorf("%w (the record could not be unmade: it may be applied when the store is opened again)", err)
	}
	return err
}

// turn starts writing the other file, from its start, with a new salt:
// everything in it must be applied to bbolt already.
func (w *wal) turn() {
	w.cur, w.off, w.salt = 1-w.cur, 0, rand.Uint64()
}

func (w *wal) close() error {
	var errs []error
	for _, f := range w.files {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

// replay applies, in Open's transaction, the log's records after the last
// one bbolt holds, in order, and returns the last record's number. Those
// records must follow one another from there: a gap means a record is
// lost, and the store is not opened on a guess.
func replay(tx *bolt.Tx, log *wal) (uint64, error) {
	var applied uint64
	if v := tx.Bucket(metaBucket).Get(appliedKey); len(v) == 8 {
		applied = binary.BigEndian.Uint64(v)
	}
	all, err := log.readAll()
	if err != nil {
		return 0, err
	}
	var todo []record
	for _, r := range all {
		if r.seq > applied {
			todo = append(todo, r)
		}
	}
	slices.SortFunc(todo, func(a, b record) int { return cmp.Compare(a.seq, b.seq) })
	for i, r := range todo {
		if i > 0 && r.seq == todo[i-1].seq {
			return 0, fmt.Errorf("the log has record %d twice", r.seq)
		}
		if want := applied + 1 + uint64(i); r.seq != want {
			return 0, fmt.Errorf("the log lacks record %d (bbolt holds up to %d, the log has %d next)", want, applied, r.seq)
		}
		if err := apply(tx, r.changes, r.seq); err != nil {
			return 0, fmt.Errorf("record %d: %w", r.seq, err)
		}
	}
	return applied + uint64(len(todo)), nil
}
