package room

import (
	"context"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
)

// Rooms is the set of live rooms the admin API manages, by name.
type Rooms struct {
	mu    sync.RWMutex
	rooms map[string]*Shared
}

// NewRooms returns an empty set.
func NewRooms() *Rooms { return &Rooms{rooms: map[string]*Shared{}} }

// Put adds or replaces a room.
func (rs *Rooms) Put(sh *Shared) {
	rs.mu.Lock()
	rs.rooms[sh.Room.Name()] = sh
	rs.mu.Unlock()
}

// Delete removes a room if it is still sh.
func (rs *Rooms) Delete(sh *Shared) {
	rs.mu.Lock()
	if rs.rooms[sh.Room.Name()] == sh {
		delete(rs.rooms, sh.Room.Name())
	}
	rs.mu.Unlock()
}

// Get returns a room by name.
func (rs *Rooms) Get(name string) (*Shared, bool) {
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	sh, ok := rs.rooms[name]
	return sh, ok
}

// All returns every room, by name.
func (rs *Rooms) All() []*Shared {
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	out := make([]*Shared, 0, len(rs.rooms))
	for _, sh := range rs.rooms {
		out = append(out, sh)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Room.Name() < out[j].Room.Name() })
	return out
}

// RoomStatus is a room's live figures in the admin API.
type RoomStatus struct {
	Room       string  `json:"room"`
	State      string  `json:"state"`
	Reason     string  `json:"reason,omitempty"`
	SaleStart  string  `json:"sale_start,omitempty"`
	Rate       float64 `json:"rate"`
	Burst      float64 `json:"burst"`
	Difficulty int     `json:"difficulty"`
	// ClockSpeed is 1/tau now; Clock is S(now).
	ClockSpeed float64 `json:"clock_speed"`
	Clock      float64 `json:"clock"`
	// Waiting is the estimated population; Eligible the eligible attempts per second.
	Waiting     float64 `json:"waiting"`
	Eligible    float64 `json:"eligible_per_second"`
	BucketLevel float64 `json:"bucket_level"`
	// EstimateSeconds is the public wait estimate, absent when unknown.
	EstimateSeconds *float64 `json:"estimate_seconds,omitempty"`
	// UsedTokens is the places this node's memory ledger holds (state
	// store memory, or on_unavailable local while the store was down).
	UsedTokens int `json:"used_tokens"`
	// Now is the time of the answer, ClockState the serving clock's
	// current reading (origin, value, segments): Clock is its value at Now,
	// the same on every node that runs the same version.
	Now        string      `json:"now"`
	ClockState queue.Clock `json:"clock_state"`
	// Site is the visitors on the site and, in a room sized by capacity,
	// the rate the capacity controller derived from them (Rate above is
	// that rate too).
	Site CapacityStatus `json:"site"`
	// Cluster is the state store's view: absent with state_store memory.
	Cluster *ClusterStatus `json:"cluster,omitempty"`
	// Lanes are the figures of each lane, the default lane (named "")
	// first; absent without priority lanes. The room's own figures above
	// are the default lane's, but for Rate, which is the whole room's.
	Lanes []LaneStatus `json:"lanes,omitempty"`
	// FIFO is what a fifo room places its keys on the clock with, as this
	// node knows it; absent in a lottery room.
	FIFO *FIFOStatus `json:"fifo,omitempty"`
}

// FIFOStatus is the figures a fifo room tells a place when its key is
// reached from (admission.View.Forecasting): two nodes that hold
// different figures tell one place different moments.
type FIFOStatus struct {
	// RankZero is the clock's reading at the first rank; a key is reached
	// when the clock reads RankZero plus it. PreQueue is the ranks the
	// pre-queue took, as this node knows them; Hold where the counter
	// stops until the pre-queue is found (0: nowhere).
	RankZero float64 `json:"rank_zero"`
	PreQueue float64 `json:"pre_queue"`
	Hold     float64 `json:"hold"`
	// ForecastAt is the tick whose figures below the node predicts from,
	// stored with the clock by the node that made it; absent when it
	// predicts from its own figures as they are now (alone, or no node
	// ticked for the room within three ticks).
	ForecastAt string `json:"forecast_at,omitempty"`
	// Ranked is the ranks taken; FirstLuck and LastLuck the luck spans,
	// in ranks, of the first and the latest place taken after the start;
	// Short the present keys the counter was short of its lead, which its
	// next tick passes; Shows the share of the places passed that came.
	Ranked    float64 `json:"ranked"`
	FirstLuck float64 `json:"first_luck"`
	LastLuck  float64 `json:"last_luck"`
	Short     float64 `json:"short"`
	Shows     float64 `json:"shows"`
}

// Status reads a room's live figures.
func (sh *Shared) Status(now time.Time) RoomStatus {
	v := sh.Room.View(now)
	rate, burst := sh.TotalRate()
	st := RoomStatus{
		Room: v.Name, State: string(v.State), Rate: rate, Burst: burst, Difficulty: v.Difficulty,
		ClockSpeed: v.Clock.SpeedAt(now), Clock: v.Clock.At(now),
		Waiting: sh.Room.Population(now), Eligible: sh.Room.EligibleRate(now),
		BucketLevel: sh.Room.BucketLevel(now), UsedTokens: sh.memory.Len(),
		Now: now.UTC().Format(time.RFC3339Nano), ClockState: v.Clock, Cluster: sh.ClusterStatus(),
		Site: sh.SiteStatus(),
	}
	if v.State == admission.StateClosed {
		st.Reason = sh.ClosedReason()
	}
	if len(sh.lanes()) > 1 {
		st.Lanes = sh.laneStatus(now)
	}
	if !v.SaleStart.IsZero() {
		st.SaleStart = v.SaleStart.UTC().Format(time.RFC3339)
	}
	if est, ok := v.EstimateWait(now); ok {
		secs := math.Round(est.Seconds())
		st.EstimateSeconds = &secs
	}
	if v.Order == admission.OrderFIFO {
		f := v.Forecasting(now)
		st.FIFO = &FIFOStatus{RankZero: v.RankZero, PreQueue: v.PreQueue, Hold: v.Hold,
			Ranked: f.Ranked, FirstLuck: f.FirstLuck, LastLuck: f.LastLuck, Short: f.Short, Shows: f.Shows}
		if !f.At.IsZero() {
			st.FIFO.ForecastAt = f.At.UTC().Format(time.RFC3339Nano)
		}
	}
	return st
}

// RoomChange is a live change through the admin API; absent fields stay.
type RoomChange struct {
	State *string `json:"state,omitempty"`
	// Reason goes with state closed: "sold_out" shows the sold-out page.
	Reason     *string  `json:"reason,omitempty"`
	SaleStart  *string  `json:"sale_start,omitempty"`
	Rate       *float64 `json:"rate,omitempty"`
	Burst      *float64 `json:"burst,omitempty"`
	Difficulty *int     `json:"difficulty,omitempty"`
	// Capacity sizes the room by the active visitors it admits up to (rate
	// becomes its ceiling); 0 turns it off, and the room admits at rate.
	Capacity *float64 `json:"capacity,omitempty"`
	// Tau is the mean wait the clock cruises at from now (speed 1/tau), in
	// every lane, as a reload that changes `tau` does; with the controller
	// (no fixed_speed) it is where the controller starts from.
	Tau *Duration `json:"tau,omitempty"`
}

// Apply makes a change live. It validates everything before changing
// anything. On a state store the change is saved there (every node adopts
// it within a poll period); when the store cannot be reached nothing
// changes and the error is an *UnavailableError.
func (sh *Shared) Apply(c RoomChange, now time.Time) error {
	return sh.commit(context.Background(), now, func() error { return sh.apply(c, now) })
}

func (sh *Shared) apply(c RoomChange, now time.Time) error {
	v := sh.Room.View(now)
	state := v.State
	if c.State != nil {
		s, err := admission.ParseState(*c.State)
		if err != nil {
			return err
		}
		state = s
	}
	saleStart := v.SaleStart
	if c.SaleStart != nil {
		t, err := time.Parse(time.RFC3339, *c.SaleStart)
		if err != nil {
			return err
		}
		saleStart = t
	}
	if c.Reason != nil && *c.Reason != "" && *c.Reason != "sold_out" {
		return errBadReason
	}
	if c.Difficulty != nil {
		if err := tokens.CheckDifficulty(*c.Difficulty); err != nil {
			return err
		}
	}
	if c.Rate != nil {
		if err := admission.CheckRate(*c.Rate); err != nil {
			return err
		}
	}
	if c.Tau != nil && *c.Tau <= 0 {
		return errBadTau
	}
	if c.Capacity != nil && !(*c.Capacity >= 0 && !math.IsInf(*c.Capacity, 0)) {
		return errBadCapacity
	}
	if c.State != nil || c.SaleStart != nil {
		if err := sh.eachRoom(func(r *admission.Room) error { return r.SetState(state, saleStart, now) }); err != nil {
			return err
		}
	}
	if c.Rate != nil || c.Burst != nil {
		if err := sh.setRate(c.Rate, c.Burst, now); err != nil {
			return err
		}
	}
	if c.Capacity != nil {
		if err := sh.setCapacity(*c.Capacity, now); err != nil {
			return err
		}
	}
	if c.Difficulty != nil {
		if err := sh.eachRoom(func(r *admission.Room) error { return r.SetDifficulty(*c.Difficulty) }); err != nil {
			return err
		}
	}
	if c.Tau != nil {
		if err := sh.setTau(time.Duration(*c.Tau), now); err != nil {
			return err
		}
	}
	if c.Reason != nil {
		sh.setClosedReason(*c.Reason)
	} else if c.State != nil && state != admission.StateClosed {
		sh.setClosedReason("")
	}
	return nil
}

// setTau sets every lane's clock to cruise at 1/tau from now, keeping the
// speed rule (fixed_speed or the controller) the config set: the admin
// API does not change that rule, so the config's is the room's.
func (sh *Shared) setTau(tau time.Duration, now time.Time) error {
	sh.mu.Lock()
	adaptive := sh.applied.adaptive
	sh.mu.Unlock()
	return sh.eachRoom(func(r *admission.Room) error { return r.SetTau(tau, adaptive, now) })
}

// changeError is a RoomChange refused as invalid: nothing changed.
type changeError string

func (e changeError) Error() string { return string(e) }

const (
	errBadReason   changeError = `reason must be "sold_out" or empty`
	errBadTau      changeError = `tau must be a positive duration, e.g. "30s"`
	errBadCapacity changeError = `capacity must be a positive number of active visitors, or 0 to admit at rate`
)
