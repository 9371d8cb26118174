package roomstate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Budget is one node's share of a room's admission budget. It reserves
// admissions from the store a block at a time and hands them out locally,
// so a node pays one store write per block, not per admission.
//
// The cluster never admits more than a window's limit: every admission
// comes out of a reservation the store granted. What a node reserved and did
// not spend before its window ended is lost to that window, so a window
// admits between Limit - nodes*(block-1) and Limit; returnHeld gives a
// remainder back early (on shutdown, or when a node stops admitting).
//
// Admissions may be reserved for a later window (Reserve): a slot given
// for a moment ahead holds its window's admission from the moment it is
// given, so no later slot, at any node, can take it.
//
// Store calls are made one at a time, under the lock. A call reserves a
// block, or one admission for itself and each taker that queued behind
// the lock meanwhile when they are more (at most maxBatch): a node's
// admissions then cost one store call per round of its crowd, not one
// each, so a slow store delays each by about one call rather than by a
// queue of them. What a batch holds beyond its takers in a window whose
// slots are spaced goes back to the store once they are served
// (returnBatch): held, it would give a place this node finds later an
// earlier slot than one another node found meanwhile and was given the
// next window. It goes back in place, or, when another node was granted
// places after it meanwhile, after every place the window granted.
// Elsewhere the next takers spend it; a window admits at least
// Limit - nodes*(maxBatch-1) at worst.
type Budget struct {
	store  Store
	room   string
	block  int64
	length time.Duration

	mu      sync.Mutex
	windows map[int64]*budgetWindow // by index, from cur's on
	// cur is the window of the latest moment seen: earlier ones are over.
	// Written under mu, read without it (inUse): a quota's rate change
	// must not wait for a store call under way.
	cur atomic.Int64
	// queued counts the takers waiting for mu.
	queued atomic.Int64
	// round counts, under mu, the takers still to be served of the last
	// batch (the one that reserved it included): the last one returns
	// what the batch left (returnBatch).
	round int64
	// spare counts, under mu, the admissions given back here (Lapse)
	// still to be returned to the store, one with a grant in each window
	// (giveSpare); spareIn is the window the last one went to, spareAt
	// when the latest was given back.
	spare, spareIn int64
	spareAt        time.Time
}

// budgetWindow is what a budget knows of one window.
type budgetWindow struct {
	held int64 // reserved from the store, not handed out
	// spent marks a window the store granted less than a block: used up
	// at the limit kept (spentAt). Refusals there cost no request until
	// the rate raises the window's limit (budget another node returns
	// later is not seen).
	spent   bool
	spentAt int64
	// given counts the admissions handed out, less those refunded: a
	// refund gives back only what was handed out there.
	given int64
	// ahead marks a window slots were given in before it came: by this
	// budget, or by any node as the store's last grant here said.
	ahead bool
	// next and end are the places in the window's order, across the
	// cluster, of the admissions held from the store: next to end-1.
	// Admissions held beyond them (refunded) are placed after the limit
	// and the lapsed ones, over counting them.
	next, end, over int64
	// lapsed is how many admissions were returned to the window after
	// their slots lapsed, as its store's last grant said or this budget
	// returned: the store grants places up to that many past its limit,
	// and refunded ones held here go after them.
	lapsed int64
	// last is the latest spaced slot handed out: a later one falls due
	// after it, whatever refunds or a new rate do to the spacing.
	last time.Time
}

// record is window idx's record, made when first needed.
func (b *Budget) record(idx int64) *budgetWindow {
	w, ok := b.windows[idx]
	if !ok {
		w = &budgetWindow{}
		b.windows[idx] = w
	}
	return w
}

// maxBatch bounds what one store call reserves for the takers queued
// behind it: about a second of a busy node's admissions.
const maxBatch = 64

// lock takes mu for a taker at now, counted among the takers queued while
// it waits, and drops what is held of windows over.
func (b *Budget) lock(now time.Time) {
	b.queued.Add(1)
	b.mu.Lock()
	b.queued.Add(-1)
	b.forget(b.index(now))
}

// unlock releases mu after a taker was served; the last taker of a batch
// returns what the batch left first. A newcomer that takes mu before a
// taker queued for the batch counts as one of its takers: the one left
// out asks the store anew, which costs a call. Waiting for the queue to
// empty instead could hold the rest for as long as a crowd lasts.
func (b *Budget) unlock(ctx context.Context) {
	defer b.mu.Unlock()
	if b.round == 0 {
		return
	}
	if b.round--; b.round == 0 {
		b.returnBatch(ctx)
	}
}

// spacedIn reports whether window w, of index idx, spaces its slots: it
// is ahead of now (the window of the latest moment seen), or slots were
// given ahead in it. Callers hold mu.
func (b *Budget) spacedIn(idx int64, w *budgetWindow) bool {
	return idx > b.cur.Load() || w.ahead
}

// returnBatch gives back to the store the admissions this budget holds
// beyond a block's rest in windows whose slots are spaced (ahead of now,
// or given ahead in): another node's place found after the batch then
// takes them, in its order, instead of a place this node finds later. It
// gives back the last places held, so those it keeps stay the window's
// next ones. When another node was granted places after them since, the
// store takes them back lapsed, at places after every place granted
// (Store.ReturnBudget): at their own places, they would be that node's
// places again. A return whose outcome is unknown counts as made: the
// store may have them, and holding them here too could admit more than
// the window's limit; only a store the guard did not ask keeps them.
// The request that returns them may be gone: the call is its own.
// Callers hold mu.
func (b *Budget) returnBatch(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for idx, w := range b.windows {
		extra := w.end - w.next - (b.block - 1)
		if extra <= 0 || !b.spacedIn(idx, w) {
			continue
		}
		// A return names the window's item; its limit plays no part.
		err := b.store.ReturnBudget(ctx, b.room, b.window(idx, 0), extra, w.end)
		if errors.Is(err, ErrUnavailable) {
			continue
		}
		w.held -= extra
		w.end -= extra
		if err == nil {
			w.spent = false // the store holds them again: the next taker here asks it
		}
	}
}

// NewBudget returns a node's budget for room, reserving block admissions at
// a time in windows of the given length (the limit of a window is the
// target rate times its length).
func NewBudget(store Store, room string, block int64, length time.Duration) (*Budget, error) {
	if block < 1 {
		return nil, fmt.Errorf("budget block must be at least 1, not %d", block)
	}
	if length < time.Millisecond {
		return nil, fmt.Errorf("budget window must be at least 1ms, not %v", length)
	}
	return &Budget{store: store, room: room, block: block, length: length,
		windows: map[int64]*budgetWindow{}}, nil
}

// WindowAt is the budget window containing now for the given target rate
// (admissions per second). Its store item expires a window after it ends.
// Its limit is what the rate grants from the epoch to its end less what it
// granted to its start, whole admissions: a fractional rate alternates
// limits (2.5/s: 2, 3, 2, 3) so consecutive windows add up to the rate.
func (b *Budget) WindowAt(now time.Time, rate float64) Window {
	return b.window(b.index(now), rate)
}

func (b *Budget) index(t time.Time) int64 { return t.UnixNano() / int64(b.length) }

func (b *Budget) start(idx int64) time.Time { return time.Unix(0, idx*int64(b.length)) }

func (b *Budget) window(idx int64, rate float64) Window {
	per := rate * b.length.Seconds()
	limit := int64(math.Floor(float64(idx+1)*per) - math.Floor(float64(idx)*per))
	return Window{Index: idx, Limit: max(limit, 0), Expires: b.start(idx + 2)}
}

// Take takes one admission at now, reserving a new block from the store
// when the local one is spent. It reports false when the window's budget is
// spent across the cluster. On an error nothing was taken.
func (b *Budget) Take(ctx context.Context, now time.Time, rate float64) (bool, error) {
	b.lock(now)
	defer b.unlock(ctx)
	_, ok, err := b.takeLocked(ctx, b.index(now), rate, false)
	return ok, err
}

// takeIn takes one admission of the window holding at (never before now),
// as Take; only the windows before now's are over.
func (b *Budget) takeIn(ctx context.Context, at, now time.Time, rate float64) (bool, error) {
	b.lock(now)
	defer b.unlock(ctx)
	_, ok, err := b.takeLocked(ctx, b.index(later(at, now)), rate, false)
	return ok, err
}

// budgetLookahead is how many windows past its moment Reserve looks for
// one with budget left.
const budgetLookahead = 4096

// RateAt is the target rate of the window starting at start.
type RateAt func(start time.Time) float64

// Steady is the RateAt of a rate that does not change.
func Steady(rate float64) RateAt { return func(time.Time) float64 { return rate } }

// errBudgetSpent is Reserve's answer when no window within its look-ahead
// has budget left.
var errBudgetSpent = errors.New("admission budget spent as far ahead as it is reserved")

// Reserve takes one admission for a slot at or after at (never before now):
// from the window holding it, or the first later one with budget left.
// The slot is at, or its place in the window in the order the store
// granted the window's admissions across the cluster (spaced) when later,
// in a window any node gave slots in ahead of it (as the store's grant
// says, or this budget did): so a place found once the window has come,
// at whichever node, does not go before one given a slot there earlier.
// In a window nobody was given a slot ahead in, an admission is at once
// (the burst), and a slot asked for a moment ahead is that moment when
// its place in line has come by then: it holds no place in line. On an
// error nothing was taken.
func (b *Budget) Reserve(ctx context.Context, at, now time.Time, rate RateAt) (time.Time, error) {
	at = later(at, now)
	b.lock(now)
	defer b.unlock(ctx)
	from := b.index(at)
	for idx := from; idx < from+budgetLookahead; idx++ {
		r := rate(b.start(idx))
		// Only a slot pushed past the window asked for marks its window
		// ahead in the store: a moment ahead whose place in line has come
		// by then holds none (below), and the window keeps its burst.
		pos, ok, err := b.takeLocked(ctx, idx, r, idx > from && idx > b.index(now))
		if err != nil {
			return time.Time{}, err
		}
		if !ok {
			continue
		}
		w, spaced := b.record(idx), b.spaced(idx, r, pos)
		switch {
		case idx > b.index(now) && idx == from && !at.Before(spaced):
			// A moment ahead holds no place in line, but falls due
			// after the slots given there before it.
			return b.after(idx, r, at, w.last), nil
		case idx > b.index(now):
			w.ahead = true
		case !w.ahead:
			return at, nil
		}
		w.last = b.after(idx, r, later(at, spaced), w.last)
		return w.last, nil
	}
	return time.Time{}, errBudgetSpent
}

// after is slot, or when it would not come after last, the latest slot
// given in window idx, a moment after last: half a spacing, or half the
// time left in the window when less, and at least a millisecond (places
// are told their slots to the millisecond), which may fall just past the
// window's end. A tie would let two places found apart go in in the order
// their requests happen to be served; here they would come from places
// held past the window's limit (refunded, takeOver) or a moment asked
// ahead.
func (b *Budget) after(idx int64, rate float64, slot, last time.Time) time.Time {
	if last.IsZero() || slot.After(last) {
		return slot
	}
	step := b.length / time.Duration(max(1, b.window(idx, rate).Limit)) / 2
	return last.Add(max(time.Millisecond, min(step, b.start(idx+1).Sub(last)/2)))
}

// spaced is the slot of the admission of window idx at place pos in the
// window's order across the cluster: the window's start plus pos, its
// limit spread evenly over it. Slots given ahead then fall due in the
// order the store granted them, at whichever node, rather than all at the
// window's start, where places found apart would tie and go in in the
// order their requests happened to be served. Places past the limit
// (admissions that came back lapsed, or refunded) fall in the window's
// last spacing, each halfway from the one before to the window's end: a
// slot depends on its place alone, never on a count that may change after
// its grant, so a later place always falls due later.
func (b *Budget) spaced(idx int64, rate float64, pos int64) time.Time {
	n := b.window(idx, rate).Limit
	if pos <= 0 || n <= 0 {
		return b.start(idx)
	}
	step := float64(b.length) / float64(n)
	at := float64(min(pos, n-1)) * step
	if past := pos - (n - 1); past > 0 {
		at += step * (1 - math.Pow(2, -float64(past)))
	}
	return b.start(idx).Add(time.Duration(at))
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// takeLocked takes one admission of window idx and returns its place in
// the window's order. A store reservation marks the window ahead when
// ahead is set.
func (b *Budget) takeLocked(ctx context.Context, idx int64, rate float64, ahead bool) (int64, bool, error) {
	if _, ok := b.windows[idx]; !ok && b.window(idx, rate).Limit == 0 {
		return 0, false, nil // nothing to take, and no record kept of it
	}
	bw := b.record(idx)
	// Admissions held without a place in the window's order (refunded
	// ones) go after the limit: taken before the store is spent, they
	// would fall due after places granted later.
	if bw.next == bw.end {
		w := b.window(idx, rate)
		if bw.spent && w.Limit <= bw.spentAt || w.Limit == 0 {
			return b.takeOver(ctx, idx, rate, ahead)
		}
		w.Ahead = ahead
		want := max(b.block, min(1+b.queued.Load(), maxBatch))
		g, err := b.store.ReserveBudget(ctx, b.room, w, want)
		if err != nil {
			if pos, ok := b.takeHeld(idx, rate); ok {
				return pos, true, nil // one this node holds already serves while the store fails
			}
			return 0, false, fmt.Errorf("reserving admission budget: %w", err)
		}
		bw.held += g.N
		bw.next, bw.end = g.First, g.First+g.N
		if want > b.block {
			// A batch: the takers queued behind this call take it, then
			// the last of them returns what they left (unlock).
			b.round = 1 + b.queued.Load()
		}
		bw.ahead = bw.ahead || g.Ahead
		bw.lapsed = max(bw.lapsed, g.Lapsed)
		if g.N < want {
			bw.spent, bw.spentAt = true, w.Limit
		}
		if g.N == 0 {
			return b.takeOver(ctx, idx, rate, ahead)
		}
		b.giveSpare(ctx, idx, bw)
	}
	bw.held--
	bw.given++
	bw.next++
	return bw.next - 1, true, nil
}

// takeOver takes one of window idx's admissions held beyond the places
// the store granted (refunded), the window's own being spent. In a window
// whose slots are spaced they go back to the store lapsed first, which
// grants them again at places of their own after every place granted:
// spent here, each would take a place past the limit counted by this node
// alone, which a refund at another node gives too, and two places found
// apart would tie. Held, they cost no store call until then.
func (b *Budget) takeOver(ctx context.Context, idx int64, rate float64, ahead bool) (int64, bool, error) {
	bw := b.record(idx)
	if bw.held <= 0 || !b.spacedIn(idx, bw) {
		pos, ok := b.takeHeld(idx, rate)
		return pos, ok, nil
	}
	taken, err := b.store.ReturnLapsed(context.WithoutCancel(ctx), b.room, b.window(idx, 0), bw.held)
	switch {
	case errors.Is(err, ErrUnavailable):
	case err != nil:
		// A return whose outcome is unknown counts as made (returnBatch):
		// nothing is left here to take.
		bw.lapsed += bw.held
		bw.held = 0
		return 0, false, nil
	case taken > 0:
		// The store takes back no more than its count of the window:
		// the rest stay here.
		bw.lapsed += taken
		bw.held -= taken
		bw.spent = false
		return b.takeLocked(ctx, idx, rate, ahead)
	}
	pos, ok := b.takeHeld(idx, rate)
	return pos, ok, nil
}

// takeHeld takes one of window idx's admissions held beyond the places the
// store granted, placed after the window's limit.
func (b *Budget) takeHeld(idx int64, rate float64) (int64, bool) {
	bw := b.record(idx)
	if bw.held <= 0 {
		return 0, false
	}
	bw.held--
	bw.given++
	bw.over++
	return b.window(idx, rate).Limit + bw.lapsed + bw.over - 1, true
}

// forget drops what is held of windows before cur: nobody can spend it any
// more.
func (b *Budget) forget(cur int64) {
	if cur <= b.cur.Load() {
		return
	}
	b.cur.Store(cur)
	for idx := range b.windows {
		if idx < cur {
			delete(b.windows, idx)
		}
	}
}

// inUse is the start of the earliest window this budget may still give
// an admission of: the window of the latest moment seen.
func (b *Budget) inUse() time.Time { return b.start(b.cur.Load()) }

// Refund puts back one admission taken for the given time, when the
// admission was refused after the decision. An admission of a window that
// has ended is gone: nobody can spend it any more. Nor is one this budget
// did not hand out in that window added (one taken from another budget
// before a window length change): the store never granted it here. Once
// this budget gave slots in line in a later window, the admission goes
// back at the end of the line, as a lapsed one does (Lapse): held in its
// window, it would go to the next place found, before those slots'
// holders. Else it is held in its window (takeOver).
func (b *Budget) Refund(at time.Time) {
	idx := b.index(at)
	b.mu.Lock()
	defer b.mu.Unlock()
	w, ok := b.windows[idx]
	if !ok || idx < b.cur.Load() || w.given <= 0 {
		return
	}
	w.given--
	if b.givenAfter(idx) {
		b.spare++
		b.spareAt = b.inUse()
		return
	}
	w.held++
}

// givenAfter reports whether this budget gave slots in line in a window
// after idx (one given slots ahead). Callers hold mu.
func (b *Budget) givenAfter(idx int64) bool {
	for i, w := range b.windows {
		if i > idx && w.ahead && w.given > 0 {
			return true
		}
	}
	return false
}

// Lapse gives back one admission taken for a slot whose holder never
// came. It goes back to the store with the next grant this budget makes
// (giveSpare), in that grant's window: at the end of the line across the
// cluster, after every slot given anywhere before it. Kept at this node,
// after the latest window it gave slots in, it would fall due before
// slots other nodes gave meanwhile wherever this node lags them (a node
// the balancer sends few visitors), for a place found after theirs.
// Spares this budget has not returned when it is replaced (a window
// length change) or returns what it holds (its room stopping) are lost,
// one admission each.
func (b *Budget) Lapse(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spare++
	b.spareAt = now
}

// spareLife is how long admissions given back wait for a grant to go with:
// past it, the crowd they were given back for has gone (this node found
// no place meanwhile), and they are dropped rather than raise the limit
// of a window a later crowd is given.
const spareLife = time.Minute

// giveSpare returns one of the admissions given back here (Lapse) to the
// store, in window idx, where the store has just granted this budget
// admissions: the window the next place found anywhere is given, whose
// limit it raises by one (the admission returned is granted at a place of
// its own after every one the window granted, ReturnLapsed, at whichever
// node takes it). One a window, so admissions lapsing together are spread
// over the windows the crowd is given, not heaped into one. It costs the grant's taker one more store call. A return
// whose outcome is unknown counts as made (returnBatch). Callers hold mu.
func (b *Budget) giveSpare(ctx context.Context, idx int64, bw *budgetWindow) {
	if b.spare == 0 || idx <= b.spareIn {
		return
	}
	if b.inUse().Sub(b.spareAt) > spareLife {
		b.spare = 0
		return
	}
	taken, err := b.store.ReturnLapsed(context.WithoutCancel(ctx), b.room, b.window(idx, 0), 1)
	if errors.Is(err, ErrUnavailable) {
		return
	}
	b.spare, b.spareIn = b.spare-1, idx
	if err != nil {
		bw.lapsed++
		return
	}
	bw.lapsed += taken
	if taken > 0 {
		bw.spent = false // the store holds one again: the next taker here asks it
	}
}

// returnHeld gives the unspent rest of the blocks this node holds back to the
// store, so other nodes can spend it.
func (b *Budget) returnHeld(ctx context.Context, rate RateAt) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for idx, w := range b.windows {
		if w.held == 0 {
			continue
		}
		win := b.window(idx, rate(b.start(idx)))
		if unspent := w.end - w.next; unspent > 0 {
			if err := b.store.ReturnBudget(ctx, b.room, win, unspent, w.end); err != nil {
				return fmt.Errorf("returning admission budget: %w", err)
			}
			// Places given back are the store's again: a take after the
			// return (a request still in flight) asks the store anew.
			w.held, w.next = w.held-unspent, w.end
		}
		// The rest were refunded: they have no places of their own, and
		// given back in place they would take the places below the
		// unspent ones, which were given.
		if w.held > 0 {
			if _, err := b.store.ReturnLapsed(ctx, b.room, win, w.held); err != nil {
				return fmt.Errorf("returning refunded admission budget: %w", err)
			}
			w.held = 0
		}
	}
	return nil
}

// Ranks hands out a room's arrival ranks on one node, reserving them from
// the store a block at a time. Ranks are unique across the cluster and
// increase on each node; across nodes they are ordered by block, so two
// arrivals at different nodes may be ranked out of arrival order by up to
// a block's worth of arrivals.
//
// With a maximum age (MaxAge), a block is dropped once it is older than
// that, and its size follows the node's arrivals: twice the last when that
// was used up within a quarter of the age, else what the node handed out
// over a quarter of the age at the rate the last block went; between 1 and
// the block given to NewRanks (so a block is dropped with ranks left only
// when arrivals fell about fourfold). So arrivals at
// different nodes are ranked out of order only when they are less than the
// age apart, and a quiet node does not hold old ranks for later arrivals.
// The ranks of a dropped block, and of the block a crashed node held, are
// never handed out: at most the block's size, and about what the node
// hands out in an age.
type Ranks struct {
	store Store
	room  string
	block int64
	age   time.Duration
	now   func() time.Time

	mu        sync.Mutex
	next, end int64
	size      int64     // the size of the next block, with an age
	taken     time.Time // when the current block was reserved
	under     time.Time // the since it was reserved under (Next)
	dropped   int64     // ranks dropped unused, for tests and metrics
}

// rankLifeShare is how much shorter than the maximum age a block is sized
// to last: blocks are dropped unused only when arrivals fall this much.
const rankLifeShare = 4

// NewRanks returns a node's rank allocator for room.
func NewRanks(store Store, room string, block int64) (*Ranks, error) {
	if block < 1 {
		return nil, fmt.Errorf("rank block must be at least 1, not %d", block)
	}
	return &Ranks{store: store, room: room, block: block, size: block}, nil
}

// MaxAge drops blocks older than age by the clock now, sizing blocks to
// the node's arrivals (see Ranks). Call it before the first Next.
func (r *Ranks) MaxAge(age time.Duration, now func() time.Time) *Ranks {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.age, r.now, r.size = age, now, 1
	return r
}

// Next returns the next arrival rank; with since (and a MaxAge clock),
// one of a block reserved at or after since: a block reserved before the
// start holds pre-queue ranks other nodes' pre-queue blocks follow, so a
// place arriving after the start takes none of it.
func (r *Ranks) Next(ctx context.Context, since time.Time) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A block reserved under since follows every rank handed out before
	// it, whatever this node's clock read then (it may lag the node that
	// set since): it is dropped for a later since only.
	if left := r.end - r.next; left > 0 && !r.taken.IsZero() && r.taken.Before(since) && r.under.Before(since) {
		r.dropped += left
		r.next = r.end
	}
	var now time.Time
	if r.age > 0 {
		now = r.now()
		left := r.end - r.next
		if !r.taken.IsZero() && (left == 0 || now.Sub(r.taken) > r.age) {
			quarter := r.age / rankLifeShare
			if life := now.Sub(r.taken); left == 0 && life < quarter {
				// Used up early: arrivals come faster than it was sized for.
				r.size = min(r.block, 2*r.size)
			} else {
				// Size the next block to last a quarter of the age at the
				// rate this one was handed out.
				rate := float64(r.size-left) / life.Seconds()
				r.size = max(1, min(r.block, int64(math.Ceil(rate*quarter.Seconds()))))
			}
			r.dropped += left
			r.next = r.end
		}
	}
	if r.next == r.end {
		first, err := r.store.ReserveRanks(ctx, r.room, r.size)
		if err != nil {
			return 0, fmt.Errorf("reserving arrival ranks: %w", err)
		}
		r.next, r.end, r.taken, r.under = first, first+r.size, now, since
	}
	rank := r.next
	r.next++
	return rank, nil
}

// Dropped is how many ranks this node dropped unused with aged blocks.
func (r *Ranks) Dropped() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}
