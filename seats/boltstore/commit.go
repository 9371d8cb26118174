package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// maxGroup caps the writes of one group commit.
const maxGroup = 512

// A memtable is checkpointed into bbolt once its records reach
// checkpointBytes of the log, or once a group ends checkpointAge after its
// first, or checkpointAge after the last group when no other follows:
// bbolt's commit is paid once for many groups, whose writes often fall on
// the same pages. Writes wait for
// the checkpoint in progress once maxLogged bytes are logged and not yet
// in bbolt, so a slow disk bounds the memory the overlay takes. A
// checkpoint that fails (its transaction, or its sync) is tried again
// every checkpointRetry; the log keeps its changes meanwhile.
const (
	checkpointBytes = 4 << 20
	checkpointAge   = 200 * time.Millisecond
	maxLogged       = 64 << 20
	checkpointRetry = time.Second
)

// errClosed answers a write that arrives after Close.
var errClosed = errors.New("seat store closed")

// committer group-commits writes. One goroutine takes the writes that are
// waiting, runs their functions one after the other over one snapshot
// (each sees the changes of those before it), writes the group's changes
// as one log record with one fdatasync (wal.go), adds them to the overlay
// the reads consult (overlay.go), and answers every member. There is no
// timer: an idle committer commits a lone write at once, and under load a
// group is whatever arrived during the commit before it, so it grows with
// the load and the sync is shared by more writes exactly when there are
// more. Another goroutine checkpoints the overlay into bbolt behind it.
//
// A member whose function fails (an error from bbolt or a corrupt value:
// a rule's refusal is a result, not a failure) may have changed part of
// what it meant to, so the group's changes are dropped, the failed member
// runs again alone and gets its own error, and the others run again
// together: functions must be safe to run again (they reset what they
// report). An answered write is in the log, synced; no member is answered
// before its group's record is, and a failed record fails every member.
type committer struct {
	db  *bolt.DB
	log *wal
	// hooks learns of every group's start and end (the store's in-memory
	// index of idempotency records follows what is logged).
	hooks txHooks
	// queue holds the writes waiting for a group, in arrival order, under
	// qmu; wake tells the committer there are some (one signal is
	// enough). A write still in the queue can give up (its context,
	// Close) with nothing written; one the committer took always runs
	// (its done channel is buffered: the answer never waits for a
	// reader). A waiting writer blocks once, on its answer: taking a
	// group wakes none of them, so the goroutines the committer readies
	// are the ones it answers.
	qmu   sync.Mutex
	queue []*write
	wake  chan struct{}
	// flushes asks for everything logged to be checkpointed into bbolt.
	flushes chan flushRequest
	stop    chan struct{}
	done    chan struct{}

	// mu guards mem's changes and both memtables' places: mem is what the
	// committing goroutine adds to, frozen the one a checkpoint is
	// applying (nil when none is).
	mu          sync.RWMutex
	mem, frozen *memtable
	// The committing goroutine's: the last record's number, the buffer a
	// record is encoded in, and whether a checkpoint it handed off has not
	// yet reported.
	seq           uint64
	buf           []byte
	checkpointing bool
	// toCheckpoint hands the checkpointer a frozen memtable; checkpointed
	// is its report (nil, or its error once quit made it give up).
	toCheckpoint chan *memtable
	checkpointed chan error
	quit         chan struct{}
	checkpointer chan struct{} // closed when the checkpointer has stopped
	// failedAttempt tells the committing goroutine of a failed attempt
	// of the checkpoint in progress (sent without waiting: one is
	// enough), so a flush answers it rather than hold the writes; cleared
	// counts the frozen memtables dropped, so a snapshot can tell that one
	// was dropped while it began.
	failedAttempt chan error
	cleared       atomic.Uint64

	// commits and writes count group commits and their members since Open;
	// busy is the time spent running and committing groups, in ns, and
	// syncing the part of it spent writing and syncing their records;
	// logged counts the records' bytes. checkpoints counts checkpoints,
	// failed the attempts that failed, and pages the pages they wrote
	// (bbolt's TxStats.Write: the meta page and every dirty page).
	commits, writes, busy, syncing, logged atomic.Int64
	checkpoints, failed, pages             atomic.Int64
	// waiting counts the writes in queue and taken the writes taken from
	// it (tests wait for a full group).
	waiting, taken atomic.Int64
	// afterMember, in tests, runs after member i of a group of n ran,
	// before the group's record is written (the crash test dies there).
	afterMember func(i, n int)
	// beforeCheckpoint, in tests, fails a checkpoint with its error.
	beforeCheckpoint func() error
}

// flushRequest is a Flush waiting for its answer.
type flushRequest struct {
	ctx   context.Context
	reply chan error
}

// write is one member of a group commit.
type write struct {
	fn   func(*txn) error
	done chan error
}

// answer gives the member its outcome, dropping its function first: what
// the closure holds (a sweep's list of old records) is garbage once its
// caller has the answer, not only after the next group.
func (w *write) answer(err error) {
	w.fn = nil
	w.done <- err
}

// txHooks is told when the committer begins a group and whether its
// changes were logged, before any member is answered.
type txHooks interface {
	begin()
	end(committed bool)
}

// newCommitter starts committing after the log record seq, with bbolt
// holding every record up to it.
func newCommitter(db *bolt.DB, log *wal, seq uint64, hooks txHooks) *committer {
	c := &committer{
		db: db, log: log, seq: seq, hooks: hooks,
		wake: make(chan struct{}, 1), flushes: make(chan flushRequest), stop: make(chan struct{}), done: make(chan struct{}),
		mem:          newMemtable(),
		toCheckpoint: make(chan *memtable, 1), checkpointed: make(chan error, 1), failedAttempt: make(chan error, 1), quit: make(chan struct{}), checkpointer: make(chan struct{}),
	}
	go c.checkpointLoop()
	go c.run()
	return c
}

// close stops the committer once the group in progress is answered (later
// writes get errClosed) and checkpoints what is logged, so that a store
// closed cleanly is whole in its bbolt file. If that checkpoint fails, the
// log still holds the changes for the next Open.
func (c *committer) close() error {
	close(c.stop)
	<-c.done
	close(c.quit) // a checkpoint failing now gives up after one more try
	err := c.flush(context.Background(), nil)
	close(c.toCheckpoint)
	<-c.checkpointer
	return err
}

// do runs fn in a group commit and returns its error once the group is
// committed. A write that ctx ends (or Close stops) before the committer
// takes it changes nothing. One that ctx ends after it was taken is left to
// finish without its caller, who gets ctx's error: its outcome is unknown
// then, as after any timeout, and a retry with its idempotency key finds
// the record if it committed. (The API runs writes under their own
// WriteTimeout, not the client's cancellation, so this is a stuck disk's
// answer, never a hang.)
func (c *committer) do(ctx context.Context, fn func(*txn) error) error {
	w := writes.Get().(*write)
	w.fn = fn
	c.qmu.Lock()
	c.queue = append(c.queue, w)
	c.waiting.Add(1)
	c.qmu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // the committer has a signal it has not taken yet
	}
	select {
	case err := <-w.done:
		writes.Put(w)
		return err
	case <-ctx.Done():
		if c.withdraw(w) {
			return fmt.Errorf("waiting for a commit: %w", ctx.Err())
		}
	case <-c.stop:
		if c.withdraw(w) {
			return errClosed
		}
	}
	select { // taken: the group under way answers it
	case err := <-w.done:
		writes.Put(w)
		return err
	case <-ctx.Done():
		return fmt.Errorf("waiting for a group commit (the write may yet commit): %w", ctx.Err())
	}
}

// writes are reused: a write goes back once its caller has its answer
// (never after giving up on it: the committer may yet answer it).
var writes = sync.Pool{New: func() any { return &write{done: make(chan error, 1)} }}

// withdraw takes w out of the queue if the committer has not taken it.
func (c *committer) withdraw(w *write) bool {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	i := slices.Index(c.queue, w)
	if i < 0 {
		return false
	}
	c.queue = slices.Delete(c.queue, i, i+1)
	c.waiting.Add(-1)
	return true
}

// take appends the waiting writes to group, up to maxGroup; if more
// wait, the committer is woken again for them.
func (c *committer) take(group []*write) []*write {
	c.qmu.Lock()
	n := min(len(c.queue), maxGroup-len(group))
	group = append(group, c.queue[:n]...)
	rest := copy(c.queue, c.queue[n:])
	clear(c.queue[rest:])
	c.queue = c.queue[:rest]
	c.waiting.Add(int64(-n))
	c.qmu.Unlock()
	c.taken.Add(int64(n))
	if rest > 0 {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return group
}

func (c *committer) run() {
	defer close(c.done)
	group := make([]*write, 0, maxGroup)
	// idle checkpoints an overlay no write followed for checkpointAge.
	idle := time.NewTimer(checkpointAge)
	idle.Stop()
	defer idle.Stop()
	for {
		select {
		case <-c.wake:
			if group = c.take(group[:0]); len(group) == 0 {
				continue // the writes that signalled gave up
			}
		case req := <-c.flushes:
			req.reply <- c.flush(req.ctx, c.stop)
			continue
		case err := <-c.checkpointed:
			c.reported()
			if err == nil && !c.maybeCheckpoint() {
				return
			}
			c.rearm(idle)
			continue
		case <-idle.C:
			if !c.maybeCheckpoint() {
				return
			}
			continue
		case <-c.stop:
			return
		}
		start := time.Now()
		c.commit(group)
		c.busy.Add(int64(time.Since(start)))
		if !c.maybeCheckpoint() {
			return
		}
		c.rearm(idle)
	}
}

// rearm sets the idle timer when the overlay holds changes no checkpoint
// has taken.
func (c *committer) rearm(idle *time.Timer) {
	if c.mem.bytes > 0 && !c.checkpointing {
		idle.Reset(checkpointAge)
	}
}

// commit runs a group and answers each member.
func (c *committer) commit(group []*write) {
	for len(group) > 0 {
		failed, ferr := -1, error(nil)
		err := c.update(func(t *txn) error {
			for i, w := range group {
				if ferr = call(w.fn, t); ferr != nil {
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
		// The group's changes are dropped: the failed member alone gets
		// its error (run again by itself, it may as well succeed: then it
		// is committed like any write), the rest go again.
		w := group[failed]
		group = slices.Delete(slices.Clone(group), failed, failed+1)
		err = c.update(func(t *txn) error { return call(w.fn, t) })
		if err == nil {
			c.commits.Add(1)
			c.writes.Add(1)
		}
		w.answer(err)
	}
}

// update runs fn over a snapshot and, if it succeeds, logs its changes
// (a group that changed nothing has nothing to log) and adds them to the
// overlay, telling the hooks.
func (c *committer) update(fn func(*txn) error) error {
	snap, err := c.snapshot(true)
	if err != nil {
		return err
	}
	defer snap.tx.Rollback()
	t := &txn{snapshot: snap, changes: map[place]change{}}
	c.hooks.begin()
	committed := false
	defer func() { c.hooks.end(committed) }()
	err = fn(t)
	// Done with bbolt before taking the lock: a commit that remaps the
	// file waits for every read transaction, and readers may wait for
	// the lock. (Nothing put aliases bbolt's memory: txn.put.)
	_ = snap.tx.Rollback()
	if err != nil {
		return err
	}
	if len(t.changes) > 0 {
		if err := c.logChanges(t.changes); err != nil {
			return err
		}
	}
	committed = true
	return nil
}

// logChanges writes a group's changes as the next log record, synced,
// and then adds them to the overlay.
func (c *committer) logChanges(changes map[place]change) error {
	c.buf = c.log.encode(c.buf[:0], c.seq+1, changes)
	start := time.Now()
	err := c.log.append(c.buf)
	c.syncing.Add(int64(time.Since(start)))
	n := len(c.buf)
	if cap(c.buf) > 1<<20 { // a purge's large record: not kept for the next
		c.buf = nil
	}
	if err != nil {
		return err
	}
	c.seq++
	c.logged.Add(int64(n))
	c.mu.Lock()
	c.mem.add(changes, c.seq, n, start)
	c.mu.Unlock()
	return nil
}

// maybeCheckpoint hands the overlay to the checkpointer once it is large
// or old enough and no checkpoint is in progress. Past maxLogged it waits
// for the one in progress first; false if Close stopped it waiting.
func (c *committer) maybeCheckpoint() bool {
	if c.mem.bytes == 0 {
		return true
	}
	if c.checkpointing {
		if c.mem.bytes < maxLogged {
			return true
		}
		if err := c.awaitCheckpoint(context.Background(), c.stop, false); errors.Is(err, errClosed) {
			return false
		} else if err != nil {
			return true
		}
	}
	if c.mem.bytes >= checkpointBytes || time.Since(c.mem.since) >= checkpointAge {
		c.freeze()
	}
	return true
}

// freeze hands the overlay to the checkpointer and starts a new one, its
// records in the other log file. No checkpoint is in progress: the other
// file's records are all in bbolt.
func (c *committer) freeze() {
	m := c.mem
	c.mu.Lock()
	c.frozen, c.mem = m, newMemtable()
	c.mu.Unlock()
	c.log.turn()
	c.checkpointing = true
	c.toCheckpoint <- m
}

// flush checkpoints everything logged, waiting for it. It stops waiting
// when ctx ends or stop closes (errClosed), and, with a stop, when an
// attempt of the checkpoint fails, answering its error (the checkpoint
// goes on being tried): the writes wait behind a flush, never behind a
// failing disk. Without a stop (Close's last flush) it waits for the
// checkpoint's report.
func (c *committer) flush(ctx context.Context, stop <-chan struct{}) error {
	failFast := stop != nil
	if c.checkpointing {
		if err := c.awaitCheckpoint(ctx, stop, failFast); err != nil {
			return err
		}
	}
	if c.mem.bytes == 0 {
		return nil
	}
	c.freeze()
	return c.awaitCheckpoint(ctx, stop, failFast)
}

// awaitCheckpoint waits for the checkpoint in progress to report, for ctx
// to end or for stop to close (nil: no stop), and, if failFast, for one
// of its attempts to fail.
func (c *committer) awaitCheckpoint(ctx context.Context, stop <-chan struct{}, failFast bool) error {
	var failed <-chan error
	if failFast {
		failed = c.failedAttempt
	}
	select { // a report already in wins over a failure before it
	case err := <-c.checkpointed:
		c.reported()
		return err
	default:
	}
	select {
	case err := <-c.checkpointed:
		c.reported()
		return err
	case err := <-failed:
		return err
	case <-ctx.Done():
		return fmt.Errorf("waiting for a checkpoint: %w", ctx.Err())
	case <-stop:
		return errClosed
	}
}

// reported takes the checkpoint's report: none is in progress, and its
// failed attempts are old news.
func (c *committer) reported() {
	c.checkpointing = false
	select {
	case <-c.failedAttempt:
	default:
	}
}

// Flush checkpoints everything logged into the bbolt file (the store's
// reads do not need it: they see the log's changes), waiting for it.
func (c *committer) Flush(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case c.flushes <- flushRequest{ctx, reply}:
	case <-ctx.Done():
		return fmt.Errorf("waiting to checkpoint: %w", ctx.Err())
	case <-c.stop:
		return errClosed
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return fmt.Errorf("waiting for a checkpoint: %w", ctx.Err())
	}
}

// checkpointLoop applies each frozen memtable to bbolt, trying again
// until it succeeds or quit, then drops it from the overlay and reports.
func (c *committer) checkpointLoop() {
	defer close(c.checkpointer)
	for m := range c.toCheckpoint {
		err := c.checkpoint(m)
		for err != nil {
			c.failed.Add(1)
			select {
			case c.failedAttempt <- err:
			default:
			}
			select {
			case <-time.After(checkpointRetry):
				err = c.checkpoint(m)
				continue
			case <-c.quit:
			}
			break
		}
		if err == nil {
			c.mu.Lock()
			c.frozen = nil
			c.cleared.Add(1)
			c.mu.Unlock()
		}
		c.checkpointed <- err
	}
}

// checkpoint applies a memtable's changes to bbolt in one synced
// transaction, with the number of its last record.
func (c *committer) checkpoint(m *memtable) error {
	if c.beforeCheckpoint != nil {
		if err := c.beforeCheckpoint(); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	tx, err := c.db.Begin(true)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := apply(tx, m.changes, m.last); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	c.checkpoints.Add(1)
	stats := tx.Stats()
	c.pages.Add(stats.GetWrite())
	return nil
}

// apply puts changes into bbolt, in key order, and records that the log
// is applied up to the record last.
func apply(tx *bolt.Tx, changes map[place]change, last uint64) error {
	var (
		name string
		b    *bolt.Bucket
	)
	for _, p := range sortedPlaces(changes) {
		if b == nil || p.bucket != name {
			if name, b = p.bucket, bucketOf(tx, p.bucket); b == nil {
				return fmt.Errorf("bucket %q is missing", p.bucket)
			}
			if p.bucket == string(keyLogBucket) {
				b.FillPercent = 1 // only ever appended to
			}
		}
		ch := changes[p]
		var err error
		if ch.deleted {
			err = b.Delete([]byte(p.key))
		} else {
			err = b.Put([]byte(p.key), ch.value)
		}
		if err != nil {
			return fmt.Errorf("%q in %q: %w", p.key, p.bucket, err)
		}
	}
	return tx.Bucket(metaBucket).Put(appliedKey, binary.BigEndian.AppendUint64(nil, last))
}

// call runs a member's function, turning a panic into its error.
func call(fn func(*txn) error, tx *txn) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("write panicked: %v", p)
		}
	}()
	return fn(tx)
}

// Stats are a store's group commits and checkpoints since Open.
type Stats struct {
	// Commits is how many groups committed (one that changed nothing
	// writes no record); Writes is how many writes they held
	// (Writes/Commits is the mean group size).
	Commits, Writes int64
	// Busy is how long the committer spent running and committing groups:
	// over a stretch of time, the share of it the one committing goroutine
	// was busy. Near 100% the commits bound the store's throughput; well
	// below, something else does.
	Busy time.Duration
	// Syncing is the part of Busy spent writing the groups' log records,
	// each followed by an fdatasync. The rest is the members' functions
	// (reads, rules, encoding) and encoding the records.
	Syncing time.Duration
	// Logged is the bytes of the records.
	Logged int64
	// Checkpoints is how many checkpoints applied the log to bbolt, and
	// Pages the pages they wrote, each meta page included; FailedCheckpoints
	// counts the attempts that failed (each is tried again).
	Checkpoints, Pages, FailedCheckpoints int64
}

// Stats returns the store's group-commit counts.
func (s *Store) Stats() Stats {
	c := s.commit
	return Stats{
		Commits: c.commits.Load(), Writes: c.writes.Load(),
		Busy: time.Duration(c.busy.Load()), Syncing: time.Duration(c.syncing.Load()), Logged: c.logged.Load(),
		Checkpoints: c.checkpoints.Load(), Pages: c.pages.Load(), FailedCheckpoints: c.failed.Load(),
	}
}
