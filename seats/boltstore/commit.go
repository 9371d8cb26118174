package boltstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// maxGroup caps the writes of one group commit: a group's transaction
// holds every member's dirty pages until its commit.
const maxGroup = 512

// errClosed answers a write that arrives after Close.
var errClosed = errors.New("seat store closed")

// committer group-commits writes. One goroutine takes the writes that are
// waiting, runs their functions one after the other in one bbolt
// transaction and commits it with one fsync; every member then gets its
// own answer. There is no timer: an idle committer commits a lone write at
// once, and under load a group is whatever arrived during the commit
// before it, so it grows with the load and the fsync is shared by more
// writes exactly when there are more. (bbolt's DB.Batch waits up to
// MaxBatchDelay to gather a group and then queues whole groups behind the
// commit in progress, which splits the load into more, smaller commits.)
//
// A member whose function fails (an error from bbolt or a corrupt value:
// a rule's refusal is a result, not a failure) may have written part of its
// change, so the group's transaction is rolled back, the failed member runs
// again alone and gets its own error, and the others run again together:
// functions must be safe to run again (they reset what they report). An
// answered write is on disk; no member is answered before the group's
// commit, and a failed commit fails every member.
type committer struct {
	db *bolt.DB
	// hooks learns of every transaction's start and end (the store's
	// in-memory index of idempotency records follows its commits).
	hooks txHooks
	// queue is unbuffered: a waiting write is a sender blocked on it, so a
	// write that was never received can give up (its context, Close) with
	// nothing written, and one that was received always runs (its done
	// channel is buffered: the answer never waits for a reader).
	queue chan *write
	stop  chan struct{}
	done  chan struct{}
	// commits and writes count group commits and their members since Open;
	// busy is the time spent running and committing groups, in ns, and
	// syncing the part of it spent in bbolt's Commit (writing the dirty
	// pages and the meta page, each followed by an fdatasync).
	// pages counts the pages the commits wrote (bbolt's TxStats.Write:
	// the meta page and every dirty page, an overflow run counted once).
	commits, writes, busy, syncing, pages atomic.Int64
	// waiting counts writes blocked on queue and taken the writes taken
	// from it (tests wait for a full group).
	waiting, taken atomic.Int64
	// afterMember, in tests, runs after member i of a group of n ran,
	// inside the group's transaction (the crash test dies there).
	afterMember func(i, n int)
}

// write is one member of a group commit.
type write struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// answer gives the member its outcome, dropping its function first: what
// the closure holds (a sweep's list of old records, an import's seats) is
// garbage once its caller has the answer, not only after the next group.
func (w *write) answer(err error) {
	w.fn = nil
	w.done <- err
}

// txHooks is told when the committer begins a transaction and whether
// it committed, before any member is answered.
type txHooks interface {
	begin()
	end(committed bool)
}

func newCommitter(db *bolt.DB, hooks txHooks) *committer {
	c := &committer{db: db, hooks: hooks, queue: make(chan *write), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

// close stops the committer once the group in progress is answered; later
// writes get errClosed.
func (c *committer) close() {
	close(c.stop)
	<-c.done
}

// do runs fn in a group commit and returns its error once the group is
// committed. A write that ctx ends (or Close stops) before the committer
// takes it changes nothing. One that ctx ends after it was taken is left to
// finish without its caller, who gets ctx's error: its outcome is unknown
// then, as after any timeout, and a retry with its idempotency key finds
// the record if it committed. (The API runs writes under their own
// WriteTimeout, not the client's cancellation, so this is a stuck disk's
// answer, never a hang.)
func (c *committer) do(ctx context.Context, fn func(*bolt.Tx) error) error {
	w := &write{fn: fn, done: make(chan error, 1)}
	c.waiting.Add(1)
	select {
	case c.queue <- w:
		c.waiting.Add(-1)
	case <-ctx.Done():
		c.waiting.Add(-1)
		return fmt.Errorf("waiting for a commit: %w", ctx.Err())
	case <-c.stop:
		c.waiting.Add(-1)
		return errClosed
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("waiting for a group commit (the write may yet commit): %w", ctx.Err())
	}
}

func (c *committer) run() {
	defer close(c.done)
	group := make([]*write, 0, maxGroup)
	for {
		select {
		case w := <-c.queue:
			c.taken.Add(1)
			group = append(group[:0], w)
		case <-c.stop:
			return
		}
	gather: // everything already waiting joins the group
		for len(group) < maxGroup {
			select {
			case w := <-c.queue:
				c.taken.Add(1)
				group = append(group, w)
			default:
				break gather
			}
		}
		start := time.Now()
		c.commit(group)
		c.busy.Add(int64(time.Since(start)))
	}
}

// commit runs a group in one transaction and answers each member.
func (c *committer) commit(group []*write) {
	for len(group) > 0 {
		failed, ferr := -1, error(nil)
		err := c.update(func(tx *bolt.Tx) error {
			for i, w := range group {
				if ferr = call(w.fn, tx); ferr != nil {
					failed = i
					return ferr
				}
				if c.afterMember != nil {
					c.afterMember(i, len(group))
				}
			}
			return nil
		})
		if failed < 0 {
			if err == nil {
				c.commits.Add(1)
				c.writes.Add(int64(len(group)))
			}
			for _, w := range group {
				w.answer(err)
			}
			return
		}
		// The transaction is rolled back: the failed member alone gets
		// its error (run again by itself, it may as well succeed: then it
		// is committed like any write), the rest go again.
		w := group[failed]
		group = slices.Delete(slices.Clone(group), failed, failed+1)
		err = c.update(func(tx *bolt.Tx) error { return call(w.fn, tx) })
		if err == nil {
			c.commits.Add(1)
			c.writes.Add(1)
		}
		w.answer(err)
	}
}

// update is bbolt's DB.Update, counting the time its Commit takes and
// telling the hooks.
func (c *committer) update(fn func(*bolt.Tx) error) error {
	tx, err := c.db.Begin(true)
	if err != nil {
		return err
	}
	c.hooks.begin()
	committed := false
	defer func() { c.hooks.end(committed) }()
	defer func() {
		if tx.DB() != nil { // not committed: a panic in bbolt
			_ = tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	start := time.Now()
	err = tx.Commit()
	c.syncing.Add(int64(time.Since(start)))
	if err == nil {
		committed = true
		stats := tx.Stats()
		c.pages.Add(stats.GetWrite())
	}
	return err
}

// call runs a member's function, turning a panic into its error.
func call(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("write panicked: %v", p)
		}
	}()
	return fn(tx)
}

// Stats are a store's group commits since Open.
type Stats struct {
	// Commits is how many transactions committed writes; Writes is how
	// many writes they held (Writes/Commits is the mean group size).
	Commits, Writes int64
	// Busy is how long the committer spent running and committing groups:
	// over a stretch of time, the share of it the one committing goroutine
	// was busy. Near 100% the commits bound the store's throughput; well
	// below, something else does.
	Busy time.Duration
	// Syncing is the part of Busy spent in bbolt's commit: writing the
	// group's pages and its meta page, each followed by an fdatasync. The
	// rest is the members' functions (reads, rules, encoding, puts) and
	// beginning the transaction.
	Syncing time.Duration
	// Pages is how many pages the commits wrote, each meta page included:
	// a commit's fdatasync takes longer the more pages it flushes.
	Pages int64
}

// Stats returns the store's group-commit counts.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.commit.commits.Load(), Writes: s.commit.writes.Load(), Busy: time.Duration(s.commit.busy.Load()), Syncing: time.Duration(s.commit.syncing.Load()), Pages: s.commit.pages.Load()}
}
