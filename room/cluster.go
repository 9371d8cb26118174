package room

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/roomstate"
)

// tickEvery is the controller's period, for the whole cluster.
const tickEvery = time.Second

// StoreCool is how long a node waits before trying again a store whose
// call failed quickly (refused, throttled, a 5xx), or whose call trying
// it again timed out: such a store is asked once per StoreCool (and
// call_timeout), not once per request (roomstate.Guard).
const StoreCool = time.Second

// SweepEvery is how often a room's loop sweeps its store's expired items.
const SweepEvery = time.Minute

// Sweep deletes the store's expired places, budget windows and
// population items once a SweepEvery, within call_timeout. Run calls it
// each tick; a caller running the room in its own time calls it itself.
// On memory there is nothing to sweep.
func (sh *Shared) Sweep(ctx context.Context, now time.Time) {
	cl := sh.cluster
	if cl == nil {
		return
	}
	if cl.sweeper == nil || now.Sub(cl.swept) < SweepEvery {
		return
	}
	cl.swept = now
	ctx, cancel := context.WithTimeout(ctx, time.Duration(cl.set.CallTimeout))
	defer cancel()
	start := time.Now()
	_, err := cl.sweeper.Sweep(ctx, now)
	sh.observer().ObserveStore("sweep", time.Since(start), err)
}

// WriteBack writes the places admitted from memory while the store failed
// (on_unavailable local) to the store, once it answers again: then every
// node, and this one restarted, finds them used. Run calls it each tick
// (a caller running the room in its own time calls it itself); each call
// is bounded by call_timeout.
func (sh *Shared) WriteBack(ctx context.Context, now time.Time) {
	cl := sh.cluster
	if cl == nil {
		return
	}
	if cl.backlog == nil || cl.backlog.Len() == 0 || cl.store.Failing() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(cl.set.CallTimeout))
	defer cancel()
	written, twice, _ := cl.backlog.WriteBack(ctx, cl.store, cl.key, now) // a failure is counted by the guard, under hold_place or use_place
	sh.observer().WrittenBack(written, twice)
}

// NewSharedOn creates a room's shared state on an opened state store (nil
// for memory). It does not touch the store: Join does, once the config is
// certain to run, so that nodes on one store are one room and a restarted
// node resumes the clock and the ledger. st is the settled StateStore
// (Config.SettleStateStore).
func NewSharedOn(ctx context.Context, cfg Config, st StateStore, store roomstate.Store, clock func() time.Time) (*Shared, error) {
	sh, err := newShared(cfg, clock)
	if err != nil || store == nil {
		return sh, err
	}
	set := storeSettings{st}
	s, err := cfg.Settle() // cannot fail: newShared settled it
	if err != nil {
		return nil, err
	}
	cl := &cluster{set: set, key: s.Room, share: 1, changed: clock(), window: 2 * time.Duration(s.MaxBackoff)}
	cl.store = roomstate.NewGuard(store, StoreCool, clock, func(op string, took time.Duration, err error) {
		sh.observer().ObserveStore(op, took, err)
	})
	cl.store.SetCallTimeout(time.Duration(set.CallTimeout))
	cl.sweeper, _ = store.(sweeper)
	shared := roomstate.NewLedger(cl.store, s.Room, clock)
	sh.Ledger = shared
	if set.OnUnavailable == OnUnavailableLocal {
		cl.backlog = roomstate.NewBacklog()
		sh.Ledger = roomstate.FallbackLedger{Shared: shared, Local: sh.memory, Backlog: cl.backlog}
	}
	sh.cluster = cl
	for _, l := range sh.lanes() {
		if err := sh.attachLane(l); err != nil {
			return nil, err
		}
	}
	return sh, nil
}

// Join adopts the room's stored control state, or stores this node's when
// there is none; then a Gateway's ApplyConfig applies what its config
// changed since the config that stored it. A room on memory has nothing to
// join. Run retries a join that failed.
func (sh *Shared) Join(ctx context.Context) error {
	cl := sh.cluster
	if cl == nil {
		return nil
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	c, v, err := cl.store.LoadControl(ctx, cl.key)
	switch {
	case errors.Is(err, roomstate.ErrNotFound):
		err = sh.commitLocked(ctx, func() error { return nil })
	case err == nil:
		err = sh.adoptLocked(c, v, sh.now())
	}
	if err != nil {
		return fmt.Errorf("room %s: joining its stored state: %w", cl.key, err)
	}
	// Counted among the room's nodes from now, not from its first tick:
	// the ticking node plans its changes a lead ahead only while it sees
	// another node (adoptLead), and this one serves from here.
	now := sh.now()
	if err := cl.store.PublishPopulation(ctx, laneKey(cl.key, "", "demand"), cl.set.Node, 0, now.Add(3*tickEvery)); err != nil {
		return fmt.Errorf("room %s: joining its nodes: %w", cl.key, err)
	}
	cl.joined.Store(true)
	return nil
}

// Joined reports whether the room runs on its stored state: always on
// memory; on a store, once Join succeeded. Until then the room's clock is
// its own, so it issues no tokens and admits nobody (see the API).
func (sh *Shared) Joined() bool {
	cl := sh.cluster
	if cl == nil {
		return true
	}
	return cl.joined.Load() // not under mu, held across store calls
}

// commit makes a change through the store: change is applied here, the
// result saved if the stored version is still the one this node has, and
// on a conflict the stored state is adopted and change applied again. When
// the store cannot be reached the change is undone and the error returned:
// a change exists once the store has it.
func (sh *Shared) commit(ctx context.Context, now time.Time, change func() error) error {
	if sh.cluster == nil {
		return change()
	}
	sh.cluster.mu.Lock()
	defer sh.cluster.mu.Unlock()
	if !sh.cluster.joined.Load() {
		return &UnavailableError{errors.New("the room has not joined its stored state yet")}
	}
	return sh.commitLocked(ctx, change)
}

// UnavailableError is a change the state store could not take: nothing
// changed.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return "state store unavailable: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// errSkip is a change that, seen after an adoption, is no longer needed.
var errSkip = errors.New("skipped")

func (sh *Shared) commitLocked(ctx context.Context, change func() error) error {
	cl := sh.cluster
	for range 8 {
		before := sh.exportControl()
		if err := change(); err != nil {
			sh.restore(before)
			if errors.Is(err, errSkip) {
				return nil
			}
			return err
		}
		c := sh.exportControl()
		if cl.version != 0 && sameControl(before, c) && !sh.originPending() {
			return nil // nothing changed: no write
		}
		v, err := cl.store.SaveControl(ctx, cl.key, c, cl.version)
		if err == nil {
			cl.version = v
			cl.shown.Store(v)
			cl.storedOrigin = originOf(c)
			return nil
		}
		if !errors.Is(err, roomstate.ErrConflict) {
			if sh.savedAnyway(ctx, c) {
				return nil
			}
			sh.restore(before)
			return &UnavailableError{fmt.Errorf("saving room state: %w", err)}
		}
		sh.restore(before)
		stored, v, err := cl.store.LoadControl(ctx, cl.key)
		if err != nil {
			return &UnavailableError{fmt.Errorf("loading room state: %w", err)}
		}
		if err := sh.adoptLocked(stored, v, sh.now()); err != nil {
			return err
		}
	}
	return fmt.Errorf("saving room state: %w", roomstate.ErrConflict)
}

// savedAnyway reads the control state back after a save whose outcome is
// unknown (a timeout may come after the write): when the store holds c at
// a newer version, the change went through and this node takes that
// version; otherwise (or when the read fails too) it did not, as far as
// this node can tell. The read bypasses the guard, which the failed save
// may just have tripped. Callers hold sh.cluster.mu.
func (sh *Shared) savedAnyway(ctx context.Context, c roomstate.Control) bool {
	cl := sh.cluster
	stored, v, err := cl.store.Store.LoadControl(ctx, cl.key)
	if err != nil || v <= cl.version || !sameControl(stored, c) {
		return false
	}
	cl.version = v
	cl.shown.Store(v)
	return true
}

func sameControl(a, b roomstate.Control) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// restore puts back a control state exported before a change that did not
// go through.
func (sh *Shared) restore(c roomstate.Control) {
	_ = sh.adoptLocked(c, sh.cluster.version, sh.now())
}

// appliedJSON is applied as stored.
type appliedJSON struct {
	State      admission.State `json:"state"`
	SaleStart  time.Time       `json:"sale_start,omitzero"`
	Rate       float64         `json:"rate"`
	Burst      float64         `json:"burst"`
	Difficulty int             `json:"difficulty"`
	Lanes      []laneJSON      `json:"lanes,omitempty"`
	Tau        time.Duration   `json:"tau"`
	Adaptive   bool            `json:"adaptive"`
	LedgerSize int             `json:"ledger_size"`
	Capacity   float64         `json:"capacity,omitempty"`
}

type laneJSON struct {
	Name  string  `json:"name"`
	Key   string  `json:"key"`
	Value string  `json:"value"`
	Share float64 `json:"share"`
}

func (a applied) MarshalJSON() ([]byte, error) {
	j := appliedJSON{State: a.state, SaleStart: a.saleStart, Rate: a.rate, Burst: a.burst, Difficulty: a.difficulty,
		Tau: a.tau, Adaptive: a.adaptive, LedgerSize: a.ledgerSize, Capacity: a.capacity}
	for _, l := range a.lanes {
		j.Lanes = append(j.Lanes, laneJSON{Name: l.name, Key: l.key, Value: l.value, Share: l.share})
	}
	return json.Marshal(j)
}

func (a *applied) UnmarshalJSON(b []byte) error {
	var j appliedJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*a = applied{state: j.State, saleStart: j.SaleStart, rate: j.Rate, burst: j.Burst, difficulty: j.Difficulty,
		tau: j.Tau, adaptive: j.Adaptive, ledgerSize: j.LedgerSize, capacity: j.Capacity}
	for _, l := range j.Lanes {
		a.lanes = append(a.lanes, laneRule{name: l.Name, key: l.Key, value: l.Value, share: l.Share})
	}
	return nil
}

// exportControl is the room's control state as the store keeps it.
func (sh *Shared) exportControl() roomstate.Control {
	var c roomstate.Control
	for _, l := range sh.lanes() {
		lc := roomstate.ControlOf(l.room.Export())
		if l.name == "" {
			c = lc
			continue
		}
		if c.Lanes == nil {
			c.Lanes = map[string]roomstate.Control{}
		}
		c.Lanes[l.name] = lc
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	c.Rate, c.Burst, c.Reason = sh.rate, sh.burst, sh.reason
	if sh.capacity > 0 {
		c.Capacity, c.Admit, c.AdmitFrom = sh.capacity, sh.admit, sh.admitFrom
	}
	c.Ticked = sh.cluster.ticked
	c.Applied, _ = json.Marshal(sh.applied)
	return c
}

// adoptLocked makes a stored control state this node's. Callers hold
// sh.cluster.mu.
func (sh *Shared) adoptLocked(c roomstate.Control, version uint64, now time.Time) error {
	for _, l := range sh.lanes() {
		lc := c
		if l.name != "" {
			var ok bool
			if lc, ok = c.Lanes[l.name]; !ok {
				continue // a lane this node's config added: its own until saved
			}
		}
		if err := l.room.Adopt(lc.View()); err != nil {
			return err
		}
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(c.Applied) > 0 {
		var a applied
		if err := json.Unmarshal(c.Applied, &a); err != nil {
			return fmt.Errorf("stored config: %w", err)
		}
		if (a.tau != sh.applied.tau || a.adaptive != sh.applied.adaptive) && a.tau > 0 {
			// Another node's config changed tau or fixed_speed: every lane
			// here follows, or its controller would override the cluster's.
			if err := sh.eachRoom(func(r *admission.Room) error { return r.SetSpeedRule(a.tau, a.adaptive) }); err != nil {
				return fmt.Errorf("stored tau: %w", err)
			}
		}
		sh.applied = a
	}
	if c.Rate > 0 {
		sh.rate, sh.burst = c.Rate, math.Max(1, c.Burst)
	}
	sh.setCapacityLocked(c.Capacity)
	if c.Admit > 0 {
		sh.admit, sh.admitFrom = c.Admit, c.AdmitFrom
		sh.plan.Set(c.Admit, c.AdmitFrom)
	}
	sh.reason = c.Reason
	sh.cluster.ticked = c.Ticked
	sh.cluster.storedOrigin = originOf(c)
	sh.cluster.version = version
	sh.cluster.shown.Store(version)
	return sh.rebalance(now, true)
}

// originOf is the fifo rank origins and pre-queue tops of a stored
// control state, its lanes' included, in a comparable form.
func originOf(c roomstate.Control) string {
	o := fmt.Sprint(c.RankSet, c.RankBase, c.RankZero, c.PreTop)
	for _, name := range slices.Sorted(maps.Keys(c.Lanes)) {
		l := c.Lanes[name]
		o += fmt.Sprint("|", name, l.RankSet, l.RankBase, l.RankZero, l.PreTop)
	}
	return o
}

// originPending reports whether a lane of this node set a fifo rank origin
// or handed out pre-queue ranks the store does not have yet, or handed out
// keys beyond where the counter is about to stop. Callers hold
// sh.cluster.mu.
func (sh *Shared) originPending() bool {
	now := sh.now()
	for _, l := range sh.lanes() {
		if l.room.KeyTopDue(now, sh.changeAhead()) {
			return true
		}
	}
	return originOf(sh.exportControl()) != sh.cluster.storedOrigin
}

// Poll adopts the stored control state if another node changed it, and
// notes when this node's places stopped holding a fifo counter at the
// pre-queue's end (TickWanted). Run calls it every poll period; a caller
// running the room in its own time calls it itself, and ClusterTick after
// it when TickWanted says so. A room on memory has nothing to poll.
func (sh *Shared) Poll(ctx context.Context, now time.Time) error {
	cl := sh.cluster
	if cl == nil {
		return nil
	}
	c, v, err := cl.store.LoadControl(ctx, cl.key)
	if err != nil {
		return err
	}
	if err := sh.adoptNewer(c, v, now); err != nil {
		return err
	}
	for _, l := range sh.lanes() {
		if l.holding.Load() && l.room.HoldFreedHere(now) {
			cl.tickWanted.Store(true)
			break
		}
	}
	return nil
}

// adoptNewer adopts a stored control state read at version v, unless this
// node has a newer one.
func (sh *Shared) adoptNewer(c roomstate.Control, v uint64, now time.Time) error {
	cl := sh.cluster
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if v <= cl.version {
		// Versions only grow: an older one is a read that raced a commit
		// of this node's, which has the newer state already.
		return nil
	}
	return sh.adoptLocked(c, v, now)
}

// TickWanted reports, once, whether a poll found that the fifo counter
// stands held at the pre-queue's end and this node's places, which held it
// there as last published, no longer do. A tick now publishes that and,
// when no node's places hold it, releases the counter (ClusterTick) up to
// a tick sooner than the next tick would: the room admits nobody while
// the counter stands there. Run ticks then; a caller running the room in
// its own time asks after each Poll.
func (sh *Shared) TickWanted() bool {
	return sh.cluster != nil && sh.cluster.tickWanted.Swap(false)
}

// sharePassed publishes what the lane's clock needs of every node and
// gives the lane's room the sums. In fifo: the ranks this node hands out
// per second (a place's luck span is the luck window times the room's
// rate of arrivals, not its node's). With an adaptive clock, in both
// orders: the places the clock passed here that were not admitted (the
// clock keeps its lead over the room's admissions, not over one node's
// scaled up); in fifo the places holding the counter at the pre-queue's
// end (those passed and not found eligible yet, and the pre-queue keys
// still to pass: it holds there until none is left); and how many of the
// places the clock passed came and how many were found gone (the lead,
// and fifo's predictions, count the room's share of those that come, not
// one node's: a node that sees few places would learn a share of its own
// from a handful). The shares go last: a store that fails them has the
// others published. A clock at a fixed speed keeps no lead, and publishes
// none of these.
func (sh *Shared) sharePassed(ctx context.Context, l *lane, now, until time.Time) error {
	fifo := l.room.View(now).Order == admission.OrderFIFO
	if fifo {
		issues, _, err := sh.publishSum(ctx, laneKey(sh.cluster.key, l.name, "issues"), l.room.IssueRate(now), now, until)
		if err != nil {
			return err
		}
		l.room.NoteRoomIssueRate(issues)
	}
	if !l.room.Adaptive() {
		return nil
	}
	expected, holding := l.room.Passed(now)
	passed, nodes, err := sh.publishSum(ctx, laneKey(sh.cluster.key, l.name, "passed"), expected, now, until)
	if err != nil {
		return err
	}
	held := 0.0
	if fifo {
		if held, _, err = sh.publishSum(ctx, laneKey(sh.cluster.key, l.name, holdingItem), holding, now, until); err != nil {
			return err
		}
		l.holding.Store(holding > 0)
	}
	l.room.NoteRoomPassed(passed, held, now)
	return sh.shareShows(ctx, l, nodes, now, until)
}

// shareShows publishes how many of the places the clock passed came to be
// admitted here and how many were found gone, and gives the lane's room
// the other nodes' sums: only when as many nodes published them as
// published their passed places (nodes), so a node of a version that
// does not publish them leaves each node its own share rather than a
// part of the room's.
func (sh *Shared) shareShows(ctx context.Context, l *lane, nodes int, now, until time.Time) error {
	came, gone := l.room.ShowRates(now)
	roomCame, cameBy, err := sh.publishSum(ctx, laneKey(sh.cluster.key, l.name, "came"), came, now, until)
	if err != nil {
		return err
	}
	roomGone, goneBy, err := sh.publishSum(ctx, laneKey(sh.cluster.key, l.name, "gone"), gone, now, until)
	if err != nil {
		return err
	}
	if cameBy == nodes && goneBy == nodes {
		l.room.NoteOtherShows(roomCame-came, roomGone-gone, now)
	}
	return nil
}

// holdingItem names the store item of the fifo places holding the
// counter at the pre-queue's end. A node that counts only its places
// passed and not found (a part of what holdingEnd counts) adds to the
// same item, so nodes of both kinds in one room share one sum.
const holdingItem = "unfound"

// publishSum publishes this node's value under key and reads the sum over
// every node.
func (sh *Shared) publishSum(ctx context.Context, key string, v float64, now, until time.Time) (sum float64, nodes int, err error) {
	cl := sh.cluster
	if err := cl.store.PublishPopulation(ctx, key, cl.set.Node, v, until); err != nil {
		return 0, 0, err
	}
	return cl.store.Population(ctx, key, now)
}

// ClusterTick publishes this node's observations, lets the controller run
// for the cluster when no node did within the last tick or when its tick
// releases a fifo counter held at the pre-queue's end, and sets this
// node's share of the rate from every node's demand. Run calls it once a
// tick on a state store, as Tick on memory, and when a poll wants it
// (TickWanted); a caller running the room in its own time calls it
// itself. On memory it does nothing.
func (sh *Shared) ClusterTick(ctx context.Context, now time.Time) error {
	cl := sh.cluster
	if cl == nil {
		return nil
	}
	until := now.Add(3 * tickEvery)
	lanes := sh.lanes()
	fifo := sh.Room.View(now).Order == admission.OrderFIFO
	type sums struct{ population, eligible float64 }
	total := make([]sums, len(lanes))
	mine, nodes := 0.0, 0
	for i, l := range lanes {
		pop, elig := l.room.Population(now), l.room.EligibleRate(now)
		mine += demandOf(l.room, now)
		if err := cl.store.PublishPopulation(ctx, laneKey(cl.key, l.name, "population"), cl.set.Node, pop, until); err != nil {
			return err
		}
		if err := cl.store.PublishPopulation(ctx, laneKey(cl.key, l.name, "eligible"), cl.set.Node, elig, until); err != nil {
			return err
		}
		p, n, err := cl.store.Population(ctx, laneKey(cl.key, l.name, "population"), now)
		if err != nil {
			return err
		}
		e, _, err := cl.store.Population(ctx, laneKey(cl.key, l.name, "eligible"), now)
		if err != nil {
			return err
		}
		total[i].population, total[i].eligible = p, e
		l.roomActive.Store(p > 0 || e > 0)
		nodes = max(nodes, n)
		if err := sh.sharePassed(ctx, l, now, until); err != nil {
			return err
		}
	}
	if err := sh.publishActive(ctx, now, until); err != nil {
		return err
	}
	demand := laneKey(cl.key, "", "demand")
	if err := cl.store.PublishPopulation(ctx, demand, cl.set.Node, mine, until); err != nil {
		return err
	}
	all, n, err := cl.store.Population(ctx, demand, now)
	if err != nil {
		return err
	}
	nodes = max(nodes, n)
	headroom := shareHeadroom
	if nodes != cl.nodes {
		cl.changed = now
	}
	if now.Sub(cl.changed) < cl.window && !fifo {
		// Not in fifo: there a node spending ahead of its share serves
		// its own keys before earlier keys at the other nodes.
		headroom = rejoinHeadroom
	}
	share := shareOf(mine, all, nodes, headroom)
	sh.mu.Lock()
	cl.share, cl.nodes, cl.demand = share, nodes, demandShare(mine, all)
	_ = sh.rebalance(now, true)
	lead := sh.adoptLead()
	// Nodes sharing a fifo room tell places their moments from the
	// ticking node's figures (admission.Forecast); a node alone from its
	// own.
	forecasts := fifo && nodes > 1
	sh.mu.Unlock()
	for _, l := range lanes {
		l.room.SetSpeedDelay(lead)
	}
	if err := sh.RetryPending(ctx, now); err != nil {
		return err
	}
	// A tick that releases a fifo counter held at the pre-queue's end is
	// made at once, whenever another node ticked: the counter stands
	// there, and the room's rate goes unused until it moves on.
	releases := func() bool {
		for i, l := range lanes {
			if fifo && l.room.ReleasesHold(now, total[i].population) {
				return true
			}
		}
		return false
	}
	releasing := releases()
	cl.mu.Lock()
	ticking := releasing || now.Sub(cl.ticked) >= tickDue
	cl.mu.Unlock()
	if fifo && ticking {
		// About to tick: the counter may run as far as the ranks every
		// node handed out (a read of the shared counter, which takes none).
		for _, l := range lanes {
			next, err := cl.store.ReserveRanks(ctx, laneKey(cl.key, l.name, "ranks"), 0)
			if err != nil {
				return err
			}
			l.room.NoteRanked(next)
		}
	}
	return sh.commit(ctx, now, func() error {
		if now.Sub(cl.ticked) < tickDue && !(releasing && releases()) {
			if fifo && sh.originPending() {
				return nil // store the rank origin this node set
			}
			return errSkip // another node ticked for the cluster
		}
		moved := false
		for i, l := range sh.lanes() {
			if i < len(total) && l == lanes[i] {
				if fifo {
					moved = moved || l.room.FIFOTickDue(now, total[i].population, minCruiseStep, sh.changeAhead())
					continue
				}
				next, cur := l.room.NextCruise(now, total[i].population, total[i].eligible)
				moved = moved || math.Abs(next-cur) > minCruiseStep*cur
			}
		}
		sh.mu.Lock()
		if sh.steerLocked(now.Add(-sh.countLag()), now.Add(sh.adoptLead())) {
			moved = true
			_ = sh.rebalance(now, false)
		}
		sh.mu.Unlock()
		if !moved {
			// Every reading kept costs the stored clock's past a
			// segment: a speed that hardly moves is left as it is. A fifo
			// room's tick stores the figures every node tells a place its
			// moment from, about once a tick, while places are told
			// moments. It leaves the next node to try a tick of its own:
			// a node that has not polled since pays a conflict and a
			// read, as for any tick.
			if forecasts && sh.forecastDue(sh.now()) {
				for _, l := range sh.lanes() {
					l.room.NoteForecast(sh.now())
				}
				return nil
			}
			if fifo && sh.originPending() {
				return nil // store the rank origin this node set
			}
			return errSkip
		}
		for i, l := range sh.lanes() {
			if i < len(total) && l == lanes[i] {
				// At the moment of the tick, after this tick's store
				// calls: a speed takes effect a lead after it.
				at := sh.now()
				l.room.TickWith(at, total[i].population, total[i].eligible)
				if forecasts {
					l.room.NoteForecast(at)
				}
			}
		}
		cl.ticked = now
		return nil
	})
}

// tickDue is how long after the cluster's last tick a node ticks for it:
// a little less than a tick, as a poll may adopt another node's tick
// meanwhile.
const tickDue = tickEvery * 9 / 10

// forecastDue reports whether a lane's fifo figures are due at now
// (admission.Room.ForecastDue).
func (sh *Shared) forecastDue(now time.Time) bool {
	return slices.ContainsFunc(sh.lanes(), func(l *lane) bool { return l.room.ForecastDue(now, tickDue) })
}

// publishActive publishes this node's count of the visitors on the site,
// of those leaving within the capacity controller's lookahead, of the
// sessions ended within it and within the window, and its sketches of
// the passes and of those staying; it takes the room's: the sums of every
// node's counts, the active passes counted once however many nodes saw
// them, and those leaving every node they reached (admission.RoomTally).
// A room sized by its rate counts only its own, at no store cost.
func (sh *Shared) publishActive(ctx context.Context, now, until time.Time) error {
	cl := sh.cluster
	mine := sh.active.Tally(now, admission.CapacityLookahead)
	sh.mu.Lock()
	sized := sh.capacity > 0
	if !sized {
		sh.tally = mine
	}
	sh.mu.Unlock()
	if !sized {
		return nil
	}
	var sum admission.Tally
	counted := 0 // the nodes whose active passes are in sum.Active
	for i, item := range []struct {
		what string
		mine float64
		sum  *float64
	}{
		{"active", mine.Active, &sum.Active},
		{"leaving", mine.Leaving, &sum.Leaving},
		{"ended", mine.Ended, &sum.Ended},
		{"ended_window", mine.EndedInWindow, &sum.EndedInWindow},
	} {
		key := laneKey(cl.key, "", item.what)
		if err := cl.store.PublishPopulation(ctx, key, cl.set.Node, item.mine, until); err != nil {
			return err
		}
		s, n, err := cl.store.Population(ctx, key, now)
		if err != nil {
			return err
		}
		*item.sum = s
		if i == 0 {
			counted = n
		}
	}
	distinct, sketched, err := sh.shareSketch(ctx, "sketch", sh.active.Sketch(now), now, until)
	if err != nil {
		return err
	}
	staying, stayingFrom, err := sh.shareSketch(ctx, "staying", sh.active.StayingSketch(now, admission.CapacityLookahead), now, until)
	if err != nil {
		return err
	}
	if sketched < counted {
		// A node whose sketch is missing or unreadable (another
		// version): the sum, an upper bound, holds the site below its
		// capacity rather than above it.
		sketched = 0
	}
	if stayingFrom < sketched {
		staying = math.NaN() // a node of a version without it: the scaled sum
	}
	room := admission.RoomTally(sum, distinct, staying, sketched)
	sh.mu.Lock()
	sh.tally = room
	sh.mu.Unlock()
	return nil
}

// shareSketch publishes this node's sketch sk of its passes under name
// and returns the count of every node's merged, and how many it merged (a
// sketch this build cannot read is not).
func (sh *Shared) shareSketch(ctx context.Context, name string, sk *queue.Sketch, now, until time.Time) (distinct float64, nodes int, err error) {
	cl := sh.cluster
	key := laneKey(cl.key, "", name)
	mine, err := sk.MarshalBinary()
	if err != nil {
		return 0, 0, fmt.Errorf("active passes' %s: %w", name, err)
	}
	if err := cl.store.PublishSketch(ctx, key, cl.set.Node, mine, until); err != nil {
		return 0, 0, err
	}
	all, err := cl.store.Sketches(ctx, key, now)
	if err != nil {
		return 0, 0, err
	}
	var union, one queue.Sketch
	for _, data := range all {
		if one.UnmarshalBinary(data) != nil {
			continue
		}
		union.Merge(&one)
		nodes++
	}
	return union.Estimate(), nodes, nil
}

// changeAhead is how far ahead a fifo node looks for the counter's stop
// (KeyTopDue, FIFOTickDue): past the next tick and the speed's delay
// (adoptLead, at most two polls), as a change made now takes effect no
// sooner.
func (sh *Shared) changeAhead() time.Duration {
	return max(2*tickEvery, tickEvery+2*time.Duration(sh.cluster.set.Poll))
}

// adoptLead is how far ahead of the tick that sets them the ticking
// node's changes take effect: two polls, by when every node has adopted
// them. So no budget window is sized by two capacity rates, and every node
// reads the adaptive lottery clock alike at every checkpoint
// (admission.Room.SetSpeedDelay). A node alone needs none.
func (sh *Shared) adoptLead() time.Duration {
	if sh.cluster.nodes <= 1 {
		return 0
	}
	return 2 * time.Duration(sh.cluster.set.Poll)
}

// countLag is how late the room's count is when the ticking node steers
// by it (admission.ClusterCountLag): its own passes are in it at once, the
// other nodes' as they published them at their last tick, and those nodes
// make the admissions in proportion to their demand. A node alone counts
// its own at once.
func (sh *Shared) countLag() time.Duration {
	if sh.cluster.nodes <= 1 {
		return 0
	}
	return admission.ClusterCountLag(sh.cluster.demand, tickEvery)
}

// RetryPending applies a config whose commit the store refused (it was
// down, or the room had not joined yet), once it takes it. ClusterTick
// calls it. On memory nothing waits.
func (sh *Shared) RetryPending(ctx context.Context, now time.Time) error {
	cl := sh.cluster
	if cl == nil {
		return nil
	}
	cl.mu.Lock()
	pending := cl.pending
	cl.mu.Unlock()
	if pending == nil {
		return nil
	}
	err := sh.commit(ctx, now, func() error { return sh.reconfigure(*pending, now) })
	if err != nil {
		return err
	}
	cl.mu.Lock()
	if cl.pending == pending {
		cl.pending = nil
	}
	cl.mu.Unlock()
	return nil
}

// ApplyConfig commits a config's Settings; when the store cannot take them
// they wait, and the room's loop applies them when it can.
func (sh *Shared) ApplyConfig(s Settings, now time.Time) error {
	err := sh.commit(context.Background(), now, func() error { return sh.reconfigure(s, now) })
	if sh.cluster == nil {
		return err
	}
	sh.cluster.mu.Lock()
	defer sh.cluster.mu.Unlock()
	var down *UnavailableError
	switch {
	case errors.As(err, &down):
		sh.cluster.pending = &s
	case err == nil:
		sh.cluster.pending = nil
	}
	return err
}

// shareOf is a node's share of the rate from its demand (mine) and the
// sum of every node's (all), nodes having published. A floor keeps a node
// without demand able to admit its first visitors; the headroom lets the
// shares add up to more than the rate, so the shared budget, not an
// estimate, is what binds.
func shareOf(mine, all float64, nodes int, headroom float64) float64 {
	switch {
	case all > 0:
		return math.Min(1, math.Max(mine/all*headroom, minShare/float64(max(nodes, 1))))
	case nodes > 1:
		return 1 / float64(nodes)
	}
	return 1
}

// demandShare is this node's share of the room's demand: mine of all,
// none when no node has any.
func demandShare(mine, all float64) float64 {
	if all <= 0 {
		return 0
	}
	return math.Min(1, math.Max(0, mine/all))
}

// demandOf is what a lane's visitors at this node ask of its bucket, in
// admissions per second: the places found eligible over the room's window,
// or over the time since this node started when that is shorter, so a
// node that rejoins shows its demand within seconds instead of growing
// into it over the window (a minute by default) while its visitors wait;
// plus its backlog spread over backlogDrain: the slots its bucket gave
// that are not due yet. A slot is a promise: a node whose share is too
// small for the visitors it has (a killed node's went to it, a restarted
// node's came back) holds them in its slots while the others may run out
// of eligible visitors; the backlog moves the share to where they wait
// within a tick, where their rate over a window would take seconds to
// show it.
func demandOf(r *admission.Room, now time.Time) float64 {
	backlog := math.Max(0, -r.BucketLevel(now))
	return r.ObservedEligibleRate(now) + backlog/backlogDrain.Seconds()
}

// backlogDrain is how soon a node's share should serve its backlog (see
// demandOf).
const backlogDrain = 5 * time.Second

// shareHeadroom lets each node's bucket run a little above its share of
// the demand, so the shared budget, not an estimate, is what binds: a
// window's admissions that one node's bucket would leave unspent go to
// another's.
const shareHeadroom = 1.1

// rejoinHeadroom replaces shareHeadroom for a window after a node joined
// or left: the demand each node measured over that window still counts the
// visitors the change moved (a killed node's went to the others; a
// restarted node's come back to it), so a node's share may sit unspent
// while another's visitors wait. The shared budget still caps the cluster;
// the cost is that nodes with more demand than share admit in the order
// they reach the budget rather than strictly by their share
// (docs/SCALING.md, "A node joining or leaving").
const rejoinHeadroom = 1.5

// minShare is the least share of the rate a node's bucket gets, over the
// number of nodes.
const minShare = 0.1

// ClusterStatus is the state store's part of a room's admin API figures.
type ClusterStatus struct {
	// Store is memory, bolt or dynamodb; Node this node's id.
	Store string `json:"store"`
	Node  string `json:"node"`
	// Version is the stored control state's version this node runs.
	Version uint64 `json:"version"`
	// Nodes is how many nodes published observations lately; Share this
	// node's share of the rate.
	Nodes int     `json:"nodes"`
	Share float64 `json:"share"`
	// Joined is false while the room has not yet read (or stored) its
	// control state since this node started: it issues no new tokens and
	// admits nobody until then.
	Joined bool `json:"joined"`
	// Failing is true from a failure of the store until a call is
	// answered.
	Failing bool `json:"failing"`
	// OnUnavailable is what the room does while the store fails.
	OnUnavailable string `json:"on_unavailable"`
}

// ClusterStatus is the state store's view of the room; nil on memory.
func (sh *Shared) ClusterStatus() *ClusterStatus {
	cl := sh.cluster
	if cl == nil {
		return nil
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return &ClusterStatus{Store: cl.set.Type, Node: cl.set.Node, Version: cl.shown.Load(), Nodes: cl.nodes, Share: cl.share, Joined: cl.joined.Load(), Failing: cl.store.Failing(), OnUnavailable: cl.set.OnUnavailable}
}
