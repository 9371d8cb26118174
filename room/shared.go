package room

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/roomstate"

	"github.com/fairgate/fairgate/admission/tokens"
)

// Shared is the part of a room that must outlive any one Gateway: the
// serving clock, the bucket and the used-token ledger. The Caddy module keeps
// it in a caddy.UsagePool keyed by room, so a config reload changes nothing a
// queued visitor can notice.
type Shared struct {
	// Room is the room's default lane: its name, state and clock are the
	// room's; priority lanes are rooms of their own beside it.
	Room *admission.Room
	// Ledger remembers used places: the state store's, or memory's.
	Ledger queue.Ledger
	// memory is the ledger of state_store memory, and the fallback of
	// on_unavailable local.
	memory *queue.MemoryLedger
	// turns judges a place's attempts one at a time at this node, through
	// every door.
	turns *admission.Turns
	// cluster links the room to its state store; nil on memory.
	cluster *cluster
	clock   func() time.Time
	// generated keys, when the config had none: kept so a reload does not
	// invalidate every token.
	generated *tokens.KeyRing

	lanesNow atomic.Pointer[[]*lane]
	// lapsedGone counts the slots lapsed in lanes a reload removed.
	lapsedGone atomic.Int64

	// active counts the passes presented at this node within the active
	// window: the visitors on the site, in every sizing mode.
	active *admission.ActiveSet

	mu      sync.Mutex
	applied applied
	// rate and burst are the room's, split between its lanes; with a
	// capacity, the ceiling of the capacity controller's rate.
	rate, burst float64
	// capacity, when positive, sizes the room by the visitors on the site;
	// admit is the rate the capacity controller set, tally the room's last
	// count (every node's, on a state store).
	capacity float64
	sized    atomic.Bool // capacity > 0, read without mu on every request
	admit    float64
	// admitFrom is when admit starts to size the shared budget's windows:
	// a change every node learns before it applies at every node alike.
	admitFrom time.Time
	// plan is the rates admit took and from when: what the rates already
	// set will admit before a new one takes effect.
	plan   admission.RatePlan
	tally  admission.Tally
	reason string // why the room is closed: "sold_out" or ""
	obs    Observer
}

// Observer is told of the room's state store calls and of the places
// written back after an outage: a front door's metrics. It belongs to the
// room, so its counts carry on across reloads.
type Observer interface {
	// ObserveStore records one state store call.
	ObserveStore(op string, took time.Duration, err error)
	// WrittenBack records places admitted from memory while the store
	// failed, written back (written) or found used meanwhile (twice).
	WrittenBack(written, twice int)
}

// Observe returns the room's observer, made by make on the first call.
func (sh *Shared) Observe(make func() Observer) Observer {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.obs == nil {
		sh.obs = make()
	}
	return sh.obs
}

// observer is the room's observer, or one that records nothing until a
// front door attached its own.
func (sh *Shared) observer() Observer {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.obs == nil {
		return noObserver{}
	}
	return sh.obs
}

type noObserver struct{}

func (noObserver) ObserveStore(string, time.Duration, error) {}
func (noObserver) WrittenBack(int, int)                      {}

// applied is what the config last asked for, so a reload re-applies only
// what it changed and never reverts a live change made by the admin API.
type applied struct {
	state      admission.State
	saleStart  time.Time
	rate       float64
	burst      float64
	difficulty int
	lanes      []laneRule
	tau        time.Duration
	adaptive   bool
	ledgerSize int
	order      admission.Order
	luck       time.Duration
	capacity   float64
}

// newShared creates a room's shared state from its config; clock is the
// time its clock starts at and its used-token memory expires by.
func newShared(cfg Config, clock func() time.Time) (*Shared, error) {
	s, err := cfg.Settle()
	if err != nil {
		return nil, err
	}
	lanes, err := newLanes(s, nil, clock())
	if err != nil {
		return nil, err
	}
	memory := queue.NewMemoryLedger(s.LedgerSize, clock)
	sh := &Shared{
		Room:    lanes[0].room,
		Ledger:  memory,
		memory:  memory,
		turns:   admission.NewTurns(),
		clock:   clock,
		applied: appliedOf(s),
		rate:    s.Rate,
		burst:   s.Burst,
		active:  admission.NewActiveSet(s.activeWindow),
	}
	sh.setCapacityLocked(float64(s.Capacity))
	sh.lanesNow.Store(&lanes)
	return sh, nil
}

func appliedOf(s Settings) applied {
	return applied{state: s.state, saleStart: s.saleStart, rate: s.Rate, burst: s.Burst, difficulty: s.difficulty,
		tau: time.Duration(s.Tau), adaptive: !s.FixedSpeed, ledgerSize: s.LedgerSize, lanes: s.lanes,
		order: s.order, luck: time.Duration(s.LuckWindow), capacity: float64(s.Capacity)}
}

// ClosedReason is why the room is closed ("sold_out" or "").
func (sh *Shared) ClosedReason() string {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.reason
}

func (sh *Shared) setClosedReason(r string) {
	sh.mu.Lock()
	sh.reason = r
	sh.mu.Unlock()
}

// keys returns the configured key ring, or generated keys kept for the
// room's lifetime. generated reports the latter.
func (sh *Shared) keys(cfg tokens.KeysConfig) (ring *tokens.KeyRing, generated bool, err error) {
	if len(cfg.Keys) > 0 {
		ring, err = cfg.Load(tokens.Environment{})
		return ring, false, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.generated == nil {
		gen, err := tokens.GenerateKeys("generated")
		if err != nil {
			return nil, false, err
		}
		if sh.generated, err = gen.Load(tokens.Environment{}); err != nil {
			return nil, false, err
		}
	}
	return sh.generated, true, nil
}

func (sh *Shared) now() time.Time { return sh.clock() }

// setCapacityLocked sizes the room by capacity (0: by its rate). A room
// that starts counting starts from the floor rate: the first tick sets the
// rate from the count. Callers hold sh.mu.
func (sh *Shared) setCapacityLocked(capacity float64) {
	if capacity > 0 && sh.capacity <= 0 {
		sh.admit = admission.MinCapacityRate
	}
	sh.capacity = capacity
	sh.sized.Store(capacity > 0)
}

// SizedByCapacity reports whether the room admits by its capacity.
func (sh *Shared) SizedByCapacity() bool { return sh.sized.Load() }

// steerLocked lets the capacity controller set the room's rate from the
// last tally, which counts the site as it was at counted, for the budget
// windows from from on (at once when from is not after counted), and
// reports whether it moved by more than minCruiseStep (the cluster stores
// only such a change). Between the two, the rates set before admit: the
// controller counts them. Callers hold sh.mu.
func (sh *Shared) steerLocked(counted, from time.Time) bool {
	if sh.capacity <= 0 {
		return false
	}
	var lead time.Duration
	admitting := 0.0
	if from.After(counted) {
		lead, admitting = from.Sub(counted), sh.plan.Admits(counted, from)
	}
	ctl := admission.CapacityController{Capacity: sh.capacity, Ceiling: sh.rate}
	next := ctl.RateAhead(sh.tally, admitting, lead)
	moved := math.Abs(next-sh.admit) > minCruiseStep*sh.admit
	sh.admit, sh.admitFrom = next, from
	sh.plan.Set(next, from)
	return moved
}

// rateInForce is the rate and burst the lanes split: the capacity
// controller's in a room sized by capacity (the burst no more than a
// second of it), the room's rate otherwise. Callers hold sh.mu.
func (sh *Shared) rateInForce() (rate, burst float64) {
	if sh.capacity <= 0 {
		return sh.rate, sh.burst
	}
	rate = math.Min(math.Max(sh.admit, admission.MinCapacityRate), sh.rate)
	return rate, math.Max(1, math.Min(sh.burst, rate))
}

// CapacityStatus is a room's sizing by capacity in the admin API.
type CapacityStatus struct {
	// Capacity is the active visitors the room admits up to; 0 when the
	// room admits at its rate.
	Capacity float64 `json:"capacity"`
	// Active is the visitors on the site at the last tick (distinct passes
	// presented within ActiveWindow, at any node), Leaving those whose
	// window ends within the controller's lookahead, Ended the sessions
	// the origin ended within it (not among Active).
	Active  float64 `json:"active"`
	Leaving float64 `json:"leaving"`
	Ended   float64 `json:"ended"`
	// Rate is the admissions per second in force; Ceiling the room's rate,
	// which it never exceeds.
	Rate    float64 `json:"rate"`
	Ceiling float64 `json:"ceiling"`
	// ActiveWindow is this node's active_window.
	ActiveWindow Duration `json:"active_window"`
}

// SiteStatus is the visitors on the site and the rate sized from them.
func (sh *Shared) SiteStatus() CapacityStatus {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	rate, _ := sh.rateInForce()
	return CapacityStatus{Capacity: sh.capacity, Active: sh.tally.Active, Leaving: sh.tally.Leaving,
		Ended: sh.tally.Ended, Rate: rate, Ceiling: sh.rate, ActiveWindow: Duration(sh.active.Window())}
}

// checkOrderKept refuses a reload that changes the queue order: the places
// waiting hold keys of one rule, and the other cannot judge them.
func checkOrderKept(want, had applied) error {
	if want.order != had.order {
		return OptionErr("queue_order", "cannot change from %s to %s while the room exists (restart the room: every waiting place is lost)", had.order, want.order)
	}
	return nil
}

// See counts the visitor holding pass id as on the site at now.
func (sh *Shared) See(id string, now time.Time) { sh.active.See(id, now) }

// End counts the visitor holding pass id as gone from the site at now:
// the origin ended their session.
func (sh *Shared) End(id string, now time.Time) { sh.active.End(id, now) }

// Fits refuses settings of another room, or of another queue order: a
// room's order cannot change while it exists.
func (sh *Shared) Fits(s Settings) error {
	if sh.Room.Name() != s.Room {
		return fmt.Errorf("shared state is for room %q, config for %q", sh.Room.Name(), s.Room)
	}
	if had := sh.Room.View(time.Time{}).Order; had != s.order {
		return checkOrderKept(appliedOf(s), applied{order: had})
	}
	return nil
}

// OnSite is the visitors counted on the site at now: passes presented at
// this node within the active window.
func (sh *Shared) OnSite(now time.Time) float64 { return sh.active.Count(now) }

// cluster is a room's link to its state store: the control state it
// shares and the ledger (each lane holds its budget). Nil in a Shared on
// memory.
type cluster struct {
	store   *roomstate.Guard
	set     storeSettings
	key     string
	mu      sync.Mutex // serialises commits and adoptions
	version uint64
	// shown mirrors version for the admin API, which must not wait for a
	// commit in progress.
	shown atomic.Uint64
	// joined: the stored state was adopted (or this node's stored). Set
	// under mu; read without it on the request path.
	joined  atomic.Bool
	ticked  time.Time // when a node last ticked for the cluster, under mu
	pending *Settings // a config the store could not take yet
	share   float64   // this node's share of the rate, under Shared.mu
	nodes   int
	// demand is this node's share of the room's demand without headroom,
	// under Shared.mu: of the admissions, the part in its own count at once.
	demand float64
	// changed is when this node last saw the number of nodes change (or
	// started); window how far back a room measures its demand. Until a
	// window has passed since a change, every node's demand still counts
	// visitors the change moved, and the shares get rejoinHeadroom.
	changed time.Time
	window  time.Duration
	// sweeper deletes the store's expired items, for a store without a
	// TTL of its own (bolt); swept is when the room's loop last asked it.
	sweeper sweeper
	swept   time.Time
	// storedOrigin is the fifo rank origins the store holds as far as this
	// node knows (originOf), under mu: a node that set one stores it.
	storedOrigin string
	// backlog holds the places admitted from memory while the store
	// failed (on_unavailable local), written back by the room's loop.
	backlog *roomstate.Backlog
	// tickWanted: a poll found that this node's places no longer hold a
	// lane's fifo counter at the pre-queue's end (Shared.TickWanted).
	tickWanted atomic.Bool
}

// sweeper is a store whose owner deletes its expired items (boltstore).
type sweeper interface {
	Sweep(ctx context.Context, now time.Time) (int, error)
}

// minCruiseStep is the least relative change of a lane's clock speed the
// cluster's controller stores.
const minCruiseStep = 0.01
