package admission

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
)

// Order is the rule a room's queue follows (docs/FAIRNESS.md, "Queue
// orders").
type Order string

// Queue orders.
const (
	// OrderLottery: everyone's wait is an exponential draw on the serving
	// clock from their entry; arrival order matters little. The default.
	OrderLottery Order = "lottery"
	// OrderFIFO: probabilistic first in, first out. The pre-queue is a
	// uniform lottery served before everyone who arrived after the start;
	// after the start each place's key is its arrival rank plus a luck
	// term of mean one luck window, and a serving counter passes keys at
	// the target rate.
	OrderFIFO Order = "fifo"
)

// ParseOrder checks a queue order's name; empty means OrderLottery.
func ParseOrder(s string) (Order, error) {
	switch o := Order(s); o {
	case "":
		return OrderLottery, nil
	case OrderLottery, OrderFIFO:
		return o, nil
	}
	return "", fmt.Errorf("unknown queue order %q (want lottery or fifo)", s)
}

// Ranker hands out a room's arrival ranks: unique, and increasing in the
// order it is asked. Next's rank comes after every rank handed out, at any
// node, before since (zero: no such bound): a place that arrives after
// the start is ranked after the whole pre-queue. roomstate.Ranks shares
// one across nodes, allocating in blocks; memoryRanker is one process's.
type Ranker interface {
	Next(ctx context.Context, since time.Time) (int64, error)
}

// memoryRanker is an in-process Ranker counting from 0.
type memoryRanker struct{ n atomic.Int64 }

// Next returns the next rank.
func (m *memoryRanker) Next(context.Context, time.Time) (int64, error) { return m.n.Add(1) - 1, nil }

// fifoIssueWindow is how far back the rate of ranks handed out is measured
// for the luck span.
const fifoIssueWindow = 10 * time.Second

// fifoGrain is the spacing of a fifo draw's checkpoints: fine, so that a
// place is judged close to the moment the serving counter passes its key
// and arrival order survives to admission order. The gate names only a few
// of them to each place (see Gate.fifoNext).
const fifoGrain = 250 * time.Millisecond

// fifoState is a fifo room's arrival ranking. base and zero are set by the
// first rank taken since the room began to queue, under Room.mu, and
// published in the View; the rest moves with every token.
type fifoState struct {
	ranker atomic.Pointer[rankerBox]
	claims claimMemory
	luck   time.Duration
	issues *rateWindow // ranks handed out per second, for the luck span
	// roomIssues is the ranks handed out per second by every node sharing
	// the room, as last published (NoteRoomIssueRate), as math.Float64bits.
	roomIssues atomic.Uint64
	// tickPassed is the room's passed places as this node's last tick
	// counted them, and when (tickFIFO): a node alone has no published sum.
	tickPassed   atomic.Uint64 // math.Float64bits
	tickPassedAt atomic.Int64  // Unix nanoseconds; 0: never ticked
	// preTop is one past the highest pre-queue rank; top one past the
	// highest rank; maxKey the highest key of a post-start place (as
	// math.Float64bits): the counter never runs past the last key.
	preTop, top, maxKey atomic.Int64
	// shared is one past the highest rank handed out by any node sharing
	// the rank counter, as last read from the store (NoteRanked).
	shared atomic.Int64
	// sharedPreTop is one past the highest pre-queue rank other nodes
	// stored (View.PreTop): every node's pre-queue has the room's size.
	sharedPreTop atomic.Int64
	// sharedKey is the highest key other nodes stored (View.KeyTop), as
	// math.Float64bits.
	sharedKey atomic.Uint64
	// firstLuck and lastLuck are the luck spans of the first and the
	// latest place taken after the start (as math.Float64bits): where the
	// keys thin out, at either end, the counter runs faster by them.
	firstLuck, lastLuck atomic.Uint64
}

// rank gives a new place in a fifo room its arrival rank. pre marks a place
// taken in the pre-queue. It returns the view the rank was taken under: the
// first rank since the room began to queue fixes the view's rank origin.
func (r *Room) rank(ctx context.Context, now time.Time, pre bool) (int64, View, error) {
	f := r.fifo
	if f == nil {
		return 0, r.View(now), fmt.Errorf("room %s does not rank arrivals (queue order lottery)", r.Name())
	}
	var since time.Time
	if !pre {
		// When the room began to admit: its grid's origin, or the move
		// that made it so (a sale started early: the origin then moves
		// back to when the room began to queue, before the pre-queue).
		v := r.view.Load()
		since = v.Opens
		if v.Moved.After(since) {
			since = v.Moved
		}
	}
	rank, err := f.ranker.Load().r.Next(ctx, since)
	if err != nil {
		return 0, r.View(now), fmt.Errorf("taking an arrival rank: %w", err)
	}
	f.issues.add(now, 1)
	raise(&f.top, rank+1)
	if pre {
		raise(&f.preTop, rank+1)
	}
	if !r.view.Load().RankSet {
		r.mu.Lock()
		if v := *r.view.Load(); !v.RankSet {
			// The counter stands at the origin from now: with no key
			// before it, the speed it ran at until a change takes effect
			// (speedFrom) would pass the first arrivals at once.
			v.RankSet, v.RankBase, v.RankZero = true, rank, v.Clock.At(now)
			v.Clock = v.Clock.From(now, 0)
			r.publish(&v, now)
		}
		r.mu.Unlock()
	}
	return rank, r.View(now), nil
}

// preQueueTop is one past the highest pre-queue rank any node handed out,
// as far as this node knows.
func (f *fifoState) preQueueTop() int64 { return max(f.preTop.Load(), f.sharedPreTop.Load()) }

type rankerBox struct{ r Ranker }

// claimMemory remembers the claim of each place (Gate.claim), for as long
// as a version of its token from before the claim can be valid: two
// generations, each a room memory (at least a minute) long. Its size is
// the claims of two memories: a room memory of arrivals, at most twice.
type claimMemory struct {
	mu       sync.Mutex
	cur, old map[string]claim
	rotated  time.Time
}

// claim is a fifo place's entry: its rank as the token's pos, its luck
// span as lk, and the checkpoint the claim's first answer named.
type claim struct {
	Pos  int64
	Lk   float64
	Next time.Time
}

func (m *claimMemory) rotate(now time.Time, memory time.Duration) {
	if now.Sub(m.rotated) > max(memory, time.Minute) || m.cur == nil {
		m.old, m.cur, m.rotated = m.cur, make(map[string]claim), now
	}
}

func (m *claimMemory) lookup(id string) (claim, bool) {
	if c, ok := m.cur[id]; ok {
		return c, true
	}
	c, ok := m.old[id]
	if ok {
		m.cur[id] = c
	}
	return c, ok
}

// claimRank is the rank a fifo place claims at its first judged attempt,
// as the token's pos and lk: the one it claimed before, or a new one (see
// Room.rank). The claim is the place's entry: a place claimed before the
// sale start is in the pre-queue, one claimed after takes the next rank,
// however long ago its token was taken, so an unclaimed token's age buys
// nothing. Its Next is the claim's first checkpoint (first, for a new
// rank; zero where the claim is judged at once), so that presenting a
// version from before the claim again is answered as the first time.
// fresh is true when this call took the rank. key is the place's key for a
// new rank. Claims of one node are
// serialised, so concurrent attempts of one place take one rank and learn
// one checkpoint.
func (r *Room) claimRank(ctx context.Context, id string, now time.Time, key func(v *View, pos int64, lk float64) float64, first func(v *View, c claim) time.Time) (c claim, fresh bool, err error) {
	f := r.fifo
	if f == nil {
		return claim{}, false, fmt.Errorf("room %s does not rank arrivals (queue order lottery)", r.Name())
	}
	m := &f.claims
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rotate(now, r.memory)
	if c, ok := m.lookup(id); ok {
		return c, false, nil
	}
	view := r.View(now)
	pre := !view.SaleStart.IsZero() && view.Opens.Equal(view.SaleStart) && now.Before(view.SaleStart)
	rank, view, err := r.rank(ctx, now, pre)
	if err != nil {
		return claim{}, false, err
	}
	c = claim{Pos: rank + 1}
	if pre {
		c.Pos = -c.Pos
	} else {
		c.Lk = r.luckSpan(now)
		r.noteKey(key(&view, c.Pos, c.Lk), c.Lk)
	}
	c.Next = first(&view, c)
	m.cur[id] = c
	return c, true, nil
}

// SetRanker makes the room take its arrival ranks from rk (a store's
// shared counter, see roomstate.Ranks) from now on; nil means a
// memoryRanker. A node sets it before it serves the room.
func (r *Room) SetRanker(rk Ranker) {
	if r.fifo == nil {
		return
	}
	if rk == nil {
		rk = new(memoryRanker)
	}
	r.fifo.ranker.Store(&rankerBox{rk})
}

// NoteRanked tells the room that ranks below next were handed out
// somewhere (another node sharing the room's rank counter): the counter
// may run as far as them. A node that ticks for a cluster calls it with the
// shared counter's value, so the clock it publishes does not stop at the
// last key this node happened to hand out.
func (r *Room) NoteRanked(next int64) {
	if r.fifo != nil {
		raise(&r.fifo.shared, next)
	}
}

// luckSpan is the luck window in ranks for a place taken now: the window
// times the rate ranks are being handed out at in the room, over every
// node sharing it (a node that sees a tenth of the arrivals would
// otherwise give its places a tenth of the luck, and the rule would hold
// at none of them).
func (r *Room) luckSpan(now time.Time) float64 {
	if r.fifo == nil {
		return 0
	}
	rate := math.Max(r.fifo.issues.rate(now), math.Float64frombits(r.fifo.roomIssues.Load()))
	return r.fifo.luck.Seconds() * rate
}

// IssueRate is the ranks this node handed out per second lately, for the
// room's sum (NoteRoomIssueRate); 0 in a lottery room.
func (r *Room) IssueRate(now time.Time) float64 {
	if r.fifo == nil {
		return 0
	}
	return r.fifo.issues.rate(now)
}

// NoteRoomIssueRate tells the room the ranks every node sharing it handed
// out per second lately, the sum of their IssueRate.
func (r *Room) NoteRoomIssueRate(rate float64) {
	if r.fifo != nil && rate >= 0 && !math.IsInf(rate, 0) {
		r.fifo.roomIssues.Store(math.Float64bits(rate))
	}
}

// fifoKeys is passedKeys for the fifo counter: a place passed longer ago
// than a late place takes to come (fifoLateAfter), its moment unknown, is
// not expected either. Callers hold r.mu.
func (r *Room) fifoKeys(v *View, now time.Time) (passed float64, unfound int, ahead []float64) {
	return r.passedKeys(v, v.ClockAt(now.Add(-fifoLateAfter)), v.Clock.At(r.speedFrom(v, now)), now)
}

// fifoHold is where the counter at s is to stop for now, if anywhere: at
// the pre-queue's end while places hold it there (holding, the room's sum
// of holdingEnd). The pre-queue goes before every later arrival, and
// places found eligible together take their slots in the order they
// present: a later arrival's key passed with the pre-queue's last keys
// could take a slot before one of them. Only the places not found are
// waited for, not their slots, so the budget's next windows still go to
// places found.
func fifoHold(v *View, s, holding float64) float64 {
	end := v.RankZero + v.PreQueue
	if v.PreQueue <= 0 || s > end || holding <= 0 {
		return 0
	}
	return end
}

// holdingEnd is how many of a node's places hold the counter at the
// pre-queue's end: those it passed that are still to be found (unfound),
// and the pre-queue keys still ahead of it. A node publishes its count
// once a tick, and may learn a tick later than it takes effect (a poll
// slower than the speed's delay): counting only the keys it saw passed, a
// pre-queue place passed in that lag would hold nothing, and later
// arrivals passed with it could be found first.
func holdingEnd(v *View, unfound int, ahead []float64) int {
	below, _ := slices.BinarySearch(ahead, v.RankZero+v.PreQueue)
	return unfound + below
}

// noteKey records a post-start place's key and luck span, so the counter
// runs as far as the key, and knows how thin keys are at the ends.
func (r *Room) noteKey(key, luck float64) {
	f := r.fifo
	f.firstLuck.CompareAndSwap(0, math.Float64bits(luck))
	f.lastLuck.Store(math.Float64bits(luck))
	for {
		old := f.maxKey.Load()
		if old != 0 && math.Float64frombits(uint64(old)) >= key {
			return
		}
		if f.maxKey.CompareAndSwap(old, int64(math.Float64bits(key))) {
			return
		}
	}
}

// SetLuck changes the luck window of places taken from now on.
func (r *Room) SetLuck(w time.Duration) error {
	if w < 0 {
		return fmt.Errorf("luck window must not be negative")
	}
	if r.fifo == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fifo.luck = w
	v := *r.view.Load()
	v.Luck = w
	r.view.Store(&v)
	return nil
}

func raise(x *atomic.Int64, to int64) {
	for {
		old := x.Load()
		if old >= to || x.CompareAndSwap(old, to) {
			return
		}
	}
}

// fifoLimit is the counter value past which no place waits yet: the
// highest key handed out (the pre-queue's size, or the last post-start
// key), and a rank. The counter stops there, so a quiet room does not run ahead and
// let a later crowd in all at once.
func (r *Room) fifoLimit(v *View) float64 {
	f := r.fifo
	limit := float64(f.preQueueTop() - v.RankBase)
	if bits := f.maxKey.Load(); bits != 0 {
		limit = math.Max(limit, math.Float64frombits(uint64(bits)))
	}
	limit = math.Max(limit, math.Float64frombits(f.sharedKey.Load()))
	if top := f.shared.Load(); top > v.RankBase {
		// Ranks other nodes handed out: their keys lie up to a few luck
		// spans beyond them.
		limit = math.Max(limit, float64(top-v.RankBase)+sharedLuckTail*v.LastLuck)
	}
	// Just past the last key, so rounding never stops it short of it, and
	// no further: a rank beyond, and the next arrival's key would be passed
	// the moment it claims, ahead of places whose checkpoints are still to
	// come (gateway.TestFIFOAdmitsInArrivalOrder).
	return v.RankZero + math.Max(0, limit)*(1+1e-9) + 1e-6
}

// fifoSpeed is the speed the fifo counter is to run at from now. With the
// adaptive default it passes the keys of the places presented (presence:
// a place counts once it claimed with its work solved, so free tokens and
// abandoned places count nothing once their presence lapses) so that
// about a checkpoint spacing's worth of admissions is passed and not yet
// admitted: the counter advances with the admissions made, never ahead of
// them, whatever the places' requests. A place passed longer ago than a
// page told its moment takes to come is late (asleep, or gone): the
// counter does not wait for it, and it loses only its lateness when it
// comes (fifoFound). population is the room's waiting population over
// every node sharing it: this node's presence sees its own share of the
// keys, each standing for population over their number. With fixed_speed
// it passes rate keys a second where keys are expected (see passing). It
// changes nothing. Callers hold r.mu.
func (r *Room) fifoSpeed(v *View, now time.Time, population float64) fifoPlan {
	// The last tick before a sale start sets the speed the clock runs at
	// from the start, so the first places pass at the start, not a tick
	// after it.
	running := v.State == StateQueue || (v.State == StateScheduled && !now.Add(lotteryTick).Before(v.SaleStart))
	adaptive := r.adaptive.Load()
	if !adaptive || !running || !v.RankSet {
		plan := fifoPlan{speed: v.passing(v.Clock.At(r.speedFrom(v, now))-v.RankZero, v.Rate), passed: -1}
		if adaptive {
			plan.hold = v.Hold
		}
		return plan
	}
	// The speed runs from at (Room.speedFrom): the keys passed by then
	// count as passed, and the lead covers the admissions until then.
	s := v.Clock.At(r.speedFrom(v, now))
	passed, unfound, ahead := r.fifoKeys(v, now)
	scale := 1.0
	if local := r.presence.count(now); local > 0 && population > local {
		scale = population / local
	}
	// The room's passed places: every node's sum when nodes publish it,
	// else this node's, standing for population over its own count.
	roomPassed := float64(passed) * scale
	holding := float64(holdingEnd(v, unfound, ahead))
	sum, held, several := r.roomPassedNow(now)
	if several {
		roomPassed = sum
		holding = math.Max(holding, held)
	}
	plan := fifoPlan{passed: roomPassed, hold: fifoHold(v, s, holding)}
	if plan.hold > 0 {
		// Nothing past the pre-queue's end this tick: the counter stops
		// there (Room.publish).
		i, _ := slices.BinarySearch(ahead, plan.hold)
		ahead = ahead[:i]
	}
	if len(ahead) == 0 {
		if population > roomPassed {
			// The places still to pass wait at other nodes, where this
			// node sees no key: pass keys where they are expected, at the
			// rate (never past the last key handed out, Room.publish).
			plan.speed = v.passing(s-v.RankZero, v.Rate)
		}
		return plan
	}
	short := r.fifoLead(v, several) - roomPassed
	want := math.Round(short / scale)
	if want < 1 {
		if short >= 1 && population > roomPassed {
			// Each of this node's keys stands for more places than the
			// lead lacks (few of the room's places are here): passing
			// none, it would wait for admissions that come only once it
			// passes more. It passes keys where they are expected, at
			// the rate, as when it sees none.
			plan.speed = v.passing(s-v.RankZero, v.Rate)
		}
		return plan
	}
	k := min(int(want), len(ahead))
	// A key beyond the last rank handed out may lie behind the key of an
	// arrival still to come (its rank, plus its luck): while arrivals come
	// at least as fast as the rate, the counter waits for them. Slower,
	// luck counted in ranks stands for more time than the luck window, and
	// waiting for the ranks would hold a place back far longer than its
	// luck.
	if r.fifo.issues.rate(now) >= v.Rate {
		top := float64(max(r.fifo.top.Load(), r.fifo.shared.Load()) - v.RankBase)
		for k > 0 && ahead[k-1] > v.RankZero+top {
			k--
		}
	}
	if k == 0 {
		return plan
	}
	// Just past the k-th key (by a thousandth of a rank, so that ticks
	// closer together than lotteryTick reach it too): the counter reads it
	// before the tick ends.
	plan.speed = (ahead[k-1] + fifoPassBy - s) / lotteryTick.Seconds()
	return plan
}

// fifoPlan is what a tick of the fifo counter sets (Room.fifoSpeed).
type fifoPlan struct {
	// speed is the counter's speed from now.
	speed float64
	// passed is the room's passed places counted; −1 when none was.
	passed float64
	// hold is where the counter stops (fifoHold; 0: nowhere). An adaptive
	// room not running keeps the stop it had; with fixed_speed nothing
	// holds.
	hold float64
}

// fifoLead is how many places the adaptive fifo counter keeps passed and
// not yet admitted: a tick, the speed's delay and a MinBackoff of the
// rate, so a place told the moment its key is passed comes while the
// places before it are admitted. On several nodes the passed places are
// summed once a tick: a tick more covers that.
func (r *Room) fifoLead(v *View, several bool) float64 {
	lead := math.Max(1, v.Rate*(lotteryTick+r.delay()+r.policy.MinBackoff).Seconds())
	if several {
		lead += v.Rate * lotteryTick.Seconds()
	}
	return lead
}

// fifoShort is View.Short: the lead the adaptive counter lacks, from the
// room's passed places as last summed over its nodes or counted at this
// node's last tick; the whole lead before the start (nothing is passed);
// 0 when nothing recent is known.
func (r *Room) fifoShort(v *View, now time.Time) float64 {
	if !r.adaptive.Load() {
		return 0
	}
	if v.State == StateScheduled && now.Before(v.SaleStart) {
		return r.fifoLead(v, false)
	}
	if sum, _, ok := r.roomPassedNow(now); ok {
		return math.Max(0, r.fifoLead(v, true)-sum)
	}
	at := r.fifo.tickPassedAt.Load()
	if at == 0 || now.Sub(time.Unix(0, at)) > roomSumsFresh {
		return 0
	}
	return math.Max(0, r.fifoLead(v, false)-math.Float64frombits(r.fifo.tickPassed.Load()))
}

// fifoLateAfter is how long after the counter passed its key a place that
// follows its answers may still come: it is told the moment the counter is
// expected to pass it, which may be a tick off, and a place up to
// queue.PacerSlack late is served as asked, not from its moment, so the
// counter must not release the pre-queue's end before then. It also lets
// each node count a place not found in more than one of its published
// sums. Later, the place is asleep or gone, and holds the room back no
// more (it is served from its moment when it comes).
const fifoLateAfter = lotteryTick + queue.PacerSlack

// fifoPassBy is how far past the last key it means to pass the fifo
// counter aims, in ranks.
const fifoPassBy = 1e-3

// tickFIFO sets the fifo counter's speed and stop (fifoSpeed). Callers
// hold r.mu.
func (r *Room) tickFIFO(v *View, now time.Time, population float64) {
	plan := r.fifoSpeed(v, now, population)
	v.Cruise, v.Hold = plan.speed, plan.hold
	if plan.passed >= 0 {
		r.fifo.tickPassed.Store(math.Float64bits(plan.passed))
		r.fifo.tickPassedAt.Store(now.UnixNano())
	}
}

// keyTop is the highest key handed out that this node knows of: its own,
// or one another node stored.
func (r *Room) keyTop() float64 {
	f := r.fifo
	top := math.Float64frombits(f.sharedKey.Load())
	if bits := f.maxKey.Load(); bits != 0 {
		top = math.Max(top, math.Float64frombits(uint64(bits)))
	}
	return top
}

// KeyTopDue reports whether this node handed out a key beyond where the
// fifo counter stops within ahead, while the room runs: a node that does
// not tick stores its key top (View.KeyTop) then, so the ticker moves the
// stop past its places too.
func (r *Room) KeyTopDue(now time.Time, ahead time.Duration) bool {
	if r.fifo == nil {
		return false
	}
	v := r.View(now)
	running := v.State == StateQueue || (v.State == StateScheduled && !now.Before(v.SaleStart))
	soon := now.Add(ahead)
	return running && v.RankSet && v.Clock.SpeedAt(soon) == 0 && v.Clock.At(soon)-v.RankZero < r.keyTop()
}

// heldAtEnd reports whether the fifo counter stands at the pre-queue's
// end at now, held there (fifoHold) rather than at the last key.
func (v *View) heldAtEnd(now time.Time) bool {
	return v.Hold > 0 && v.Clock.At(now) >= v.Hold-fifoPassBy
}

// HoldFreedHere reports whether the fifo counter stands held at the
// pre-queue's end and no place at this node holds it there any more: the
// node then ticks at once (room.Shared.TickWanted) rather than at its next
// tick, so the room releases the counter without waiting for the ticks'
// cadence while its rate goes unused.
func (r *Room) HoldFreedHere(now time.Time) bool {
	if r.fifo == nil || !r.adaptive.Load() {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.View(now)
	if !v.heldAtEnd(now) {
		return false
	}
	_, unfound, ahead := r.fifoKeys(&v, now)
	return holdingEnd(&v, unfound, ahead) == 0
}

// ReleasesHold reports whether a tick now, from the population of every
// node, would release the fifo counter standing held at the pre-queue's
// end: a node ticks for the cluster then even if another node ticked less
// than a tick ago.
func (r *Room) ReleasesHold(now time.Time, population float64) bool {
	if r.fifo == nil || !r.adaptive.Load() {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.View(now)
	return v.heldAtEnd(now) && r.fifoSpeed(&v, now, population).hold == 0
}

// FIFOTickDue reports whether a tick of a fifo room, from the population
// of every node, would change what its clock says: the counter's speed by
// more than step (relative), or, while the room runs, the stop the counter
// reaches within ahead (arrivals moved it). A node ticking for a cluster
// stores the clock only then, as every stored reading costs the clock's
// past a segment. False for a lottery room.
func (r *Room) FIFOTickDue(now time.Time, population, step float64, ahead time.Duration) bool {
	if r.fifo == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.View(now)
	plan := r.fifoSpeed(&v, now, population)
	if math.Abs(plan.speed-v.Cruise) > step*v.Cruise || plan.hold != v.Hold {
		return true
	}
	running := v.State == StateQueue || (v.State == StateScheduled && !now.Before(v.SaleStart))
	soon := now.Add(ahead)
	return running && v.RankSet && v.Clock.SpeedAt(soon) == 0 && v.Clock.At(soon) < r.fifoLimit(&v)-0.5
}

// passing is the counter speed that passes want keys in the next second
// from c: where keys lie thin it runs faster, but never past where they
// thicken again within the second, so it never releases a crowd at once.
func (v *View) passing(c, want float64) float64 {
	const steps = 64
	h := want / steps // at density 1, want keys in steps steps
	keys, x := 0.0, c
	for keys < want && x-c < want*fifoMaxSparse {
		keys += h * keyDensity(x+h/2, v.PreQueue, v.Ranked, v.FirstLuck, v.LastLuck)
		x += h
	}
	return x - c
}

// sharedLuckTail is how many luck spans beyond the shared counter's top the
// fifo counter may run: other nodes' last keys are their ranks plus luck
// this node does not see (e^-3: one place in 20 lies further, until its
// node stores its key top, see KeyTopDue).
const sharedLuckTail = 3

// fifoMaxSparse bounds how much faster than the rate the counter runs where
// keys are sparse.
const fifoMaxSparse = 50

// keyDensity is the expected number of keys per unit of the counter at c
// (counted from the rank origin), for a pre-queue of pre places (keys
// uniform on [0, pre)) and ranks up to top after it, each key its rank plus
// L times an exponential draw (L = first for the first ranks, last for the
// last). It is 1 inside the queue and falls where the luck spreads keys
// thin: just after the pre-queue (keys still to come) and beyond the last
// rank (the luckless last few). The counter runs at rate/density, so the
// admission rate holds there too.
func keyDensity(c, pre, top, first, last float64) float64 {
	if c < pre {
		return 1
	}
	if top <= pre {
		return 0
	}
	tail := func(d, l float64) float64 { // P(L·E > d)
		if l <= 0 {
			return 0
		}
		return math.Exp(-d / l)
	}
	if c < top {
		return 1 - tail(c-pre, first)
	}
	return math.Max(0, tail(c-top, last)-tail(c-pre, first))
}

// fifoKey is the serving-counter distance of a fifo place from the room's
// rank origin: v·P in the pre-queue of P places (a uniform lottery, all of
// it before anyone after the start), rank + L·(−ln(1−v)) after it, where L
// is the luck span the token was issued with. A token without a rank (from
// before the room ranked arrivals) is at the origin. v is the place's
// lottery number.
func (g *Gate) fifoKey(view *View, claims *tokens.WaitClaims, v float64) float64 {
	switch {
	case claims.Pos < 0:
		return v * view.PreQueue
	case claims.Pos > 0:
		return float64(claims.Pos-1-view.RankBase) + claims.Lk*queue.Threshold(v)
	}
	return 0
}

// fifoNext is the checkpoint a fifo place not yet eligible is told to come
// back at. Far from its turn it comes back every MaxBackoff; within reach it
// comes a MinBackoff before the moment the counter is expected to pass its
// key, and then at that moment: so it is judged close to when it became
// eligible, at a few requests' cost. It is a point of the draw's fine grid.
// Which version is presented, and how often, changes nothing: an attempt
// is judged at the moment the counter reached the key (fifoFound).
func (g *Gate) fifoNext(view *View, claims *tokens.WaitClaims, now time.Time) time.Time {
	target := now.Add(g.policy.MaxBackoff)
	if view.State != StatePaused {
		key := g.fifoKey(view, claims, g.codec.Keys().Lottery(claims.Lot))
		if when, ok := view.fifoWhen(now, key); ok {
			reach := fifoReach
			if claims.Pos < 0 {
				reach = fifoReachPre
			}
			target = fifoApproach(when, now, g.policy, reach)
		}
	}
	return g.pointFrom(view, claims, target, now)
}

// fifoApproach is when a place whose key the counter is expected to pass
// at when comes back: at when once within two MinBackoffs of it, else
// early by a MinBackoff or by the time to it over reach, if more, and
// never more than a MaxBackoff ahead. A prediction's error grows with its
// reach: places missing from the keys ahead pass at once, and with half
// the places walking away the counter runs at twice the pace predicted.
// Coming early costs a request; coming late costs the place its
// lateness, and in the pre-queue the room its rate (fifoHold waits for
// it).
func fifoApproach(when, now time.Time, p Policy, reach int) time.Time {
	d := when.Sub(now)
	if d <= 2*p.MinBackoff {
		return when
	}
	early := max(p.MinBackoff, d/time.Duration(reach))
	if far := now.Add(p.MaxBackoff); far.Before(when.Add(-early)) {
		return far
	}
	return when.Add(-early)
}

// fifoReach is how far ahead, as a multiple of its margin, a prediction
// of the counter is trusted (fifoApproach); fifoReachPre for a pre-queue
// place, which asks again as each half of the time to its moment passes,
// so that it follows a counter running twice as fast as predicted.
const (
	fifoReach    = 8
	fifoReachPre = 2
)

// fifoWhen predicts when the counter passes key, from the figures in
// force (View.Forecasting): the keys it is short of its lead at its next
// tick, then the keys expected between it and key at the target rate, or
// as the clock is planned before the start. ok is false if it never does
// as things stand.
func (v *View) fifoWhen(now time.Time, key float64) (time.Time, bool) {
	from := now
	if v.State == StateScheduled && now.Before(v.SaleStart) {
		from = v.SaleStart
	}
	c := v.Clock.At(from) - v.RankZero
	if key <= c {
		return v.Clock.When(now, v.RankZero+key)
	}
	if v.Rate <= 0 {
		return time.Time{}, false
	}
	f := v.Forecasting(now)
	const steps = 32
	ahead, h := 0.0, (key-c)/steps
	for i := range steps {
		ahead += h * keyDensity(c+(float64(i)+0.5)*h, v.PreQueue, f.Ranked, f.FirstLuck, f.LastLuck)
	}
	// The keys the counter is short of its lead pass at its next tick, at
	// once. After the start that tick's plan says when: a counter running
	// passes them along its clock; one standing at its stop moves at its
	// next tick only (within a tick, and its change takes effect the
	// speed's delay after it), and reaches them over the tick after it.
	// Predicted at once, their pages would come back every fifoGrain
	// until then.
	rest := math.Max(0, ahead-f.Short)
	if f.Short > 0 && from.Equal(now) {
		next := from.Add(lotteryTick + v.Delay)
		switch {
		case v.Clock.SpeedAt(from) == 0:
			from = next
		case rest == 0:
			// The plan of this tick, or the next tick's, which passes the
			// shortfall whatever this one's speed.
			if when, ok := v.Clock.When(from, v.RankZero+key); ok && when.Before(next) {
				return when, true
			}
			return next, true
		}
	}
	return from.Add(durationOf(rest * cmp.Or(f.Shows, 1) / v.Rate)), true
}

// pointFrom is the first checkpoint at or after target and after now.
func (g *Gate) pointFrom(view *View, claims *tokens.WaitClaims, target, now time.Time) time.Time {
	grid := g.grid(view, claims.Lot)
	n := max(grid.index(target), grid.after(now))
	return grid.at(n)
}

// estimateFIFO is the wait of a place taken now in a fifo room: the ranks
// ahead of it at the target rate, plus its mean luck (half the pre-queue
// before the start, as its place in it is a uniform draw). It is the same
// for everyone at a given moment and reveals nothing of anyone's draw.
func (v View) estimateFIFO(now time.Time) time.Duration {
	if v.State == StateScheduled && now.Before(v.SaleStart) {
		return v.SaleStart.Sub(now) + durationOf(v.PreQueue/2/v.Rate)
	}
	ahead := 0.0
	if v.RankSet {
		ahead = math.Max(0, v.RankZero+v.Ranked-v.Clock.At(now))
	}
	return durationOf(ahead/v.Rate) + v.Luck
}
