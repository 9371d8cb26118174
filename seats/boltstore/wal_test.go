package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/storetest"
)

func someChanges(seq uint64) map[place]change {
	return map[place]change{
		{string(sessionsBucket), fmt.Sprint("S", seq)}: {value: []byte(fmt.Sprint(`{"id":"S`, seq, `"}`))},
		{seatsOf("ev"), "A-1-1-1"}:                     {value: []byte{}},
		{string(keyLogBucket), string(seqKey(seq))}:    {deleted: true},
	}
}

// TestReadRecords: a log file's run of records ends at the first record
// that is cut short, fails its checksum or does not follow the one before.
func TestReadRecords(t *testing.T) {
	const salt = 0x5a17
	var three []byte
	for seq := uint64(7); seq < 10; seq++ {
		three = encodeRecord(three, salt, seq, someChanges(seq))
	}
	last := len(encodeRecord(nil, salt, 9, someChanges(9)))
	flip := func(b []byte, i int) []byte { b = slices.Clone(b); b[i] ^= 1; return b }
	cases := []struct {
		name string
		data []byte
		want []uint64
	}{
		{"empty", nil, nil},
		{"three", three, []uint64{7, 8, 9}},
		{"zeros after", append(slices.Clone(three), make([]byte, 100)...), []uint64{7, 8, 9}},
		{"the last cut short", three[:len(three)-1], []uint64{7, 8}},
		{"the last's header alone", three[:len(three)-last+recordHeader], []uint64{7, 8}},
		{"a bit flipped in the last", flip(three, len(three)-2), []uint64{7, 8}},
		{"a bit flipped in the first", flip(three, recordHeader+3), nil},
		{"an earlier turn's record after", encodeRecord(slices.Clone(three), salt+1, 2, someChanges(2)), []uint64{7, 8, 9}},
		{"another turn's record numbered next", encodeRecord(slices.Clone(three), salt+1, 10, someChanges(10)), []uint64{7, 8, 9}},
		{"the next record", encodeRecord(slices.Clone(three), salt, 10, someChanges(10)), []uint64{7, 8, 9, 10}},
		{"a later number after a gap", encodeRecord(slices.Clone(three), salt, 11, someChanges(11)), []uint64{7, 8, 9}},
		{"a length beyond the data", binary.BigEndian.AppendUint32(nil, 1<<20), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := readRecords(c.data)
			var seqs []uint64
			for _, r := range got {
				seqs = append(seqs, r.seq)
				if want := someChanges(r.seq); !sameChanges(r.changes, want) {
					t.Errorf("record %d: %v, want %v", r.seq, r.changes, want)
				}
			}
			if !slices.Equal(seqs, c.want) {
				t.Fatalf("read %v, want %v", seqs, c.want)
			}
		})
	}
}

func sameChanges(a, b map[place]change) bool {
	return maps.EqualFunc(a, b, func(x, y change) bool { return x.deleted == y.deleted && bytes.Equal(x.value, y.value) })
}

// FuzzReadRecords: no bytes make the reader panic, and what it reads
// encodes back to the bytes it read.
func FuzzReadRecords(f *testing.F) {
	f.Add(encodeRecord(nil, 3, 1, someChanges(1)))
	f.Add(encodeRecord(encodeRecord(nil, 3, 1, someChanges(1)), 3, 2, nil))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		recs := readRecords(data)
		var again []byte
		for _, r := range recs {
			again = encodeRecord(again, r.salt, r.seq, r.changes)
		}
		if len(recs) > 0 && !bytes.Equal(again, data[:len(again)]) {
			t.Fatalf("records read re-encode differently")
		}
	})
}

// TestReplay: Open applies the records after the last one bbolt holds, in
// order, from either file; it ignores what bbolt holds already and what an
// earlier turn left, and refuses a log with a record missing.
func TestReplay(t *testing.T) {
	// Each record sets key k to its own number: the last applied wins. A
	// run's records share a turn's salt, its first number's.
	run := func(seqs ...uint64) []byte {
		var b []byte
		for _, s := range seqs {
			b = encodeRecord(b, seqs[0], s, map[place]change{{string(sessionsBucket), "k"}: {value: fmt.Append(nil, s)}})
		}
		return b
	}
	cases := []struct {
		name    string
		applied uint64
		files   [2][]byte
		want    string // k's value after Open, or the error
	}{
		{"nothing logged", 0, [2][]byte{}, ""},
		{"one file", 0, [2][]byte{run(1, 2, 3)}, "3"},
		{"the second file after the first", 0, [2][]byte{run(4, 5), run(1, 2, 3)}, "5"},
		{"all applied", 5, [2][]byte{run(4, 5), run(1, 2, 3)}, ""},
		{"some applied", 2, [2][]byte{run(1, 2, 3), nil}, "3"},
		{"an earlier turn's records after the current", 3, [2][]byte{append(run(4, 5), run(1, 2)...), run(3)}, "5"},
		{"a record missing", 0, [2][]byte{run(5, 6), run(1, 2, 3)}, "lacks record 4"},
		{"a record twice", 0, [2][]byte{run(3, 4), run(1, 2, 3)}, "record 3 twice"},
		{"the first missing", 1, [2][]byte{run(3)}, "lacks record 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, path := openNew(t)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(metaBucket).Put(appliedKey, binary.BigEndian.AppendUint64(nil, c.applied))
			})
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range logPaths(path) {
				if err := os.WriteFile(p, c.files[i], 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s, err = Open(path)
			if strings.Contains(c.want, "record") {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					if err == nil {
						s.Close()
					}
					t.Fatalf("Open: %v, want an error naming %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got string
			_ = s.db.View(func(tx *bolt.Tx) error { got = string(tx.Bucket(sessionsBucket).Get([]byte("k"))); return nil })
			if got != c.want {
				t.Fatalf("k is %q after Open, want %q", got, c.want)
			}
		})
	}
}

// crashCopy copies the store's files as a crash at this moment leaves
// them: bbolt as its last checkpoint committed it, and the log files as
// written, and returns the copy's path. The store must be idle.
func crashCopy(t *testing.T, s *Store, path string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "seats.db")
	if err := s.db.View(func(tx *bolt.Tx) error { return tx.CopyFile(dst, 0o600) }); err != nil {
		t.Fatal(err)
	}
	for i, p := range logPaths(path) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(logPaths(dst)[i], data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// unapplied counts the log records of the store at path that its bbolt
// file lacks.
func unapplied(t *testing.T, path string) int {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var applied uint64
	_ = db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(metaBucket).Get(appliedKey); len(v) == 8 {
			applied = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	db.Close()
	n := 0
	for _, p := range logPaths(path) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range readRecords(data) {
			if r.seq > applied {
				n++
			}
		}
	}
	return n
}

// heldWrites opens n sessions and holds a seat in each, with keys, one
// after the other (each write its own group and log record), and returns
// the holds' keys by seat.
func heldWrites(t *testing.T, svc *seats.Service, from, n int) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys := map[string]string{}
	for i := from; i < from+n; i++ {
		user := fmt.Sprint("u", i)
		sess, err := svc.OpenSession(ctx, "ev", user, "t-"+user, storetest.T0, nil)
		if err != nil {
			t.Fatal(err)
		}
		seat := seats.SeatID("AB", "1", "1", i+1)
		key := &seats.Idempotency{Key: fmt.Sprint("hold-", i), Fingerprint: "fp", Status: 200}
		if _, err := svc.HoldSeats(ctx, sess.ID, user, []string{seat}, storetest.T0, key); err != nil {
			t.Fatal(err)
		}
		keys[seat] = key.Key
	}
	return keys
}

// checkHeld: each seat is held, and its hold's key has its record.
func checkHeld(t *testing.T, s *Store, held map[string]string, want bool) {
	t.Helper()
	ctx := context.Background()
	list, err := s.SectionSeats(ctx, "ev", "AB")
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]bool{}
	for _, seat := range list {
		status[seat.ID] = seat.Status == seats.Locked
	}
	for seat, key := range held {
		_, found, err := s.Key(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if status[seat] != want || found != want {
			t.Errorf("seat %s held %v, record of %s found %v; want %v", seat, status[seat], key, found, want)
		}
	}
}

func newEventStore(t *testing.T) (*Store, *seats.Service, string) {
	t.Helper()
	s, path := openNew(t)
	t.Cleanup(func() { s.Close() })
	ev := storetest.Event("ev")
	ev.HoldWindow = seats.Duration(time.Hour)
	svc := seats.NewService(s, func() time.Time { return storetest.T0 })
	if _, err := svc.CreateEvent(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	return s, svc, path
}

// TestCrashKeepsLoggedWrites: writes answered before a crash are in the
// store reopened from the files the crash left, whether a checkpoint took
// them into bbolt or only the log has them, across several turns of the
// log's two files, and their keys replay.
func TestCrashKeepsLoggedWrites(t *testing.T) {
	s, svc, path := newEventStore(t)
	held := map[string]string{}
	for turn := range 4 { // each checkpoint turns the log to the other file
		maps.Copy(held, heldWrites(t, svc, turn*5, 5))
		flush(t, s)
	}
	holdCheckpoints(s, true)
	maps.Copy(held, heldWrites(t, svc, 20, 8)) // logged, not checkpointed
	copied := crashCopy(t, s, path)
	if n := unapplied(t, copied); n < 8 {
		t.Fatalf("the log holds %d records bbolt lacks, want the last 8 writes' at least", n)
	}
	var salts []uint64 // each file's turn
	for _, p := range logPaths(copied) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if recs := readRecords(data); len(recs) > 0 {
			salts = append(salts, recs[0].salt)
		}
	}
	if len(salts) != 2 || salts[0] == salts[1] {
		t.Fatalf("the two files' turns have salts %x, want two different", salts)
	}

	r, err := Open(copied)
	if err != nil {
		t.Fatalf("reopening after the crash: %v", err)
	}
	defer r.Close()
	checkHeld(t, r, held, true)
	again := &seats.Idempotency{Key: "hold-25", Fingerprint: "fp", Status: 200}
	_, err = r.Hold(context.Background(), seats.Hold{Session: "nobody", Seats: []string{"AB-1-1-1"}, Now: storetest.T0, Key: again})
	if !errors.Is(err, seats.ErrKeyUsed) {
		t.Fatalf("a logged write's key, used again after the crash: %v", err)
	}
}

// TestCrashCutsTheLastRecord: a record the crash cut short (its group was
// never answered) is dropped whole, and every record before it is kept.
func TestCrashCutsTheLastRecord(t *testing.T) {
	s, svc, path := newEventStore(t)
	holdCheckpoints(s, true) // the log alone has them
	kept := heldWrites(t, svc, 0, 5)
	lost := heldWrites(t, svc, 5, 1)
	copied := crashCopy(t, s, path)
	// The last record (the highest number) loses its last byte's worth.
	var file string
	var end int
	var top uint64
	for _, p := range logPaths(copied) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		off := 0
		for _, r := range readRecords(data) {
			off += recordHeader + int(binary.BigEndian.Uint32(data[off:]))
			if r.seq > top {
				top, file, end = r.seq, p, off
			}
		}
	}
	if file == "" {
		t.Fatal("no record in the log")
	}
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0}, int64(end-1)); err != nil {
		t.Fatal(err)
	}
	f.Close()

	r, err := Open(copied)
	if err != nil {
		t.Fatalf("reopening after the crash: %v", err)
	}
	defer r.Close()
	checkHeld(t, r, kept, true)
	checkHeld(t, r, lost, false)
}

// TestReadsSeeTheLog: what a write logged is read back at once, from the
// overlay, while bbolt has none of it, and after the checkpoint that
// takes it into bbolt, also by a snapshot taken before that checkpoint
// committed.
func TestReadsSeeTheLog(t *testing.T) {
	s, svc, _ := newEventStore(t)
	holdBack := holdCheckpoints(s, true)
	held := heldWrites(t, svc, 0, 3)
	var inBolt int
	_ = s.db.View(func(tx *bolt.Tx) error { inBolt = tx.Bucket(sessionsBucket).Stats().KeyN; return nil })
	if inBolt != 0 {
		t.Fatalf("bbolt holds %d sessions with checkpoints held back", inBolt)
	}
	checkHeld(t, s, held, true)
	before, err := s.commit.snapshot(false)
	if err != nil {
		t.Fatal(err)
	}
	defer before.tx.Rollback()
	holdBack.Store(false)
	waitFor(t, "a checkpoint", func() bool { return s.commit.Flush(context.Background()) == nil })
	_ = s.db.View(func(tx *bolt.Tx) error { inBolt = tx.Bucket(sessionsBucket).Stats().KeyN; return nil })
	if inBolt != 3 {
		t.Fatalf("bbolt holds %d sessions after the checkpoint, want 3", inBolt)
	}
	checkHeld(t, s, held, true)
	for seat := range held {
		var got seats.Seat
		if err := decodeSeat(before.get(seatsOf("ev"), seat), &got); err != nil || got.Status != seats.Locked {
			t.Errorf("the snapshot from before the checkpoint: seat %s %v, %v", seat, got.Status, err)
		}
	}
}

// TestFailingCheckpoints: while checkpoints fail, writes are still
// answered and read back (the log and the overlay hold them); Close
// gives up on the checkpoint promptly with its error, and the next Open
// takes everything from the log.
func TestFailingCheckpoints(t *testing.T) {
	s, path := openNew(t)
	holdCheckpoints(s, true)
	ev := storetest.Event("ev")
	ev.HoldWindow = seats.Duration(time.Hour)
	svc := seats.NewService(s, func() time.Time { return storetest.T0 })
	if _, err := svc.CreateEvent(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	held := heldWrites(t, svc, 0, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.commit.Flush(ctx); err == nil {
		t.Fatal("a checkpoint succeeded on a disk that refuses them")
	}
	waitFor(t, "a checkpoint to fail", func() bool { return s.Stats().FailedCheckpoints > 0 })
	maps.Copy(held, heldWrites(t, svc, 5, 3))
	checkHeld(t, s, held, true)
	// A flush with all the time in the world (the sweep's) answers the
	// failure at once, and writes go on beside it.
	flushed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		flushed <- s.commit.Flush(ctx)
	}()
	beside, cancel := context.WithTimeout(context.Background(), 10*checkpointRetry)
	defer cancel()
	if _, err := svc.OpenSession(beside, "ev", "beside", "t-beside", storetest.T0, nil); err != nil {
		t.Fatalf("a write beside the flush: %v", err)
	}
	select {
	case err := <-flushed:
		if err == nil {
			t.Fatal("a flush succeeded on a disk that refuses checkpoints")
		}
	case <-time.After(10 * checkpointRetry):
		t.Fatal("a flush waited for a checkpoint that keeps failing")
	}
	maps.Copy(held, heldWrites(t, svc, 10, 2))

	start := time.Now()
	if err := s.Close(); err == nil {
		t.Fatal("Close reported no error with its checkpoint refused")
	}
	if took := time.Since(start); took > 3*checkpointRetry {
		t.Fatalf("Close took %v with checkpoints failing", took)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	checkHeld(t, r, held, true)
}

// TestFailedSyncLeavesNoRecord: a record whose sync failed (its bytes may
// be on the disk all the same) fails its writes, and neither the next
// record written in its place, nor a turn of the log to the other file,
// nor reopening brings it back; the next writes go on.
func TestFailedSyncLeavesNoRecord(t *testing.T) {
	for _, turn := range []bool{false, true} {
		t.Run(fmt.Sprint("turn ", turn), func(t *testing.T) {
			s, svc, path := newEventStore(t)
			held := holdCheckpoints(s, false)
			kept := heldWrites(t, svc, 0, 3)
			var fail atomic.Bool
			s.log.sync = func(f *os.File) error {
				if fail.CompareAndSwap(true, false) {
					return errors.New("the disk refuses")
				}
				return fdatasync(f)
			}
			fail.Store(true)
			ctx := context.Background()
			if sess, err := svc.OpenSession(ctx, "ev", "lost", "t-lost", storetest.T0, nil); err == nil {
				t.Fatalf("a write whose sync failed was answered: %+v", sess)
			}
			if turn {
				flush(t, s) // the log turns to its other file at once
			}
			// Held back from here, so that the failed record's number is
			// not yet applied when the copy is opened.
			held.Store(true)
			maps.Copy(kept, heldWrites(t, svc, 3, 4))
			copied := crashCopy(t, s, path)
			r, err := Open(copied)
			if err != nil {
				t.Fatalf("reopening after a failed sync: %v", err)
			}
			defer r.Close()
			checkHeld(t, r, kept, true)
			// Had the failed write come back, its waiting token would be used.
			again := seats.NewService(r, func() time.Time { return storetest.T0 })
			if _, err := again.OpenSession(ctx, "ev", "lost", "t-lost", storetest.T0, nil); err != nil {
				t.Fatalf("the failed write's token, used again after reopening: %v", err)
			}
		})
	}
}

// TestQuietStoreIsCheckpointed: the overlay of a store no write follows
// is checkpointed all the same, checkpointAge after its last write.
func TestQuietStoreIsCheckpointed(t *testing.T) {
	s, svc, _ := newEventStore(t)
	before := s.Stats().Checkpoints
	heldWrites(t, svc, 0, 1)
	waitFor(t, "the quiet store's checkpoint", func() bool { return s.Stats().Checkpoints > before })
	var inBolt bool
	_ = s.db.View(func(tx *bolt.Tx) error { inBolt = tx.Bucket(sessionsBucket).Stats().KeyN == 1; return nil })
	if !inBolt {
		t.Fatal("the checkpoint did not take the write into bbolt")
	}
}

// holdCheckpoints makes the store's checkpoints fail while the returned
// switch is on (it starts as on says): the log alone keeps the writes.
func holdCheckpoints(s *Store, on bool) *atomic.Bool {
	held := new(atomic.Bool)
	held.Store(on)
	s.commit.beforeCheckpoint = func() error {
		if held.Load() {
			return errors.New("checkpoints held back")
		}
		return nil
	}
	return held
}
