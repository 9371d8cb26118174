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

// State is a room's operating state.
type State string

// Room states (docs/DESIGN.md, "Room states").
const (
	// StateOpen lets everyone through without a queue.
	StateOpen State = "open"
	// StateQueue runs the waiting room.
	StateQueue State = "queue"
	// StateScheduled queues visitors before SaleStart (the pre-queue) and
	// becomes StateQueue at SaleStart.
	StateScheduled State = "scheduled"
	// StatePaused stops the serving clock: nobody is admitted and nobody loses
	// their place.
	StatePaused State = "paused"
	// StateClosed shows the closed or sold-out page.
	StateClosed State = "closed"
)

// ParseState checks a state name.
func ParseState(s string) (State, error) {
	switch st := State(s); st {
	case StateOpen, StateQueue, StateScheduled, StatePaused, StateClosed:
		return st, nil
	}
	return "", fmt.Errorf("unknown room state %q (want open, queue, scheduled, paused or closed)", s)
}

// RoomConfig is the initial control state of a room.
type RoomConfig struct {
	Name string
	// Lane names the priority lane this room judges, empty for the default
	// lane. Every lane of a waiting room is a Room of the same Name with its
	// own clock and bucket (docs/FAIRNESS.md, "Lanes").
	Lane  string
	State State
	// SaleStart is when a scheduled room starts admitting.
	SaleStart time.Time
	// Rate is the target admissions per second.
	Rate float64
	// Burst is the most admissions the bucket allows at once (at least 1).
	Burst float64
	// Tau is the mean wait the clock starts with, before the controller has
	// observed anything (or always, when Adaptive is false).
	Tau time.Duration
	// Adaptive lets the controller set the clock's speed from the observed
	// population; otherwise the speed stays at 1/Tau.
	Adaptive bool
	// Difficulty is the proof-of-work difficulty in bits for new tokens.
	Difficulty int
	// Window is how far back population and eligibility are measured; it
	// should be at least the longest backoff.
	Window time.Duration
	// Controller bounds the speed changes; the zero value means queue.DefaultController.
	Controller queue.Controller
	// Memory is how far back the room remembers its clock, so an attempt is
	// judged at the checkpoint its token names even when presented late. It
	// should be at least the longest a token stays valid past its nxt
	// (TokenTTL plus the leeway); zero means Window.
	Memory time.Duration
	// Order is the queue's rule; empty means OrderLottery. In OrderFIFO the
	// serving clock is a counter of arrival ranks advancing at Rate (Tau
	// does not apply), and Adaptive lets it make up for ranks nobody presents.
	Order Order
	// Luck is the fifo luck window W: a place's key is its arrival rank
	// plus an exponential draw of mean W's worth of arrivals.
	Luck time.Duration
	// Ranker hands out fifo arrival ranks; nil means a memoryRanker.
	Ranker Ranker
	// Policy is the gate's policy, zero fields DefaultPolicy's: its
	// checkpoint spacing sets how far ahead of the admissions the adaptive
	// lottery clock passes keys (Room.Tick).
	Policy Policy
}

// maxSaleStartAge is how far in the past a sale start may lie: the
// checkpoint grid counts from it in time.Duration, which reaches 292 years.
const maxSaleStartAge = 100 * 365 * 24 * time.Hour

func checkSaleStart(saleStart, now time.Time) error {
	if !saleStart.IsZero() && now.Sub(saleStart) > maxSaleStartAge {
		return fmt.Errorf("sale start %s is more than a century ago", saleStart.UTC().Format(time.RFC3339))
	}
	return nil
}

// View is one consistent reading of a room's control state.
type View struct {
	Name       string
	Lane       string
	State      State // the effective state: scheduled becomes queue at SaleStart
	SaleStart  time.Time
	Clock      queue.Clock
	Rate       float64
	Difficulty int
	// Cruise is the speed the clock runs at while admitting.
	Cruise float64
	// Pace, when set, is the speed the wait estimate is read from instead
	// of Cruise: the rate over the places ahead, for a lottery clock that
	// passes known keys (its Cruise stops and races as keys crowd and thin).
	Pace float64
	// LatestStart is the latest sale start the room was ever given: no
	// token's first checkpoint lies much beyond it.
	LatestStart time.Time
	// Opens is where the room's checkpoint grid starts: the sale start of a
	// scheduled room, otherwise when the room last began to queue (from
	// open or closed; a pause does not move it).
	Opens time.Time
	// Moved is when Opens last moved (a sale start set anew, the room
	// started early or began to queue again), zero if it never did: a
	// token minted before then names checkpoints of the old grid.
	Moved time.Time
	// Past holds the clock's earlier readings, oldest first, back to the
	// room's memory: each is valid from its Origin to the next one's.
	Past []queue.Clock
	// Order is the queue's rule. For OrderFIFO the clock counts arrival
	// ranks, and the fields below place the ranks on it.
	Order Order
	// Luck is the fifo luck window.
	Luck time.Duration
	// RankSet reports whether a rank was taken since the room began to
	// queue; RankBase is that first rank, and RankZero the clock's reading
	// when it was taken: a place's key counts from RankBase, and the clock
	// serves it once it reads RankZero + key.
	RankSet  bool
	RankBase int64
	RankZero float64
	// PreQueue is the number of ranks the pre-queue took (fifo).
	PreQueue float64
	// Ranked is the number of ranks taken since RankBase (fifo).
	Ranked float64
	// FirstLuck and LastLuck are the luck spans of the first and latest
	// places taken after the start (fifo).
	FirstLuck, LastLuck float64
	// KeyTop is the highest key handed out that this node knows of (fifo;
	// Export and Adopt carry it between nodes, so the counter's stop
	// passes every node's places).
	KeyTop float64
	// PreTop is one past the highest pre-queue rank this node knows of
	// (fifo; Export and Adopt carry it between nodes, so every node's
	// pre-queue, and the end its counter holds at, has the room's size).
	PreTop int64
	// Hold is where the fifo counter stops until every pre-queue place
	// has been found (fifoHold; 0: nowhere). It is stored with the
	// clock, so a change any node makes (a pause, a resume) keeps the
	// stop.
	Hold float64
	// Short is how many present keys the fifo counter is short of its lead
	// (fifoLead): its next tick passes them (View.fifoWhen).
	Short float64
	// Delay is how long after a tick its change of the fifo counter
	// takes effect (Room.SetSpeedDelay): the next tick's plan runs from
	// then (View.fifoWhen).
	Delay time.Duration
	// Shows is the share of the places the fifo counter passed that came
	// (Room.showShare): it passes keys at the rate over it, skipping those
	// that walked away (View.fifoWhen).
	Shows float64
	// Forecasts are the figures of the last ticks made for the nodes
	// sharing a fifo room, oldest first, each in force from its From until
	// the next one's: stored with the clock, so every node tells one key
	// one moment (View.Forecasting).
	Forecasts []Forecast
}

// Forecast is what a fifo room shared by several nodes tells a place
// ahead of its counter from (View.fifoWhen): the View fields of the same
// names as the node that ticked for the room read them then. A node's
// own figures differ from another's (each learns the others' ranks,
// shows and lucks at its own tick), so the tick stores them with the
// clock, and every node predicts from the ticking node's. Like the
// counter's speed, they take effect the speed's delay after the tick, by
// when every node has them.
type Forecast struct {
	// At is the tick's moment; From when its figures take effect.
	At, From                    time.Time
	Ranked, FirstLuck, LastLuck float64
	Short, Shows                float64
}

// maxForecasts bounds View.Forecasts: the one in force and those still
// to come, a tick apart over the speed's delay (two polls: 2 to 3 of
// them at the default poll).
const maxForecasts = 8

// Forecasting is what fifoWhen predicts from at now: the shared tick's
// figures in force, or this node's own when none is (alone, or no node
// ticked for the room within roomSumsFresh of their taking effect).
func (v *View) Forecasting(now time.Time) Forecast {
	for _, f := range slices.Backward(v.Forecasts) {
		if now.Before(f.From) {
			continue
		}
		if now.Sub(f.From) <= roomSumsFresh {
			return f
		}
		break
	}
	return v.ownForecast()
}

// ownForecast is the Forecast of this node's own figures.
func (v *View) ownForecast() Forecast {
	return Forecast{Ranked: v.Ranked, FirstLuck: v.FirstLuck, LastLuck: v.LastLuck, Short: v.Short, Shows: v.Shows}
}

// maxPast is the most readings View.Past keeps: a room whose speed
// changes more often keeps its oldest readings merged (compactPast), so
// its stored control state stays bounded (about 150 bytes of JSON a
// reading: under 10 KB a lane) however long its memory.
const maxPast = 64

// compactPast merges readings of past, oldest first, until at most max
// are left: each merge replaces two consecutive readings by one running
// at a constant speed from the first's origin and value to the reading
// after them, so the clock still reads exactly what it read at every
// origin kept, and between them the straight line through those values
// (never backwards: the clock only grows). The pair merged is, among the
// older half of the readings, the one whose dropped origin the line misses
// least (the oldest among equals): the newer half, which covers the
// checkpoints of tokens presented on time (a speed change a second at
// most, so at least the last max/2 seconds), stays exact. The result depends only on past, so every node that computes
// it, or adopts it from the store, reads the same S(t).
func compactPast(past []queue.Clock, max int) []queue.Clock {
	for len(past) > max && len(past) >= 3 {
		best, bestErr := -1, math.Inf(1)
		for i := 0; i+2 < len(past) && i <= (len(past)-1)/2; i++ {
			if e := mergeError(past[i], past[i+1], past[i+2]); e < bestErr {
				best, bestErr = i, e
			}
		}
		a, next := past[best], past[best+2]
		merged := queue.Clock{Origin: a.Origin, Value: a.Value, Segments: []queue.Segment{{Start: a.Origin, Speed: lineSpeed(a, next)}}}
		past = append(append(past[:best:best], merged), past[best+2:]...)
	}
	return past
}

// lineSpeed is the speed of the line from a's origin and value to next's.
func lineSpeed(a, next queue.Clock) float64 {
	dt := next.Origin.Sub(a.Origin).Seconds()
	if dt <= 0 {
		return 0
	}
	return math.Max(0, next.Value-a.Value) / dt
}

// mergeError is how far the line from a to next misses b's value at b's
// origin.
func mergeError(a, b, next queue.Clock) float64 {
	at := a.Value + lineSpeed(a, next)*b.Origin.Sub(a.Origin).Seconds()
	return math.Abs(at - b.Value)
}

// ClockAt is the serving clock's reading at t, from the room's memory when
// t is in the past, so an attempt is judged at the checkpoint its token
// names however late it is presented. Before the oldest reading kept it
// answers with the oldest: no token stays valid that long unpresented.
func (v View) ClockAt(t time.Time) float64 {
	c := v.Clock
	for i := len(v.Past) - 1; i >= 0 && t.Before(c.Origin); i-- {
		c = v.Past[i]
	}
	return c.At(t)
}

// Room is the shared control state of one waiting room: its state, serving
// clock, admission bucket and the aggregate observations the controller uses.
// Reads are lock-free; changes take a lock and publish a new View.
type Room struct {
	mu     sync.Mutex
	view   atomic.Pointer[View]
	stored State // the state as set, before scheduled turns into queue
	tau    float64
	// adaptive is read by View (fifoShort) without mu: changes take mu.
	adaptive   atomic.Bool
	controller queue.Controller
	memory     time.Duration
	queueing   time.Time // when the room last began to queue
	bucket     *queue.Bucket
	pacer      *queue.Pacer
	// shared keeps the slots this node's places took from the shared
	// quota, for a place presenting late (sharedSlot).
	shared   *queue.Grants
	presence *presence
	// slots are the slots this node told holders to come for (lapse.go).
	slots *slotWatch
	// lapsed counts the slots this node lapsed.
	lapsed atomic.Int64
	shows  shows
	// roomPassed is every node's Passed, summed (NoteRoomPassed).
	roomPassed roomSums
	// otherShows is the other nodes' ShowRates, summed (NoteOtherShows).
	otherShows roomSums
	eligible   *rateWindow
	started    time.Time  // when this node's room began to observe
	fifo       *fifoState // nil unless the order is fifo
	quota      atomic.Pointer[quotaBox]
	policy     Policy
	lastTick   time.Time // the lottery clock's last tick
	// speedDelay is how long after it is made a change of the clock
	// takes effect (SetSpeedDelay), in nanoseconds; 0 on a node alone.
	// Read without mu by View (fifoShort).
	speedDelay atomic.Int64
}

// Quota is a room's admissions across every node that shares it (see
// roomstate.Budget): when the room has one, it gives every slot, in the
// order places are found eligible at any node, at the room's rate; a
// node's bucket gives slots only while the quota cannot (a store outage
// under on_unavailable local). A slot takes its admission from the quota
// when it is given, so a slot once given is kept: no later slot, at any
// node, can take its admission.
type Quota interface {
	// Reserve takes one admission for a slot at or after at (never before
	// now): the slot is at, or the start of the first later budget window
	// with an admission left. shared is false, with nothing taken, when
	// the room is to use its own bucket instead. An error means the
	// budget could not be reached: nothing was taken.
	Reserve(ctx context.Context, at, now time.Time) (slot time.Time, shared bool, err error)
	// Refund gives back the admission of a slot that will not be used.
	Refund(slot time.Time)
	// Lapse gives back the admission of a slot whose holder never came,
	// at the end of the line: to the window the next place found is
	// given, across the cluster, which then admits one more than its
	// share (the slot's admitted one fewer).
	Lapse(slot, now time.Time)
}

// QuotaSpentError is a Quota's answer when it gives no slot ahead and the
// current window is spent: the place holds nothing and asks again at
// Retry, the next window.
type QuotaSpentError struct{ Retry time.Time }

func (e *QuotaSpentError) Error() string { return "admission budget spent for now" }

type quotaBox struct{ q Quota }

// SetQuota makes every admission of the room take from q too; nil removes
// the cap (one node alone).
func (r *Room) SetQuota(q Quota) {
	if q == nil {
		r.quota.Store(nil)
		return
	}
	r.quota.Store(&quotaBox{q})
}

func (r *Room) sharedQuota() Quota {
	if b := r.quota.Load(); b != nil {
		return b.q
	}
	return nil
}

// NewRoom validates cfg and returns a room whose clock starts at now.
func NewRoom(cfg RoomConfig, now time.Time) (*Room, error) {
	if cfg.Name == "" {
		return nil, fmt.Errorf("room needs a name")
	}
	if _, err := ParseState(string(cfg.State)); err != nil {
		return nil, err
	}
	if err := CheckRate(cfg.Rate); err != nil {
		return nil, fmt.Errorf("room %s: %w", cfg.Name, err)
	}
	if cfg.Tau <= 0 {
		return nil, fmt.Errorf("room %s: tau must be positive", cfg.Name)
	}
	if err := tokens.CheckDifficulty(cfg.Difficulty); err != nil {
		return nil, fmt.Errorf("room %s: %w", cfg.Name, err)
	}
	if cfg.State == StateScheduled && cfg.SaleStart.IsZero() {
		return nil, fmt.Errorf("room %s: a scheduled room needs a sale start", cfg.Name)
	}
	if err := checkSaleStart(cfg.SaleStart, now); err != nil {
		return nil, fmt.Errorf("room %s: %w", cfg.Name, err)
	}
	order, err := ParseOrder(string(cfg.Order))
	if err != nil {
		return nil, fmt.Errorf("room %s: %w", cfg.Name, err)
	}
	if cfg.Luck < 0 {
		return nil, fmt.Errorf("room %s: luck window must not be negative", cfg.Name)
	}
	ctl := cfg.Controller
	if ctl == (queue.Controller{}) {
		ctl = queue.DefaultController
	}
	r := &Room{
		stored:     cfg.State,
		tau:        cfg.Tau.Seconds(),
		controller: ctl,
		memory:     cmp.Or(cfg.Memory, cfg.Window),
		queueing:   now,
		bucket:     queue.NewRememberingBucket(cfg.Rate, math.Max(1, cfg.Burst), now),
		pacer:      queue.NewPacer(cfg.Rate, cfg.Burst, now),
		shared:     queue.NewGrants(),
		presence:   newPresence(cfg.Window),
		slots:      newSlotWatch(),
		shows:      newShows(),
		eligible:   newRateWindow(cfg.Window),
		started:    now,
		policy:     cfg.Policy.withDefaults(),
	}
	r.adaptive.Store(cfg.Adaptive)
	v := &View{
		Name:        cfg.Name,
		Lane:        cfg.Lane,
		SaleStart:   cfg.SaleStart,
		Rate:        cfg.Rate,
		Difficulty:  cfg.Difficulty,
		Cruise:      1 / cfg.Tau.Seconds(),
		LatestStart: cfg.SaleStart,
		Clock:       queue.Clock{Origin: now},
		Order:       order,
	}
	if order == OrderFIFO {
		r.fifo = &fifoState{luck: cfg.Luck, issues: newRateWindow(fifoIssueWindow)}
		r.SetRanker(cfg.Ranker)
		v.Cruise, v.Luck = cfg.Rate, cfg.Luck
	}
	r.publish(v, now)
	return r, nil
}

// SetSpeedDelay makes a change of the clock's speed, or of where fifo's
// counter stops (a tick's, a pause, a resume, a new tau), take effect d
// after it is made, not at once. Nodes sharing the room judge a place at a
// checkpoint on the clock's reading there: a speed set at once reaches a
// node at its next poll, and a checkpoint between the change and that
// poll reads one value at the node that made it and another at the
// others, so one login's tabs at two nodes can be judged apart, and in
// fifo a node reading ahead finds its places eligible before places the
// room passed first. Set ahead by more than a node's lag, every node
// reads every checkpoint alike. A node alone needs none.
func (r *Room) SetSpeedDelay(d time.Duration) {
	r.speedDelay.Store(int64(max(d, 0)))
}

// delay is the speed delay (SetSpeedDelay).
func (r *Room) delay() time.Duration { return time.Duration(r.speedDelay.Load()) }

// speedFrom is when a speed the room sets at now takes effect: later by
// the speed delay, but for the start's speed. The last tick before a sale
// start sets the speed the clock runs at from the start (publish) on the
// clock as it stands: the pre-queue's keys are seen in the last 1.8 s
// before the start, too late for a tick earlier by the delay, so a node
// that polls after the start reads the start's speed late. Callers hold
// r.mu.
func (r *Room) speedFrom(v *View, now time.Time) time.Time {
	if r.stored == StateScheduled && !now.After(v.SaleStart) {
		return now
	}
	return now.Add(r.delay())
}

// View returns the control state as of now.
func (r *Room) View(now time.Time) View {
	v := *r.view.Load()
	if v.State == StateScheduled && !now.Before(v.SaleStart) {
		v.State = StateQueue
	}
	if r.fifo != nil && v.RankSet {
		v.PreQueue = float64(max(0, r.fifo.preQueueTop()-v.RankBase))
		v.Ranked = float64(max(0, r.fifo.top.Load()-v.RankBase))
		v.FirstLuck = math.Float64frombits(r.fifo.firstLuck.Load())
		v.LastLuck = math.Float64frombits(r.fifo.lastLuck.Load())
	}
	if r.fifo != nil {
		v.Short = r.fifoShort(&v, now)
		v.Shows = r.showShare(now)
		v.Delay = r.delay()
	}
	return v
}

// State is View(now).State, without copying the rest of the view: the
// Caddy module publishes it on every request.
func (r *Room) State(now time.Time) State {
	v := r.view.Load()
	if v.State == StateScheduled && !now.Before(v.SaleStart) {
		return StateQueue
	}
	return v.State
}

// Name is the room's name, the audience of its tokens.
func (r *Room) Name() string { return r.view.Load().Name }

// lane is the lane the room judges, empty for the default lane.
func (r *Room) lane() string { return r.view.Load().Lane }

// Active reports whether the room had visitors over the last window: a
// place presented, or found eligible (admitted, or given a slot).
func (r *Room) Active(now time.Time) bool {
	return r.presence.count(now) > 0 || r.eligible.rate(now) > 0
}

// SetState changes the state at now. Changing to scheduled needs saleStart.
func (r *Room) SetState(s State, saleStart time.Time, now time.Time) error {
	if _, err := ParseState(string(s)); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v := *r.view.Load()
	if s == StateScheduled {
		if saleStart.IsZero() {
			return fmt.Errorf("a scheduled room needs a sale start")
		}
		if err := checkSaleStart(saleStart, now); err != nil {
			return err
		}
		v.SaleStart = saleStart
		if saleStart.After(v.LatestStart) {
			v.LatestStart = saleStart
		}
	}
	if (r.stored == StateOpen || r.stored == StateClosed) && s != r.stored {
		r.queueing = now
		if r.fifo != nil {
			// A new queue: ranks count from the next one taken, and
			// nothing holds its counter.
			v.RankSet, v.Hold, v.Forecasts = false, 0, nil
			r.fifo.sharedPreTop.Store(0)
			r.fifo.maxKey.Store(0)
			r.fifo.firstLuck.Store(0)
			r.fifo.sharedKey.Store(0)
		}
	}
	r.stored = s
	r.publish(&v, now)
	return nil
}

// CheckRate is the one rule for a target admission rate: a positive,
// finite number of admissions per second. The room, the config and the
// admin API all apply it.
func CheckRate(rate float64) error {
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return fmt.Errorf("rate %v: must be a positive number of admissions per second", rate)
	}
	return nil
}

// SetRate changes the target admission rate and bucket burst at now.
func (r *Room) SetRate(rate, burst float64, now time.Time) error {
	if err := CheckRate(rate); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bucket.SetRate(rate, math.Max(1, burst), now)
	r.pacer.SetRate(rate, burst, now)
	v := *r.view.Load()
	v.Rate = rate
	// The clock does not depend on the rate: it stays as it is, so nodes
	// that split a rate differently still share one clock (a fifo counter
	// takes the new rate at its next tick).
	r.view.Store(&v)
	return nil
}

// SetDifficulty changes the proof-of-work difficulty of new tokens.
func (r *Room) SetDifficulty(bits int) error {
	if err := tokens.CheckDifficulty(bits); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v := *r.view.Load()
	v.Difficulty = bits
	r.view.Store(&v)
	return nil
}

// Tick lets the controller adjust the clock's speed from what it observed.
// Call it about once a second; every node sharing a clock should let one
// node tick and distribute the resulting View (see TickWith).
//
// In the lottery order with the adaptive clock the clock passes the keys of
// the places seen (see tickLottery); in fifo the counter passes theirs (see
// fifoSpeed).
func (r *Room) Tick(now time.Time) {
	r.TickWith(now, r.presence.count(now), r.eligible.rate(now))
}

// fifoTick ticks a fifo room's counter and publishes it. Callers hold r.mu.
func (r *Room) fifoTick(now time.Time, population float64) {
	// The fifo counter runs from the keys of the places presented
	// (docs/FAIRNESS.md, "Queue orders").
	v := r.View(now)
	r.tickFIFO(&v, now, population)
	v.State = r.stored
	r.publish(&v, now)
}

// ForecastDue reports whether a fifo room shared by several nodes wants
// its figures noted at now: its places are told moments (it queues, or
// waits for its start, and has ranked a place) and the last it noted are
// older than every.
func (r *Room) ForecastDue(now time.Time, every time.Duration) bool {
	if r.fifo == nil {
		return false
	}
	v := r.view.Load()
	if !v.RankSet || v.State != StateQueue && v.State != StateScheduled {
		return false
	}
	fs := v.Forecasts
	return len(fs) == 0 || now.Sub(fs[len(fs)-1].At) >= every
}

// NoteForecast adds to a fifo room's Forecasts its figures as at now, for
// the nodes sharing its state, when it wants them (ForecastDue): the node
// that ticks for them notes them after each tick, and stores them with
// the clock.
func (r *Room) NoteForecast(now time.Time) {
	if !r.ForecastDue(now, 0) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.View(now)
	stored := *r.view.Load()
	// Keep the figures in force now and those still to take effect.
	fs := stored.Forecasts
	i := len(fs)
	for i > 0 && now.Before(fs[i-1].From) {
		i--
	}
	f := v.ownForecast()
	f.At, f.From = now, now.Add(r.delay())
	fs = append(slices.Clone(fs[max(0, i-1):]), f)
	stored.Forecasts = fs[max(0, len(fs)-maxForecasts):]
	r.view.Store(&stored)
}

// TickWith is Tick on observations made elsewhere: the population and
// eligible rate of every node sharing the room, summed.
func (r *Room) TickWith(now time.Time, population, eligible float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fifo != nil {
		r.fifoTick(now, population)
		return
	}
	if !r.adaptive.Load() {
		return
	}
	v := *r.view.Load()
	v.Cruise, v.Pace = r.tickLottery(&v, now, population, eligible)
	r.publish(&v, now)
}

// NextCruise is the speed TickWith would set at now from these
// observations, and the speed it would replace (the clock's speed when a
// speed set now takes effect); it changes nothing.
func (r *Room) NextCruise(now time.Time, population, eligible float64) (next, cur float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := *r.view.Load()
	if !r.adaptive.Load() {
		return v.Cruise, v.Cruise
	}
	next, _ = r.tickLottery(&v, now, population, eligible)
	cur = v.Cruise
	if v.State == StateScheduled && !now.Before(v.SaleStart) {
		// Past the start ramp the clock stands until a tick (publish),
		// whatever the cruise it was planned from.
		cur = v.Clock.SpeedAt(r.speedFrom(&v, now))
	}
	return next, cur
}

// Export is the room's control state as set (a scheduled room stays
// scheduled, whatever the time) and when it last began to queue: what
// nodes sharing the room store, and Adopt takes back.
func (r *Room) Export() (View, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := *r.view.Load()
	if r.fifo != nil && v.RankSet {
		v.KeyTop, v.PreTop = r.keyTop(), r.fifo.preQueueTop()
	}
	return v, r.queueing
}

// Adopt makes a control state exported by a node sharing the room current
// here, clock and its past included, so every node computes the same S(t)
// for every t in the room's memory. The room's name, lane and rate stay
// (the rate of a lane is this node's split, see SetRate).
func (r *Room) Adopt(v View, queueing time.Time) error {
	if _, err := ParseState(string(v.State)); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.view.Load()
	v.Name, v.Lane, v.Rate = cur.Name, cur.Lane, cur.Rate
	v.Order, v.Luck = cur.Order, cur.Luck // the config's, as the room's rate
	// The fifo rank origin is the stored one once set. Until the node that
	// set it first stores it, a node keeps its own, unless the stored state
	// began a new queue (whose origin is not set yet).
	if !v.RankSet && cur.RankSet && queueing.Equal(r.queueing) {
		v.RankSet, v.RankBase, v.RankZero = cur.RankSet, cur.RankBase, cur.RankZero
	}
	if r.fifo != nil && !queueing.Equal(r.queueing) {
		// Another queue than this node's: its keys are not this one's.
		r.fifo.maxKey.Store(0)
		r.fifo.firstLuck.Store(0)
		r.fifo.sharedKey.Store(0)
		r.fifo.sharedPreTop.Store(0)
	}
	if r.fifo != nil && v.KeyTop > math.Float64frombits(r.fifo.sharedKey.Load()) {
		r.fifo.sharedKey.Store(math.Float64bits(v.KeyTop))
	}
	if r.fifo != nil {
		raise(&r.fifo.sharedPreTop, v.PreTop)
	}
	v.KeyTop, v.PreTop = 0, 0
	v.Past = slices.Clone(v.Past)
	r.stored, r.queueing = v.State, queueing
	r.openBucket(v.Opens)
	r.view.Store(&v)
	return nil
}

// openBucket tells the bucket when the queue it serves opened, for the
// stored state: a node that adopts a state (another node's change, a
// restore after a failed save) treats its bucket as the node that set it.
// Callers hold r.mu.
func (r *Room) openBucket(opens time.Time) {
	if r.stored == StateOpen || r.stored == StateClosed {
		// No queue: an open room is served from the bucket's burst, even
		// moments after a queue it left (its opening dropped the burst).
		r.bucket.OpenAt(time.Time{})
		return
	}
	r.bucket.OpenAt(opens)
}

// SetBucketRate sets this node's bucket alone: its share of a rate several
// nodes divide. The room's rate, which the controller aims at, stays, and
// so does the pacer's: a slot any node gave may be presented at this one
// (a login's tabs, a balancer's choice), and re-spaced at this node's
// share it would wait for the share of a node few visitors reach; the
// room's shared budget caps the nodes together (with on_unavailable local,
// not during an outage: docs/FAIRNESS.md, "Known limits").
func (r *Room) SetBucketRate(rate, burst float64, now time.Time) {
	r.bucket.SetRate(rate, math.Max(1, burst), now)
}

// publish rebuilds the clock for the stored state and makes v current.
// Callers hold r.mu (or own r exclusively).
func (r *Room) publish(v *View, now time.Time) {
	if prev := r.view.Load(); prev != nil {
		// Keep the readings that still cover some moment of the memory:
		// a reading holds until the next one's origin.
		past := append(append(make([]queue.Clock, 0, len(prev.Past)+1), prev.Past...), prev.Clock.Until(now))
		cut := now.Add(-r.memory)
		for len(past) > 1 && !past[1].Origin.After(cut) {
			past = past[1:]
		}
		v.Past = compactPast(past, maxPast)
	}
	v.State = r.stored
	opens := v.Opens
	v.Opens = r.queueing
	if r.stored == StateScheduled {
		v.Opens = v.SaleStart
	}
	if !opens.IsZero() && !opens.Equal(v.Opens) {
		v.Moved = now
	}
	r.openBucket(v.Opens)
	at := r.speedFrom(v, now)
	switch {
	case r.stored == StateQueue:
		v.Clock = v.Clock.Plan(now, at, v.Cruise)
	case r.stored == StateScheduled && !now.After(v.SaleStart) && r.fifo == nil && r.adaptive.Load():
		// The last tick before the start set the speed that passes the
		// lead in the sale's first second: it passes in the first
		// moments instead, so the places holding the first keys are
		// found at their first checkpoints, and the sale's first budget
		// windows are used. The next tick sets the speed from there.
		ramp := v.Cruise * lotteryTick.Seconds() / lotteryStartRamp.Seconds()
		v.Clock = v.Clock.From(now, 0).Then(v.SaleStart, ramp).Then(v.SaleStart.Add(lotteryStartRamp), 0)
	case r.stored == StateScheduled && now.Before(v.SaleStart):
		v.Clock = v.Clock.From(now, 0).Then(v.SaleStart, v.Cruise)
	case r.stored == StateScheduled:
		v.Clock = v.Clock.Plan(now, at, v.Cruise)
	default: // open, paused and closed: nobody's place moves
		v.Clock = v.Clock.Plan(now, at, 0)
	}
	if r.fifo != nil && v.RankSet {
		// The counter stops at the last key handed out (Tick moves the
		// stop as places arrive), or where the last tick held it: from
		// when the change takes effect, as its speed.
		limit := r.fifoLimit(v)
		if v.Hold > 0 {
			limit = math.Min(limit, v.Hold)
		}
		if stop, ok := v.Clock.When(at, limit); ok {
			v.Clock = v.Clock.Then(stop, 0)
		}
	}
	r.view.Store(v)
}

// reserveAdmission takes one admission from the bucket for a place found
// eligible at found (now, or a checkpoint it presented late for) and
// returns when it is due: now, or later while the bucket binds, in the
// order asked; a place that presented more than queue.PacerSlack late
// takes the slot it would have had at found, up to the bucket's memory
// late (queue.Bucket.ReserveFor), which may have passed (due before now).
// Lateness within queue.PacerSlack is the network's spread, which every
// attempt has: taken as asked now, it keeps the bucket's own spacing
// (backdated, such attempts would move admissions ahead of the bucket by
// up to its backlog, above the rate). backdated: due, or now if later, is
// before the bucket's own next slot, so the place must pass the pacer
// when it is due (paceSlot).
func (r *Room) reserveAdmission(found, now time.Time) (due time.Time, backdated bool) {
	if now.Sub(found) <= queue.PacerSlack {
		found = now
	}
	return r.bucket.ReserveFor(found, now)
}

// sharedSlot is reserveAdmission for a slot the shared quota gave at now: a
// place found eligible at found, presented more than queue.PacerSlack late
// for it, takes the slot of the first one this node's places took since,
// when that is earlier (it may have passed: due at once, through the
// pacer; queue.Grants.Take).
func (r *Room) sharedSlot(found, slot, now time.Time) (due time.Time, backdated bool) {
	if now.Sub(found) <= queue.PacerSlack {
		found = now
	}
	return r.shared.Take(found, slot, now)
}

// paceSlot reports whether place, whose admission slot came at slot, may
// be admitted now at the room's current rate; if not, when its slot is now
// (see pacer: slots given before a rate cut are re-spaced at the new rate;
// a holder presenting late is not re-spaced by less than the pacer's burst).
func (r *Room) paceSlot(place string, slot, now time.Time) (time.Time, bool) {
	return r.pacer.Pass(place, slot, now)
}

// unpaceSlot gives back what paceSlot took for an attempt it passed whose
// admission did not go through.
func (r *Room) unpaceSlot(now time.Time) { r.pacer.GiveBack(now) }

// refundAdmission gives back an admission that did not go through.
func (r *Room) refundAdmission(now time.Time) { r.bucket.Refund(now) }

// reissue gives back the admission a lapsed slot took: to the shared
// quota when it was the quota's, else to this node's bucket.
func (r *Room) reissue(held heldSlot, now time.Time) {
	r.lapsed.Add(1)
	if q := r.sharedQuota(); q != nil && held.shared {
		q.Lapse(held.charged, now)
		return
	}
	r.refundAdmission(now)
}

// heldSlot is the slot a reserved place holds, as the ledger records it:
// its admission the shared quota's when the room has one (a slot this
// node's bucket gave while the store was out of reach is watched as such
// where it was given, slotWatch.watch).
func (r *Room) heldSlot(p queue.Place) heldSlot {
	return heldSlot{slot: p.Slot, charged: chargedSlot(p), shared: r.sharedQuota() != nil}
}

// SlotsLapsed is how many slots this node lapsed: their holders did not
// come, and their admissions went back.
func (r *Room) SlotsLapsed() int64 { return r.lapsed.Load() }

// BucketLevel is the number of admissions available right now.
func (r *Room) BucketLevel(now time.Time) float64 { return r.bucket.Level(now) }

// ObservePresent records that a place was presented with a valid, solved
// attempt at or after its checkpoint, with its key: the serving clock's
// reading at which it is eligible. Only that counts for the population:
// taking a token costs nothing and proves nobody is waiting.
func (r *Room) ObservePresent(now time.Time, place string, key float64) {
	r.presence.seeKey(now, place, key)
}

// observePreQueuePresent is ObservePresent for a place in a fifo room's
// pre-queue, whose key is from plus its draw times the pre-queue's size:
// the size grows until the start, so the draw is kept, not the key of the
// moment.
func (r *Room) observePreQueuePresent(now time.Time, place string, from, draw float64) {
	r.presence.seePreQueue(now, place, from, draw)
}

// observeAdmitted removes an admitted place from the population.
func (r *Room) observeAdmitted(place string, now time.Time) {
	if r.presence.forget(place) {
		r.shows.came.add(now, 1)
	}
	r.pacer.Admitted(place, now)
}

// observeEligible records one place found eligible (once per place: the
// ledger remembers it from then on).
func (r *Room) observeEligible(now time.Time) {
	r.eligible.add(now, 1)
}

// observeFound records that place holds a slot or was admitted, here or
// at another node: the fifo counter no longer waits for it to be found
// (fifoHold).
func (r *Room) observeFound(place string) {
	r.presence.markFound(place)
}

// Population is the estimated number of visitors waiting: the distinct
// places presented over the last window.
func (r *Room) Population(now time.Time) float64 { return r.presence.count(now) }

// EligibleRate is the observed rate of eligible attempts per second.
func (r *Room) EligibleRate(now time.Time) float64 { return r.eligible.rate(now) }

// ObservedEligibleRate is EligibleRate over the part of the window this
// room has observed: a room created less than a window ago (a node that
// joined or restarted) counts its places found eligible over the whole
// seconds since it started, not over the window, which would read a
// fraction of its rate until the window had passed.
func (r *Room) ObservedEligibleRate(now time.Time) float64 {
	return r.eligible.recentRate(now, now.Sub(r.started))
}

// EstimateWait is the expected remaining wait of a visitor who is not yet
// eligible. Thresholds are memoryless, so it is the same for everyone: one
// clock unit at the current speed, plus the time until the sale starts. It
// depends only on the clock, so it reveals nothing of anyone's lottery
// number. ok is false while the room is paused or closed.
func (v View) EstimateWait(now time.Time) (d time.Duration, ok bool) {
	switch v.State {
	case StateOpen:
		return 0, true
	case StatePaused, StateClosed:
		return 0, false
	}
	if v.Order == OrderFIFO {
		return v.estimateFIFO(now), true
	}
	speed := v.Cruise
	if v.Pace > 0 {
		speed = v.Pace
	}
	if speed <= 0 {
		return 0, false
	}
	d = durationOf(1 / speed)
	if v.State == StateScheduled && now.Before(v.SaleStart) {
		d += v.SaleStart.Sub(now)
	}
	return d, true
}

// burst is the most admissions the bucket allows at once.
func (r *Room) burst() float64 { return r.bucket.Burst() }

// SetSpeedRule sets the mean wait the controller aims at and whether it may
// change the clock's speed, leaving the clock as it is: for a node adopting
// a control state that another node's config changed (the adopted View
// carries the speed).
func (r *Room) SetSpeedRule(tau time.Duration, adaptive bool) error {
	if tau <= 0 {
		return fmt.Errorf("tau must be positive")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tau = tau.Seconds()
	r.adaptive.Store(adaptive)
	return nil
}

// Adaptive reports whether the controller sets the clock's speed (false
// with fixed_speed).
func (r *Room) Adaptive() bool { return r.adaptive.Load() }

// SetTau sets the mean wait the clock cruises at (speed 1/tau, from now) and
// whether the controller may change that speed: a reloaded tau or
// fixed_speed takes effect at once rather than only in a new room.
func (r *Room) SetTau(tau time.Duration, adaptive bool, now time.Time) error {
	if tau <= 0 {
		return fmt.Errorf("tau must be positive")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tau = tau.Seconds()
	r.adaptive.Store(adaptive)
	v := *r.view.Load()
	v.Cruise = 1 / tau.Seconds()
	if r.fifo != nil { // the counter runs at the rate, whatever tau
		v.Cruise = v.Rate
	}
	if !adaptive { // with fixed_speed nothing holds the counter (fifoHold)
		v.Hold = 0
	}
	r.publish(&v, now)
	return nil
}
