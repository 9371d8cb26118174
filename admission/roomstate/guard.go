package roomstate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
)

// ErrUnavailable means a guarded store failed and this call did not ask
// it: another call was trying it and had no answer in time, or its
// cool-down had not ended.
var ErrUnavailable = errors.New("room state store unavailable")

// Observer is told of every store call: its operation, how long it took
// and its error (nil, ErrNotFound and ErrConflict are answers, not failures).
type Observer func(op string, took time.Duration, err error)

// Guard wraps a store so a failing store costs the request path one call
// at a time, not one per request: after a failure, one call tries the
// store; the others wait up to trialWait (within their own deadline) for
// its answer, then fail with ErrUnavailable, until a call is answered. A
// call that was sent while the store answered and failed at its deadline
// lets the next call try at once: it waited already, and a node that
// stopped running for a moment (starved of CPU, paused) ends its calls in
// flight at their deadlines together, though the store is well, and
// serves again, the requests sent to it meanwhile included, as soon as one
// call is answered. After a quick failure (refused, throttled, a 5xx), or
// a trying call that timed out, the next try waits for cool. A call's
// outcome counts only if nothing was learnt of the store since it began,
// and only a failure of the store itself trips the guard (see Unwell). It
// reports each call to observe.
type Guard struct {
	Store
	observe Observer
	cool    time.Duration
	now     func() time.Time
	timeout time.Duration // per call, when set (SetCallTimeout)
	wait    time.Duration // trialWait; a test may shorten it
	failed  atomic.Bool   // no call was answered since the last failure
	epoch   atomic.Uint64 // counts what was learnt of the store; written under mu
	down    atomic.Int64  // unix nanos before which no call tries the store; written under mu
	waiting atomic.Int64  // calls waiting for the call trying the store
	mu      sync.Mutex
	trial   chan struct{} // closed when the call trying the store ends; nil if none
}

// trialWait is how long a call waits for the call trying a store that
// failed: long enough for a store that answers to answer it (a node
// resuming after a stall is sent at once every request sent meanwhile),
// short enough that a store that is down holds each request only briefly.
const trialWait = 250 * time.Millisecond

// SetCallTimeout bounds every call through the guard, within the store's
// own deadline: a room's call_timeout, when rooms share one opened store.
// Set it before the guard's first call.
func (g *Guard) SetCallTimeout(d time.Duration) { g.timeout = d }

// NewGuard wraps store; now tells the cool-down's time; observe may be nil.
func NewGuard(store Store, cool time.Duration, now func() time.Time, observe Observer) *Guard {
	if observe == nil {
		observe = func(string, time.Duration, error) {}
	}
	return &Guard{Store: store, observe: observe, cool: cool, now: now, wait: trialWait}
}

// Failing reports whether the store failed and no call was answered since.
func (g *Guard) Failing() bool { return g.failed.Load() }

func (g *Guard) call(ctx context.Context, op string, fn func(context.Context) error) error {
	if g.failed.Load() && g.cooling() {
		err := fmt.Errorf("%s: %w", op, ErrUnavailable)
		g.observe(op, 0, err)
		return err
	}
	callCtx := ctx
	if g.timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	start := time.Now()
	epoch, trying := g.epoch.Load(), false
	if g.failed.Load() {
		var ok bool
		epoch, trying, ok = g.enter(callCtx)
		if !ok {
			err := fmt.Errorf("%s: %w", op, ErrUnavailable)
			g.observe(op, time.Since(start), err)
			return err
		}
		if trying {
			defer g.endTrial()
		}
	}
	err := fn(callCtx)
	g.observe(op, time.Since(start), err)
	g.learn(ctx, epoch, trying, err)
	return err
}

// enter decides whether a call may ask a store that failed: as the one
// call trying it, or once the call trying it was answered within g.wait
// and ctx. epoch is what the guard had learnt when the call went on.
func (g *Guard) enter(ctx context.Context) (epoch uint64, trying, ok bool) {
	var wait *time.Timer
	expired := false
	for {
		g.mu.Lock()
		epoch = g.epoch.Load()
		switch {
		case !g.failed.Load():
			g.mu.Unlock()
			return epoch, false, true
		case g.cooling(), ctx.Err() != nil:
			g.mu.Unlock()
			return 0, false, false
		case g.trial == nil:
			g.trial = make(chan struct{})
			g.mu.Unlock()
			return epoch, true, true
		}
		trial := g.trial
		g.mu.Unlock()
		if expired {
			return 0, false, false
		}
		if wait == nil {
			wait = time.NewTimer(g.wait)
			defer wait.Stop()
		}
		// Whatever ends the wait, look again: the call trying the store
		// may have been answered, failed again or been abandoned by its
		// caller meanwhile.
		g.waiting.Add(1)
		select {
		case <-trial:
		case <-wait.C:
			expired = true
		case <-ctx.Done():
		}
		g.waiting.Add(-1)
	}
}

// cooling reports whether the cool-down after a quick failure runs.
func (g *Guard) cooling() bool { return g.now().UnixNano() < g.down.Load() }

func (g *Guard) endTrial() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.trial)
	g.trial = nil
}

// learn records what a call's outcome says of the store, unless something
// was learnt since the call began (its epoch): a call sent before a
// failure that answers after it, or one of many calls in flight that end
// at their deadline together, is no news.
func (g *Guard) learn(ctx context.Context, epoch uint64, trying bool, err error) {
	answered := err == nil || (ctx.Err() == nil && !Unwell(err))
	switch {
	case !answered && ctx.Err() != nil:
		return // its caller gave up: the call says nothing of the store
	case answered && !g.failed.Load():
		return // nothing new, as almost always: no lock taken
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.epoch.Load() != epoch || answered && !g.failed.Load() {
		return
	}
	if !answered {
		cool := g.cool
		if !trying && errors.Is(err, context.DeadlineExceeded) {
			cool = 0
		}
		g.down.Store(g.now().Add(cool).UnixNano())
	}
	g.failed.Store(!answered)
	g.epoch.Add(1)
}

// Unwell reports whether err says the store itself is failing
// (unreachable, too slow, throttling, failing inside) rather than refusing
// this one call (a validation error, an item too large, a missing table,
// ErrNotFound, ErrConflict): only the former holds the other calls back,
// so one bad request cannot make the room answer 503; and only
// the former lets a node start without its store (a refusal is a config
// error).
func Unwell(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var api interface{ ErrorCode() string }
	if errors.As(err, &api) && unwellCodes[api.ErrorCode()] {
		return true
	}
	var resp interface{ HTTPStatusCode() int }
	if errors.As(err, &resp) {
		code := resp.HTTPStatusCode()
		return code >= 500 || code == 429
	}
	return false
}

// unwellCodes are the DynamoDB error codes of a store that is throttling or
// failing inside (AWS API errors carry them as ErrorCode()).
var unwellCodes = map[string]bool{
	"ThrottlingException":                    true,
	"ProvisionedThroughputExceededException": true,
	"RequestLimitExceeded":                   true,
	"InternalServerError":                    true,
	"ServiceUnavailable":                     true,
}

// LoadControl implements Store.
func (g *Guard) LoadControl(ctx context.Context, room string) (c Control, v uint64, err error) {
	err = g.call(ctx, "load_control", func(ctx context.Context) error {
		c, v, err = g.Store.LoadControl(ctx, room)
		return err
	})
	return c, v, err
}

// SaveControl implements Store.
func (g *Guard) SaveControl(ctx context.Context, room string, c Control, prev uint64) (v uint64, err error) {
	err = g.call(ctx, "save_control", func(ctx context.Context) error {
		v, err = g.Store.SaveControl(ctx, room, c, prev)
		return err
	})
	return v, err
}

// ReserveBudget implements Store.
func (g *Guard) ReserveBudget(ctx context.Context, room string, w Window, n int64) (got Grant, err error) {
	err = g.call(ctx, "reserve_budget", func(ctx context.Context) error {
		got, err = g.Store.ReserveBudget(ctx, room, w, n)
		return err
	})
	return got, err
}

// ReturnBudget implements Store.
func (g *Guard) ReturnBudget(ctx context.Context, room string, w Window, n, top int64) error {
	return g.call(ctx, "return_budget", func(ctx context.Context) error {
		return g.Store.ReturnBudget(ctx, room, w, n, top)
	})
}

// ReturnLapsed implements Store.
func (g *Guard) ReturnLapsed(ctx context.Context, room string, w Window, n int64) (taken int64, err error) {
	err = g.call(ctx, "return_lapsed", func(ctx context.Context) error {
		taken, err = g.Store.ReturnLapsed(ctx, room, w, n)
		return err
	})
	return taken, err
}

// HoldPlace implements Store.
func (g *Guard) HoldPlace(ctx context.Context, room, id string, p queue.Place, until, now time.Time) (held queue.Place, won bool, err error) {
	err = g.call(ctx, "hold_place", func(ctx context.Context) error {
		held, won, err = g.Store.HoldPlace(ctx, room, id, p, until, now)
		return err
	})
	return held, won, err
}

// UsePlace implements Store.
func (g *Guard) UsePlace(ctx context.Context, room, id string, p queue.Place, now time.Time) (used bool, err error) {
	err = g.call(ctx, "use_place", func(ctx context.Context) error {
		used, err = g.Store.UsePlace(ctx, room, id, p, now)
		return err
	})
	return used, err
}

// MayHoldPlace implements PlaceIndex for the guarded store: an exact
// answer from memory, so it is given even while the store is failing.
func (g *Guard) MayHoldPlace(room, id string) bool { return MayHoldPlace(g.Store, room, id) }

// LookupPlace implements Store.
func (g *Guard) LookupPlace(ctx context.Context, room, id string, now time.Time) (p queue.Place, err error) {
	err = g.call(ctx, "lookup_place", func(ctx context.Context) error {
		p, err = g.Store.LookupPlace(ctx, room, id, now)
		return err
	})
	return p, err
}

// ReleasePlace implements Store.
func (g *Guard) ReleasePlace(ctx context.Context, room, id string) error {
	return g.call(ctx, "release_place", func(ctx context.Context) error {
		return g.Store.ReleasePlace(ctx, room, id)
	})
}

// LapsePlace implements Store.
func (g *Guard) LapsePlace(ctx context.Context, room, id string, slot, now time.Time) (lapsed bool, err error) {
	err = g.call(ctx, "lapse_place", func(ctx context.Context) error {
		lapsed, err = g.Store.LapsePlace(ctx, room, id, slot, now)
		return err
	})
	return lapsed, err
}

// PublishPopulation implements Store.
func (g *Guard) PublishPopulation(ctx context.Context, room, node string, value float64, until time.Time) error {
	return g.call(ctx, "publish_population", func(ctx context.Context) error {
		return g.Store.PublishPopulation(ctx, room, node, value, until)
	})
}

// Population implements Store.
func (g *Guard) Population(ctx context.Context, room string, now time.Time) (sum float64, nodes int, err error) {
	err = g.call(ctx, "population", func(ctx context.Context) error {
		sum, nodes, err = g.Store.Population(ctx, room, now)
		return err
	})
	return sum, nodes, err
}

// PublishSketch implements Store.
func (g *Guard) PublishSketch(ctx context.Context, room, node string, sketch []byte, until time.Time) error {
	return g.call(ctx, "publish_sketch", func(ctx context.Context) error {
		return g.Store.PublishSketch(ctx, room, node, sketch, until)
	})
}

// Sketches implements Store.
func (g *Guard) Sketches(ctx context.Context, room string, now time.Time) (sketches [][]byte, err error) {
	err = g.call(ctx, "sketches", func(ctx context.Context) error {
		sketches, err = g.Store.Sketches(ctx, room, now)
		return err
	})
	return sketches, err
}

// ReserveRanks implements Store.
func (g *Guard) ReserveRanks(ctx context.Context, room string, n int64) (first int64, err error) {
	err = g.call(ctx, "reserve_ranks", func(ctx context.Context) error {
		first, err = g.Store.ReserveRanks(ctx, room, n)
		return err
	})
	return first, err
}

// FallbackLedger is a room's Ledger on the store that, while the store
// fails, remembers places in a node's memory instead (on_unavailable
// local). The risk is stated where it is configured: a place admitted from
// memory is unknown to the other nodes until it is written back, so it may
// be admitted once more elsewhere meanwhile. With a Backlog, the places
// held in memory are kept for Backlog.WriteBack, which the room calls
// once the store answers again.
type FallbackLedger struct {
	Shared  *Ledger
	Local   *queue.MemoryLedger
	Backlog *Backlog // nil: places held in memory are never written back
}

// Lookup implements queue.Ledger.
func (l FallbackLedger) Lookup(ctx context.Context, id string) (queue.Place, error) {
	p, err := l.Shared.Lookup(ctx, id)
	if err != nil {
		return l.Local.Lookup(ctx, id)
	}
	if p.State == queue.PlaceUsed {
		return p, nil
	}
	// Admitted here while the store was down: still admitted, whatever the
	// store's record (waiting, or reserved before the outage) says.
	if lp, _ := l.Local.Lookup(ctx, id); lp.State == queue.PlaceUsed ||
		(p.State == queue.PlaceWaiting && lp.State != queue.PlaceWaiting) {
		return lp, nil
	}
	return p, nil
}

// Hold implements queue.Ledger.
func (l FallbackLedger) Hold(ctx context.Context, id string, p queue.Place, until time.Time) (queue.Place, bool, error) {
	held, won, err := l.Shared.Hold(ctx, id, p, until)
	if err != nil {
		held, won, err = l.Local.Hold(ctx, id, p, until)
		if err == nil && won && l.Backlog != nil {
			l.Backlog.add(id, p, until)
		}
		return held, won, err
	}
	return held, won, nil
}

// Use implements queue.Ledger.
func (l FallbackLedger) Use(ctx context.Context, id string, p queue.Place) (bool, error) {
	if lp, _ := l.Local.Lookup(ctx, id); lp.State == queue.PlaceReserved {
		return l.useLocal(ctx, id, p)
	}
	used, err := l.Shared.Use(ctx, id, p)
	if err != nil {
		return l.useLocal(ctx, id, p)
	}
	return used, nil
}

// useLocal uses a place reserved in memory, for the backlog too.
func (l FallbackLedger) useLocal(ctx context.Context, id string, p queue.Place) (bool, error) {
	used, err := l.Local.Use(ctx, id, p)
	if err == nil && used && l.Backlog != nil {
		l.Backlog.use(id, p)
	}
	return used, err
}

// Release implements queue.Ledger.
func (l FallbackLedger) Release(ctx context.Context, id string) error {
	_ = l.Local.Release(ctx, id)
	return l.Shared.Release(ctx, id)
}

// Lapse implements queue.Ledger: a slot reserved in memory (while the
// store failed) lapses there, as it would have in the store.
func (l FallbackLedger) Lapse(ctx context.Context, id string, slot time.Time) (bool, error) {
	if lp, _ := l.Local.Lookup(ctx, id); lp.State == queue.PlaceReserved {
		lapsed, err := l.Local.Lapse(ctx, id, slot)
		if err == nil && lapsed && l.Backlog != nil {
			l.Backlog.lapse(id)
		}
		return lapsed, err
	}
	return l.Shared.Lapse(ctx, id, slot)
}

var (
	_ Store        = (*Guard)(nil)
	_ queue.Ledger = FallbackLedger{}
)
