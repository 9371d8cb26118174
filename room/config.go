package room

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/tokens"
)

// Config is the room's part of a waiting room's config: how it queues and
// admits, and where its state lives. A front door's config embeds it, so
// its fields sit flat in the config's JSON.
type Config struct {
	// Room names the waiting room: the audience of its tokens, the suffix
	// of its cookies (`fairgate_wait_<room>`, `fairgate_pass_<room>`) and its
	// name in the admin API. Letters, digits, `-` and `_`. Default: `main`
	// (DefaultRoom).
	Room string `json:"room,omitempty"`
	// State the room starts in: `open`, `queue`, `scheduled`, `paused` or
	// `closed`. Default: `queue`. Changed live through the admin API.
	State string `json:"state,omitempty"`
	// SaleStart is when a `scheduled` room starts admitting, RFC 3339.
	SaleStart string `json:"sale_start,omitempty"`
	// Rate is the target number of admissions per second, positive; with
	// Capacity, the most admissions per second the capacity controller may
	// ask for. Default: Sessions / SessionLength when Sessions is set
	// (Little's law), else 10 (defaultRate). An explicit `"rate": 0` is
	// refused by both front doors (CheckExplicitZeros): it would read as
	// unset.
	Rate float64 `json:"rate,omitempty"`
	// Sessions is the target number of concurrent sessions on the site.
	// Not with Capacity, which sizes the room by the visitors measured on
	// the site rather than by an assumed session length.
	Sessions int `json:"sessions,omitempty"`
	// Capacity sizes the room by what the site holds: the number of active
	// visitors (passes presented within ActiveWindow, counted on every
	// node through the state store). The room admits at the rate that keeps
	// them at Capacity, never above Rate. Positive; an explicit
	// `"capacity": 0` is refused (CheckExplicitZeros). Default: none (the
	// room admits at Rate). docs/OPERATIONS.md, "Sizing a room".
	Capacity int `json:"capacity,omitempty"`
	// ActiveWindow is how long after a visitor last presented their pass
	// they count as active (still on the site). Only with Capacity.
	// Default: 3m (defaultActiveWindow).
	ActiveWindow Duration `json:"active_window,omitempty"`
	// SessionLength is how long a pass lasts. Default: 15m
	// (admission.DefaultPolicy).
	SessionLength Duration `json:"session_length,omitempty"`
	// Burst is the most admissions allowed at once. Default: one second's Rate.
	// On a state store the shared budget's windows are as long as Rate
	// takes to grant Burst (at least a second).
	Burst float64 `json:"burst,omitempty"`
	// Tau is the mean wait the serving clock starts with, before the
	// controller has measured the queue. Default: 2m (defaultTau).
	Tau Duration `json:"tau,omitempty"`
	// FixedSpeed keeps the clock at 1/Tau instead of letting the controller
	// match the eligible rate to Rate.
	FixedSpeed bool `json:"fixed_speed,omitempty"`
	// QueueOrder is the queue's rule: `lottery` (each wait an exponential
	// draw on the serving clock; arrival order matters little) or `fifo`
	// (probabilistic first in, first out: the pre-queue a uniform lottery
	// served before every later arrival; after the start, of two arrivals Δ
	// apart the earlier goes first with probability 1 − ½·e^(−Δ/W)).
	// docs/FAIRNESS.md, "Queue orders". `fifo` works on every state
	// store: on bolt and dynamodb the arrival ranks come from the store's
	// counter and the rank origin is stored with the control state, so
	// nodes on one store keep one order and a restart keeps it. It cannot
	// change on a reload while the room exists. Default: `lottery`
	// (DefaultQueueOrder).
	QueueOrder string `json:"queue_order,omitempty"`
	// LuckWindow is W of the `fifo` order: the mean head start luck gives a
	// place over the arrivals after it. Only with `fifo`. Default: 5s
	// (DefaultLuckWindow).
	LuckWindow Duration `json:"luck_window,omitempty"`
	// Difficulty is the proof-of-work difficulty in leading zero bits.
	// Default: 16 (defaultDifficulty).
	Difficulty *int `json:"difficulty,omitempty"`
	// Keys sign and verify tokens (see `fairgate keygen`). Secrets may be
	// `env:NAME` or `file:/path`. Without keys the gateway generates some
	// and warns: a restart then invalidates every token.
	Keys tokens.KeysConfig `json:"keys,omitzero"`
	// Lanes are priority lanes, each with its own share of Rate, for the
	// visitors whose verified login carries the lane's claim (the first
	// lane that matches; everyone else waits in the default lane, which gets
	// the rest). Needs the front door's identity. See docs/FAIRNESS.md,
	// "Lanes". Default: none.
	Lanes []Lane `json:"lanes,omitempty"`
	// TokenTTL is how long a waiting token lives past its next attempt.
	// Default: 10m (admission.DefaultPolicy).
	TokenTTL Duration `json:"token_ttl,omitempty"`
	// MinBackoff is the shortest time between admission attempts.
	// Default: 2s (admission.DefaultPolicy).
	MinBackoff Duration `json:"min_backoff,omitempty"`
	// MaxBackoff is the longest time between admission attempts; at least
	// MinBackoff. Default: 30s (admission.DefaultPolicy).
	MaxBackoff Duration `json:"max_backoff,omitempty"`
	// LedgerSize bounds how many admitted places this node remembers (each
	// for about token_ttl + max_backoff + min_backoff after its admission)
	// with state_store `memory` (and with `on_unavailable local` while the
	// store is down); a bolt or DynamoDB store is not bounded by it.
	// Default: 1048576 (defaultLedgerSize). When full, admissions fail
	// closed (503).
	LedgerSize int `json:"ledger_size,omitempty"`
	// StateStore is where the room's shared and durable state lives: a
	// bolt file (the default), DynamoDB for a cluster, or memory. See
	// StateStore for each field and its default.
	StateStore *StateStore `json:"state_store,omitempty"`
}

// Lane is a priority lane.
type Lane struct {
	// Name of the lane: letters, digits, `-` and `_`, unique in the room.
	// Required.
	Name string `json:"name"`
	// Share of the room's rate the lane gets while both it and others have
	// visitors, in (0, 1); all lanes' shares sum to less than 1. Required.
	Share float64 `json:"share"`
	// Claim is `key=value`: the login JWT's claim key must be the string
	// value, or an array holding it (e.g. `tier=vip`, `roles=presale`).
	// Required.
	Claim string `json:"claim"`
}

// DefaultRoom is the room of a config that names none.
const DefaultRoom = "main"

// RoomName is the room the config is for, DefaultRoom when it names none.
func (c Config) RoomName() string {
	if c.Room == "" {
		return DefaultRoom
	}
	return c.Room
}

// Defaults of the room settings that are fairgate's own (the token, pass
// and backoff defaults are admission.DefaultPolicy's).
const (
	// defaultRate is the target admissions per second without Rate or Sessions.
	defaultRate = 10
	// defaultTau is the mean wait the serving clock starts with.
	defaultTau = 2 * time.Minute
	// defaultDifficulty is about 65,000 hashes: well under a second in a browser.
	defaultDifficulty = 16
	// DefaultQueueOrder is the queue's rule without QueueOrder.
	DefaultQueueOrder = admission.OrderLottery
	// DefaultLuckWindow is the fifo luck window: ten times the spread of
	// network delays (0-500 ms), so a faster connection buys little.
	DefaultLuckWindow = 5 * time.Second
	// defaultActiveWindow is how long a visitor counts as on the site after
	// their last request with a pass: longer than reading a page, short
	// enough that a visitor who left frees their place within minutes.
	defaultActiveWindow = 3 * time.Minute
	// defaultLedgerSize is the places a memory ledger remembers without
	// LedgerSize.
	defaultLedgerSize = 1 << 20
)

// namePattern is the rule for room and lane names.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Settings is a room Config with defaults applied and values parsed.
type Settings struct {
	Config
	state      admission.State
	saleStart  time.Time
	difficulty int
	order      admission.Order
	lanes      []laneRule
	// activeWindow is ActiveWindow or its default, with or without capacity.
	activeWindow time.Duration
}

// laneRule is a validated Lane.
type laneRule struct {
	name, key, value string
	share            float64
}

// DefaultLaneLabel is the default lane's name in metrics, which no lane
// may take.
const DefaultLaneLabel = "default"

// settleLanes checks the lanes: names unique and well formed, shares in
// (0, 1) summing below 1, claims `key=value`.
func settleLanes(lanes []Lane) ([]laneRule, error) {
	rules := make([]laneRule, 0, len(lanes))
	seen := map[string]bool{}
	sum := 0.0
	for i, l := range lanes {
		if !namePattern.MatchString(l.Name) {
			return nil, OptionErr("lanes", "lane %d: name %q: use 1 to 64 letters, digits, '-' or '_'", i+1, l.Name)
		}
		if l.Name == DefaultLaneLabel {
			return nil, OptionErr("lanes", "lane %s: the name is the default lane's", l.Name)
		}
		if seen[l.Name] {
			return nil, OptionErr("lanes", "lane %s: name used twice", l.Name)
		}
		seen[l.Name] = true
		if !(l.Share > 0 && l.Share < 1) {
			return nil, OptionErr("lanes", "lane %s: share %v: must be between 0 and 1, exclusive", l.Name, l.Share)
		}
		sum += l.Share
		key, value, ok := strings.Cut(l.Claim, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" || value == "" {
			return nil, OptionErr("lanes", "lane %s: claim %q: want key=value, e.g. tier=vip", l.Name, l.Claim)
		}
		rules = append(rules, laneRule{name: l.Name, key: key, value: value, share: l.Share})
	}
	if sum >= 1 {
		return nil, OptionErr("lanes", "shares sum to %v: must be below 1, the default lane gets the rest", sum)
	}
	return rules, nil
}

// LaneOf is the first lane whose claim a verified login carries (the
// claim is the lane's value, or an array holding it), "" for none.
func (s Settings) LaneOf(claims map[string]any) string {
	for _, l := range s.lanes {
		switch c := claims[l.key].(type) {
		case string:
			if c == l.value {
				return l.name
			}
		case []any:
			for _, e := range c {
				if v, ok := e.(string); ok && v == l.value {
					return l.name
				}
			}
		}
	}
	return ""
}

// Settle fills in defaults and checks the config.
func (c Config) Settle() (Settings, error) {
	s := Settings{Config: c}
	s.Room = c.RoomName()
	if !namePattern.MatchString(s.Room) {
		return s, OptionErr("room", "%q: use 1 to 64 letters, digits, '-' or '_'", s.Room)
	}
	if s.State == "" {
		s.State = string(admission.StateQueue)
	}
	st, err := admission.ParseState(s.State)
	if err != nil {
		return s, &OptionError{Option: "state", Err: err}
	}
	s.state = st
	if s.SaleStart != "" {
		if s.saleStart, err = time.Parse(time.RFC3339, s.SaleStart); err != nil {
			return s, &OptionError{Option: "sale_start", Err: err}
		}
	}
	if st == admission.StateScheduled && s.saleStart.IsZero() {
		return s, errors.New("a scheduled room needs sale_start")
	}
	// The gate's defaults, applied here so the room and the admin API see
	// the values the gate uses.
	SetDuration(&s.SessionLength, admission.DefaultPolicy.PassTTL)
	SetDuration(&s.Tau, defaultTau)
	SetDuration(&s.TokenTTL, admission.DefaultPolicy.TokenTTL)
	SetDuration(&s.MinBackoff, admission.DefaultPolicy.MinBackoff)
	SetDuration(&s.MaxBackoff, admission.DefaultPolicy.MaxBackoff)
	if s.MinBackoff > s.MaxBackoff {
		return s, OptionErr("backoff", "min_backoff %v is longer than max_backoff %v", time.Duration(s.MinBackoff), time.Duration(s.MaxBackoff))
	}
	if s.Burst < 0 || math.IsNaN(s.Burst) || math.IsInf(s.Burst, 0) {
		return s, OptionErr("burst", "%v: must be a positive number of admissions", s.Burst)
	}
	if s.LedgerSize < 0 {
		return s, OptionErr("ledger_size", "%d: must be positive", s.LedgerSize)
	}
	if err := settleCapacity(&s); err != nil {
		return s, err
	}
	if s.Rate == 0 && s.Sessions > 0 {
		s.Rate = float64(s.Sessions) / time.Duration(s.SessionLength).Seconds()
	}
	if s.Rate == 0 {
		s.Rate = defaultRate
	}
	if err := admission.CheckRate(s.Rate); err != nil {
		return s, &OptionError{Option: "rate", Err: err}
	}
	if s.Burst == 0 {
		s.Burst = math.Max(1, s.Rate)
	}
	if s.order, err = admission.ParseOrder(s.QueueOrder); err != nil {
		return s, &OptionError{Option: "queue_order", Err: err}
	}
	if s.QueueOrder == "" {
		s.order = DefaultQueueOrder
	}
	if s.LuckWindow < 0 {
		return s, OptionErr("luck_window", "%v: must not be negative", time.Duration(s.LuckWindow))
	}
	if s.LuckWindow > 0 && s.order != admission.OrderFIFO {
		return s, OptionErr("luck_window", "only applies to queue_order fifo")
	}
	if s.order == admission.OrderFIFO {
		SetDuration(&s.LuckWindow, DefaultLuckWindow)
	}
	s.difficulty = defaultDifficulty
	if s.Difficulty != nil {
		s.difficulty = *s.Difficulty
	}
	if err := tokens.CheckDifficulty(s.difficulty); err != nil {
		return s, &OptionError{Option: "difficulty", Err: err}
	}
	if s.lanes, err = settleLanes(s.Lanes); err != nil {
		return s, err
	}
	if s.LedgerSize == 0 {
		s.LedgerSize = defaultLedgerSize
	}
	if _, err := settleStore(s.StateStore, validationStatePath); err != nil {
		return s, err
	}
	return s, nil
}

// SettleStateStore returns the config's state store with its defaults
// applied; defaultPath is the front door's bolt file (Caddy's data
// directory, `fairgate proxy --state`), empty for none.
func (c Config) SettleStateStore(defaultPath string) (StateStore, error) {
	s, err := settleStore(c.StateStore, defaultPath)
	return s.StateStore, err
}

// settleCapacity checks capacity and active_window and applies the
// window's default.
func settleCapacity(s *Settings) error {
	if s.Capacity < 0 {
		return OptionErr("capacity", "capacity %d: must be a positive number of active visitors", s.Capacity)
	}
	if s.Capacity > 0 && s.Sessions > 0 {
		return errors.New("capacity and sessions both size the room: capacity measures the visitors on the site, sessions assumes them from session_length; use one")
	}
	if s.ActiveWindow < 0 {
		return OptionErr("active_window", "%v: must not be negative", time.Duration(s.ActiveWindow))
	}
	if s.ActiveWindow > 0 && s.Capacity == 0 {
		return OptionErr("active_window", "only applies with capacity")
	}
	// In the settings only: the window also counts a rate room's visitors
	// (the admin API's figures), where the option itself is refused.
	s.activeWindow = time.Duration(s.ActiveWindow)
	if s.activeWindow == 0 {
		s.activeWindow = defaultActiveWindow
	}
	return nil
}

// CheckExplicitZeros refuses `"rate": 0` and `"capacity": 0` in a config's
// JSON. Their zero is their unset value, so an explicit 0 would run the
// room at the default rate without a word.
func CheckExplicitZeros(raw []byte) error {
	var set struct {
		Rate     *float64 `json:"rate"`
		Capacity *float64 `json:"capacity"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil // a malformed config is the decoder's to report
	}
	if set.Rate != nil {
		if err := admission.CheckRate(*set.Rate); err != nil {
			return &OptionError{Option: "rate", Err: fmt.Errorf("%w; leave rate out for the default", err)}
		}
	}
	if set.Capacity != nil && *set.Capacity <= 0 {
		return OptionErr("capacity", "capacity %v: must be a positive number of active visitors; leave capacity out to admit at rate", *set.Capacity)
	}
	return nil
}

func (s Settings) roomConfig() admission.RoomConfig {
	return admission.RoomConfig{
		Name: s.Room, State: s.state, SaleStart: s.saleStart,
		Rate: s.Rate, Burst: s.Burst, Tau: time.Duration(s.Tau), Adaptive: !s.FixedSpeed,
		Difficulty: s.difficulty, Window: 2 * time.Duration(s.MaxBackoff),
		Order: s.order, Luck: time.Duration(s.LuckWindow),
		// A token stays valid TokenTTL past its checkpoint, plus the leeway:
		// the clock is remembered that long, so a late attempt is judged
		// at the checkpoint it names.
		Memory: time.Duration(s.TokenTTL) + admission.DefaultPolicy.Leeway + time.Duration(s.MaxBackoff),
		Policy: s.policy(),
	}
}

// Policy is the gate's token, pass and backoff policy.
func (s Settings) policy() admission.Policy {
	return admission.Policy{
		TokenTTL:   time.Duration(s.TokenTTL),
		PassTTL:    time.Duration(s.SessionLength),
		MinBackoff: time.Duration(s.MinBackoff),
		MaxBackoff: time.Duration(s.MaxBackoff),
	}
}
