package boltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fairgate/fairgate/seats/storetest"
)

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, _ := openNew(t)
	t.Cleanup(func() { s.Close() })
	return s
}

// openNew opens a store on a new file and returns it with the file's
// path; the caller closes it.
func openNew(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seats.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}

// holdCommits blocks the committer until the returned function is called
// with the number of writes that must be waiting by then: it gives the
// committer a write of its own that waits to be let go, which the
// committer takes alone. Every later write waits in the queue, so once
// released they form one group (after the blocker's own commit of one
// write).
func holdCommits(t *testing.T, s *Store) (release func(waiting int)) {
	t.Helper()
	unlock := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(unlock) }) }
	t.Cleanup(open) // before Close, even after a failure
	taken := s.commit.taken.Load()
	blocker := make(chan error, 1)
	go func() {
		blocker <- s.commit.do(context.Background(), func(*txn) error {
			<-unlock
			return nil
		})
	}()
	waitFor(t, "the committer to take the blocking write", func() bool { return s.commit.taken.Load() == taken+1 })
	return func(waiting int) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d writes waiting", waiting), func() bool { return s.commit.waiting.Load() == int64(waiting) })
		open()
		if err := <-blocker; err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for try := 0; !cond(); try++ {
		if try == 1000 {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGroupedWritesShareOneCommit is the conformance suite's GroupedWrites
// with its writes in one group commit for sure.
func TestGroupedWritesShareOneCommit(t *testing.T) {
	s := openTemp(t)
	var before Stats
	storetest.GroupedWrites(t, s, func() func(int) {
		before = s.Stats()
		return holdCommits(t, s)
	})
	got := s.Stats()
	if commits, writes := got.Commits-before.Commits, got.Writes-before.Writes; commits != 2 || writes != 11 {
		t.Fatalf("%d commits of %d writes, want 2 of 11 (the blocker's, then one group of ten)", commits, writes)
	}
	if got.Busy <= before.Busy {
		t.Fatalf("the committer's busy time did not grow: %v to %v", before.Busy, got.Busy)
	}
	if synced, busy := got.Syncing-before.Syncing, got.Busy-before.Busy; synced <= 0 || synced > busy {
		t.Fatalf("%v of %v busy writing the log, want some and at most all", synced, busy)
	}
	// The group of ten is one record holding its seats, sessions and
	// idempotency records (the blocker changed nothing: no record).
	if logged := got.Logged - before.Logged; logged < 10*200 {
		t.Fatalf("the group logged %d bytes, want its ten writes' changes", logged)
	}
}

// TestFailedMemberRollsBack: a member of a group that fails after writing
// part of its change leaves nothing behind and gets its own error; a
// member that panics likewise; the others commit.
func TestFailedMemberRollsBack(t *testing.T) {
	s := openTemp(t)
	bucket := []byte("test")
	if err := s.db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
	broken := errors.New("broken")
	put := func(k string, then func() error) func(*txn) error {
		return func(t *txn) error {
			if err := t.put(string(bucket), k, []byte(k)); err != nil {
				return err
			}
			return then()
		}
	}
	ok := func() error { return nil }
	fns := map[string]func(*txn) error{
		"a":     put("a", ok),
		"fails": put("fails", func() error { return broken }),
		"b":     put("b", ok),
		"panic": put("panic", func() error { panic("bad value") }),
		"c":     put("c", ok),
	}
	release := holdCommits(t, s)
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.commit.do(context.Background(), fn)
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}()
	}
	release(len(fns))
	wg.Wait()
	for name := range fns {
		want := name != "fails" && name != "panic"
		if got := errs[name] == nil; got != want {
			t.Errorf("%s: error %v", name, errs[name])
		}
	}
	if !errors.Is(errs["fails"], broken) {
		t.Errorf("the failed member's error: %v", errs["fails"])
	}
	err := s.commit.read(func(r *snapshot) error {
		for name := range fns {
			stored := r.get(string(bucket), name) != nil
			if stored != (errs[name] == nil) {
				t.Errorf("%s stored %v, answered %v", name, stored, errs[name])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWriteGivesUpBeforeItsGroup: a write whose context ends while it waits
// for the committer changes nothing; one whose context ends once its group
// runs answers with the context's error and commits all the same; one that
// arrives after Close is refused.
func TestWriteGivesUpBeforeItsGroup(t *testing.T) {
	s := openTemp(t)
	release := holdCommits(t, s)
	ran := false
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := s.commit.do(ctx, func(*txn) error { ran = true; return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write past its deadline: %v", err)
	}
	release(0)

	// Taken, then given up on while its group runs: its caller hears of
	// its context, and the write still commits.
	running, proceed := make(chan struct{}), make(chan struct{})
	late, cancelLate := context.WithCancel(context.Background())
	lateErr := make(chan error, 1)
	go func() {
		lateErr <- s.commit.do(late, func(t *txn) error {
			close(running)
			<-proceed
			return t.put(string(sessionsBucket), "late", []byte("late"))
		})
	}()
	<-running
	cancelLate()
	if err := <-lateErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("a write cancelled after it was taken: %v", err)
	}
	close(proceed)
	waitFor(t, "the late write to commit", func() bool {
		found := false
		_ = s.commit.read(func(r *snapshot) error { found = r.get(string(sessionsBucket), "late") != nil; return nil })
		return found
	})
	if ran {
		t.Fatal("a write that gave up before it was taken ran")
	}
	if err := s.commit.close(); err != nil {
		t.Fatal(err)
	}
	if err := s.commit.do(context.Background(), func(*txn) error { return nil }); !errors.Is(err, errClosed) {
		t.Fatalf("a write after close: %v", err)
	}
	s.commit = newCommitter(s.db, s.log, s.commit.seq, s.keys) // for Close
}

// TestAnsweredWriteHoldsNothing: once a write is answered, what its
// function captured is garbage, whether its group committed or it failed
// alone; the committer, waiting for the next group, keeps none of it.
func TestAnsweredWriteHoldsNothing(t *testing.T) {
	cases := []struct {
		name string
		err  error
	}{
		{"committed", nil},
		{"failed", errors.New("refused")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openTemp(t)
			captured := new([1 << 16]byte)
			collected := make(chan struct{})
			runtime.AddCleanup(captured, func(ch chan struct{}) { close(ch) }, collected)
			err := s.commit.do(context.Background(), func(*txn) error {
				captured[0]++
				return c.err
			})
			if !errors.Is(err, c.err) {
				t.Fatalf("do: %v, want %v", err, c.err)
			}
			runtime.GC() // one collection, at once: it must find the closure unreachable
			waitFor(t, "the answered write's closure to be collected", func() bool {
				select {
				case <-collected:
					return true
				default:
					return false
				}
			})
		})
	}
}

// TestRemapDuringAGroup: a checkpoint that grows the file past its mapping
// remaps it, which waits for every read transaction, the committer's
// group's included; a read beginning meanwhile waits for the remap. None
// of the three may wait for another in a circle. (A small mapping, as a
// file past its first 1 GiB has: each growth remaps.)
func TestRemapDuringAGroup(t *testing.T) {
	c, log, db := remappingCommitter(t)
	inGroup, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c.afterMember = func(i, n int) { once.Do(func() { close(inGroup); <-release }) }
	wrote := make(chan error, 1)
	go func() {
		wrote <- c.do(context.Background(), func(t *txn) error { return t.put(string(sessionsBucket), "a", []byte("x")) })
	}()
	<-inGroup // the group holds its read transaction
	checkpointed := make(chan error, 1)
	go func() { checkpointed <- c.checkpoint(growing()) }()
	time.Sleep(100 * time.Millisecond) // the checkpoint reaches its remap
	read := make(chan error, 1)
	go func() { read <- c.read(func(*snapshot) error { return nil }) }()
	time.Sleep(100 * time.Millisecond) // the read reaches bbolt's Begin
	close(release)
	allReturn(t, "the group, the checkpoint and the read", c, log, db, wrote, checkpointed, read)
}

// TestRemapWhileAGroupSyncs: a read holds its transaction; a group is in
// its log sync; a checkpoint's remap waits for the read; a second read
// begins. The group then publishes while the first read looks up the
// overlay: neither may wait on the other's lock. (A read that began
// bbolt's transaction under the overlay's lock would close the circle.)
func TestRemapWhileAGroupSyncs(t *testing.T) {
	c, log, db := remappingCommitter(t)
	holding, lookUp := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- c.read(func(s *snapshot) error {
			close(holding)
			<-lookUp
			s.get(string(sessionsBucket), "a")
			return nil
		})
	}()
	<-holding
	syncing, synced := make(chan struct{}), make(chan struct{})
	log.sync = func(f *os.File) error { close(syncing); <-synced; return fdatasync(f) }
	wrote := make(chan error, 1)
	go func() {
		wrote <- c.do(context.Background(), func(t *txn) error { return t.put(string(sessionsBucket), "a", []byte("x")) })
	}()
	<-syncing
	checkpointed := make(chan error, 1)
	go func() { checkpointed <- c.checkpoint(growing()) }()
	time.Sleep(100 * time.Millisecond) // the checkpoint reaches its remap
	second := make(chan error, 1)
	go func() { second <- c.read(func(*snapshot) error { return nil }) }()
	time.Sleep(100 * time.Millisecond) // the second read reaches bbolt's Begin
	close(synced)
	time.Sleep(100 * time.Millisecond) // the group reaches the overlay's lock
	close(lookUp)
	allReturn(t, "the reads, the group and the checkpoint", c, log, db, first, checkpointed, second, wrote)
}

// remappingCommitter is a committer on a new file mapped only as large as
// it is, as a file past its first 1 GiB is: each growth remaps it. The
// caller closes the three (not on a failure: they would wait as well).
func remappingCommitter(t *testing.T) (*committer, *wal, *bolt.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seats.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{metaBucket, sessionsBucket} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	log, err := openWAL(path)
	if err != nil {
		t.Fatal(err)
	}
	return newCommitter(db, log, 0, newKeyIndex()), log, db
}

// growing is a memtable whose checkpoint grows the file past its mapping.
func growing() *memtable {
	m := newMemtable()
	m.add(map[place]change{{string(sessionsBucket), "big"}: {value: make([]byte, 8<<20)}}, 0, 8<<20, time.Now())
	return m
}

// allReturn waits up to 10 s for each of what returns, failing if one
// errs or they wait for each other, then closes the remapping committer's
// three (on a failure nothing is closed: it would wait as well).
func allReturn(t *testing.T, what string, c *committer, log *wal, db *bolt.DB, done ...chan error) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for _, ch := range done {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatal(err)
			}
		case <-timeout:
			t.Fatalf("%s wait for each other", what)
		}
	}
	if err := errors.Join(c.close(), log.close(), db.Close()); err != nil {
		t.Fatal(err)
	}
}
