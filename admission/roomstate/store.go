// Package roomstate keeps what a waiting room must share between nodes and
// keep across restarts: its control state and serving clock, the admission
// budget, the used-place ledger, the population estimate and the
// arrival-rank counter. One Store interface has one conformance suite
// (package storetest) and two implementations: boltstore, an embedded file
// for one machine, and dynamostore, one DynamoDB table for a cluster.
//
// The admission path costs no store round trip per decision except the
// ledger's conditional put: budget and ranks are reserved in blocks (Budget,
// Ranks), the control state is polled, and each node publishes its
// population observations and its sketch of the active passes in its own
// items.
package roomstate

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/queue"
)

var (
	// ErrNotFound means the room has no stored control state yet.
	ErrNotFound = errors.New("room state not found")
	// ErrConflict means a compare-and-set lost: the stored version is not
	// the one the change was based on. Reload and reapply.
	ErrConflict = errors.New("room state changed concurrently")
)

// Control is a room's control state as stored: what the admin API and the
// config set, and the serving clock every node computes S(now) from.
type Control struct {
	State      admission.State `json:"state"`
	SaleStart  time.Time       `json:"sale_start,omitzero"`
	Rate       float64         `json:"rate"`
	Burst      float64         `json:"burst"`
	Difficulty int             `json:"difficulty"`
	// Reason is why a closed room is closed (e.g. "sold_out").
	Reason string `json:"reason,omitempty"`
	// Cruise is the clock's speed while admitting (the controller's output).
	Cruise float64     `json:"cruise"`
	Clock  queue.Clock `json:"clock"`
	// Past are the clock's earlier readings back to the room's memory, so
	// every node judges a late token at its checkpoint alike.
	Past []queue.Clock `json:"past,omitempty"`
	// Opens is where the checkpoint grid starts (admission.View.Opens);
	// Queueing when the room last began to queue; LatestStart the latest
	// sale start the room was given.
	Opens       time.Time `json:"opens,omitzero"`
	Queueing    time.Time `json:"queueing,omitzero"`
	LatestStart time.Time `json:"latest_start,omitzero"`
	// Ticked is when the controller last set Cruise: one node a second
	// ticks for the cluster.
	Ticked time.Time `json:"ticked,omitzero"`
	// RankSet, RankBase and RankZero are a fifo room's rank origin
	// (admission.View): the first rank taken since the room began to queue
	// and the clock's reading then, so every node computes the same key
	// for a place and serves it at the same moment. The node that takes
	// that rank stores it; until then RankSet is false.
	RankSet  bool    `json:"rank_set,omitempty"`
	RankBase int64   `json:"rank_base,omitempty"`
	RankZero float64 `json:"rank_zero,omitempty"`
	// KeyTop is the highest fifo key a node handed out, stored when the
	// counter would stop short of it (admission.View.KeyTop).
	KeyTop float64 `json:"key_top,omitempty"`
	// PreTop is one past the highest fifo pre-queue rank the node that
	// stored the state knew of (admission.View.PreTop).
	PreTop int64 `json:"pre_top,omitempty"`
	// Hold is where the fifo counter stops until the pre-queue it passed
	// is found (admission.View.Hold); 0: nowhere.
	Hold float64 `json:"hold,omitempty"`
	// Forecasts are what a fifo room's last ticks placed keys ahead of its
	// counter with, oldest first (admission.View.Forecasts).
	Forecasts []Forecast `json:"forecasts,omitempty"`
	// Lanes are the control states of the room's priority lanes, by name:
	// each lane has its own clock (their Lanes and Applied are empty).
	Lanes map[string]Control `json:"lanes,omitempty"`
	// Capacity, when positive, sizes the room by the visitors on the site;
	// Admit is then the rate the capacity controller last set (Rate is its
	// ceiling), by the node that ticked for the cluster, for the budget
	// windows from AdmitFrom on (Quota.SetRateFrom).
	Capacity  float64   `json:"capacity,omitempty"`
	Admit     float64   `json:"admit,omitempty"`
	AdmitFrom time.Time `json:"admit_from,omitzero"`
	// Applied is what the config last applied, as the gateway records it,
	// so a node that starts with a changed config applies only the change.
	Applied json.RawMessage `json:"applied,omitempty"`
}

// Forecast is the stored form of admission.Forecast.
type Forecast struct {
	At        time.Time `json:"at"`
	From      time.Time `json:"from"`
	Ranked    float64   `json:"ranked"`
	FirstLuck float64   `json:"first_luck"`
	LastLuck  float64   `json:"last_luck"`
	Short     float64   `json:"short"`
	Shows     float64   `json:"shows"`
}

// ControlOf is the stored form of a room's exported view and the time it
// last began to queue (admission.Room.Export).
func ControlOf(v admission.View, queueing time.Time) Control {
	c := Control{
		State: v.State, SaleStart: v.SaleStart, Rate: v.Rate, Difficulty: v.Difficulty,
		Cruise: v.Cruise, Clock: v.Clock, Past: v.Past, Opens: v.Opens, Queueing: queueing,
		LatestStart: v.LatestStart, RankSet: v.RankSet, RankBase: v.RankBase, RankZero: v.RankZero,
		KeyTop: v.KeyTop, PreTop: v.PreTop, Hold: v.Hold,
	}
	for _, f := range v.Forecasts {
		c.Forecasts = append(c.Forecasts, Forecast(f))
	}
	return c
}

// View is the admission.View a node adopts from c, and the time the room
// last began to queue (admission.Room.Adopt).
func (c Control) View() (admission.View, time.Time) {
	v := admission.View{
		State: c.State, SaleStart: c.SaleStart, Rate: c.Rate, Difficulty: c.Difficulty,
		Cruise: c.Cruise, Clock: c.Clock, Past: c.Past, Opens: c.Opens, LatestStart: c.LatestStart,
		RankSet: c.RankSet, RankBase: c.RankBase, RankZero: c.RankZero, KeyTop: c.KeyTop, PreTop: c.PreTop, Hold: c.Hold,
	}
	for _, f := range c.Forecasts {
		v.Forecasts = append(v.Forecasts, admission.Forecast(f))
	}
	return v, c.Queueing
}

// Window is one admission-budget window of a room: at most Limit
// admissions may be reserved in it. Index identifies it (e.g. the window's
// start in Unix seconds divided by its length); Expires is when the store
// may forget it. Ahead marks a reservation made before the window begins
// (slots given for a moment ahead): once such a reservation is granted,
// the store keeps that mark on the window.
type Window struct {
	Index   int64
	Limit   int64
	Expires time.Time
	Ahead   bool
}

// Grant is what ReserveBudget granted: N admissions, whose places in the
// window's order, across every node, are First to First+N-1 (First counts
// what the window had granted before, less what was returned unspent);
// Ahead reports whether any reservation granted in the window, this one
// included, was made ahead of it; Lapsed is how many admissions were
// returned to the window after their slots lapsed (ReturnLapsed): its
// order has that many places beyond its limit.
type Grant struct {
	N, First int64
	Ahead    bool
	Lapsed   int64
}

// Store is the room state shared by every node. Every method is atomic and
// linearisable per key; every error other than ErrNotFound and ErrConflict
// means the outcome is unknown, and the caller must fail closed (not admit).
type Store interface {
	// LoadControl returns a room's control state and its version;
	// ErrNotFound if none was ever saved.
	LoadControl(ctx context.Context, room string) (Control, uint64, error)
	// SaveControl stores c if the stored version is still prev (0: nothing
	// stored yet) and returns the new version; ErrConflict otherwise.
	SaveControl(ctx context.Context, room string, c Control, prev uint64) (uint64, error)

	// ReserveBudget takes up to n admissions from the window's budget and
	// returns the grant (N is 0 when the window is spent). The sum of
	// everything granted in a window, less what was returned, never exceeds
	// w.Limit, however many nodes race.
	ReserveBudget(ctx context.Context, room string, w Window, n int64) (Grant, error)
	// ReturnBudget gives back n admissions reserved in window w and not
	// spent, the last places of a grant that ended at place top (First+N
	// of the grant, or of the last of a node's grants it returns from).
	// When the window has granted no place after top since (top is still
	// its end), they go back in place and are granted again at the same
	// places; else at places of their own after every place it granted, as
	// ReturnLapsed gives them: granted again at their own places, they
	// would be places another node holds already.
	ReturnBudget(ctx context.Context, room string, w Window, n, top int64) error
	// ReturnLapsed gives n admissions whose slots lapsed (spent in another
	// window), or refunded, to window w, which may grant them again, at
	// places of their own after every place it granted: never a place a
	// slot was given. The window takes back no more than it has granted
	// (less what came back), and it reports how many it took.
	ReturnLapsed(ctx context.Context, room string, w Window, n int64) (int64, error)

	// HoldPlace records p for place id until the given time, unless the
	// place has a record unexpired at now other than a lapsed one: it
	// returns the record that stands and whether it is p. Exactly one of any number of concurrent
	// calls for the same id wins. Holding queue.PlaceUsed consumes the
	// place outright.
	HoldPlace(ctx context.Context, room, id string, p queue.Place, until, now time.Time) (queue.Place, bool, error)
	// UsePlace turns a reserved place into a used one (keeping its expiry;
	// recording p's By, Pass and At), reporting false if it is not reserved
	// at now. Exactly one of any number of concurrent calls wins.
	UsePlace(ctx context.Context, room, id string, p queue.Place, now time.Time) (bool, error)
	// LookupPlace returns place id's record at now (PlaceWaiting if none).
	LookupPlace(ctx context.Context, room, id string, now time.Time) (queue.Place, error)
	// ReleasePlace forgets a place whose admission was refused after the
	// decision, so it may wait and try again.
	ReleasePlace(ctx context.Context, room, id string) error
	// LapsePlace turns place id into lapsed (queue.PlaceLapsed, keeping
	// its slot and expiry) if it holds the reserved slot slot at now,
	// unused, reporting whether it did. Exactly one of it and any number
	// of concurrent UsePlace calls for the place wins.
	LapsePlace(ctx context.Context, room, id string, slot, now time.Time) (bool, error)

	// PublishPopulation stores node's own population observation, valid
	// until the given time. Each node writes only its own item.
	PublishPopulation(ctx context.Context, room, node string, value float64, until time.Time) error
	// Population sums the observations of every node still valid at now and
	// says how many nodes contributed.
	Population(ctx context.Context, room string, now time.Time) (sum float64, nodes int, err error)

	// PublishSketch stores node's own sketch (opaque bytes, at most a few
	// kilobytes: queue.Sketch), valid until the given time. Each node
	// writes only its own item.
	PublishSketch(ctx context.Context, room, node string, sketch []byte, until time.Time) error
	// Sketches returns the sketches of every node still valid at now, in
	// no particular order, for the caller to merge.
	Sketches(ctx context.Context, room string, now time.Time) ([][]byte, error)

	// ReserveRanks allocates n consecutive arrival ranks and returns the
	// first: the block is [first, first+n). Blocks never overlap and each
	// starts after every block allocated before it.
	ReserveRanks(ctx context.Context, room string, n int64) (first int64, err error)

	Close() error
}

// DefaultCallTimeout bounds every store call whose context has no earlier
// deadline, so a stalled disk or network is an error, never a hang.
const DefaultCallTimeout = 2 * time.Second

// PlaceIndex is implemented by a store that knows in memory, exactly,
// which places it may hold a record of: one whose file no other process
// writes (bolt). A Ledger asks it first, so looking up a place that was
// never admitted or slotted (every "keep waiting" answer) costs no store
// call. Wrappers of a Store (Guard) forward it.
type PlaceIndex interface {
	// MayHoldPlace reports false only if the store certainly holds no
	// record of place id in room; true means "ask the store".
	MayHoldPlace(room, id string) bool
}

// MayHoldPlace asks store's PlaceIndex, if it has one: true unless the
// store certainly holds no record of the place.
func MayHoldPlace(store Store, room, id string) bool {
	ix, ok := store.(PlaceIndex)
	return !ok || ix.MayHoldPlace(room, id)
}
