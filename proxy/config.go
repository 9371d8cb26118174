package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/fairgate/fairgate/admission"

	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/internal/duration"
)

// Config is one waiting room in front of one site. Its JSON is the JSON of
// the Caddy module `http.handlers.waiting_room` and of `fairgate proxy
// --config`: one struct for both front doors.
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
	// (Little's law), else 10 (DefaultRate). An explicit `"rate": 0` is
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
	// Default: 3m (DefaultActiveWindow).
	ActiveWindow Duration `json:"active_window,omitempty"`
	// SessionLength is how long a pass lasts. Default: 15m
	// (admission.DefaultPolicy).
	SessionLength Duration `json:"session_length,omitempty"`
	// Burst is the most admissions allowed at once. Default: one second's Rate.
	Burst float64 `json:"burst,omitempty"`
	// Tau is the mean wait the serving clock starts with, before the
	// controller has measured the queue. Default: 2m (DefaultTau).
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
	// Default: 16 (DefaultDifficulty).
	Difficulty *int `json:"difficulty,omitempty"`
	// Keys sign and verify tokens (see `fairgate keygen`). Secrets may be
	// `env:NAME` or `file:/path`. Without keys the gateway generates some
	// and warns: a restart then invalidates every token.
	Keys tokens.KeysConfig `json:"keys,omitzero"`
	// Prefix is where the gateway's own endpoints live: a path of segments
	// made of letters, digits and -._~ . Default: `/_fairgate`
	// (DefaultPrefix).
	Prefix string `json:"prefix,omitempty"`
	// Bypass lets requests through without a pass.
	Bypass Bypass `json:"bypass,omitzero"`
	// Identity, when set, verifies the site's own login JWT and ties
	// waiting tokens and passes to its subject.
	Identity *Identity `json:"identity,omitempty"`
	// Lanes are priority lanes, each with its own share of Rate, for the
	// visitors whose verified login carries the lane's claim (the first
	// lane that matches; everyone else waits in the default lane, which gets
	// the rest). Needs Identity. See docs/FAIRNESS.md, "Lanes". Default: none.
	Lanes []Lane `json:"lanes,omitempty"`
	// BindIP ties waiting tokens to a keyed hash of the client's address.
	BindIP bool `json:"bind_ip,omitempty"`
	// BindPass holds a pass to the address it was admitted from (it needs
	// BindIP): a pass copied to another client is refused there. The cost
	// falls on mobile visitors, whose address changes between networks (Wi-Fi
	// to cellular, carrier NAT pools): they lose their pass and queue again.
	// Off by default. With Identity, passes are always held to the login's
	// subject, which survives address changes.
	BindPass bool `json:"bind_pass,omitempty"`
	// TrustedProxies are the CIDRs whose X-Forwarded-For is believed when
	// finding the client's address (`fairgate proxy` only: in Caddy the
	// client address is Caddy's, by its own trusted_proxies). Default: none.
	TrustedProxies []string `json:"trusted_proxies,omitempty"`
	// Hook is called when a visitor is admitted.
	Hook *Hook `json:"admission_hook,omitempty"`
	// Cache serves configured read paths from memory.
	Cache *Cache `json:"cache,omitempty"`
	// WaitingStatus is the status of the waiting page. Default: 200.
	WaitingStatus int `json:"waiting_status,omitempty"`
	// WaitingPage is an html/template file for the waiting page, executed
	// with PageData (docs/WAITING_PAGE.md). It must include {{.Script}}. It
	// is parsed and executed against sample data in every language when the
	// config loads, so a broken template fails the load with its file and
	// line. Default: the built-in page.
	WaitingPage string `json:"waiting_page,omitempty"`
	// Language forces the language of the visitor pages (`en`, `de`, `fr`,
	// `es`, `it`, `pt`, `nl`, `ja`, `ar`). Default: each visitor's
	// Accept-Language, English when none of these matches.
	Language string `json:"language,omitempty"`
	// ClosedPage is an HTML file shown while the room is closed. Default:
	// built in.
	ClosedPage string `json:"closed_page,omitempty"`
	// SoldOutPage is an HTML file shown while the room is closed with
	// reason `sold_out` (admin API). Default: built in.
	SoldOutPage string `json:"sold_out_page,omitempty"`
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
	// Default: 1048576. When full, admissions fail closed (503).
	LedgerSize int `json:"ledger_size,omitempty"`
	// MaxBodyBytes bounds request bodies of the gateway's endpoints.
	// Default: 4096.
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
	// StateStore is where the room's shared and durable state lives: a
	// bolt file (the default), DynamoDB for a cluster, or memory. See
	// StateStore for each field and its default.
	StateStore *StateStore `json:"state_store,omitempty"`
}

// Bypass rules let matching requests through without a pass. A request
// bypasses when any rule matches.
type Bypass struct {
	// Paths are path prefixes on segment boundaries (`/healthz` matches
	// `/healthz` and `/healthz/live`, not `/healthzX`), or globs with `*`
	// (one segment, never `.` or `..`) and a trailing `/**` (any depth).
	// They match the path the origin will serve: percent-decoded, duplicate
	// slashes merged, case kept. A path with a dot segment is refused (400)
	// and one with an encoded slash or a backslash never bypasses; see
	// docs/SECURITY.md.
	Paths []string `json:"paths,omitempty"`
	// Methods, e.g. `OPTIONS`.
	Methods []string `json:"methods,omitempty"`
	// CIDRs of clients, e.g. health checkers.
	CIDRs []string `json:"cidrs,omitempty"`
	// UserAgents are regular expressions matched against User-Agent.
	UserAgents []string `json:"user_agents,omitempty"`
}

// Identity verifies the site's login JWT.
type Identity struct {
	// Cookie names the cookie holding the JWT. Cookie or Header is
	// required; with both, the cookie is read first.
	Cookie string `json:"cookie,omitempty"`
	// Header names the header holding it (`Authorization` takes a Bearer
	// token). Default: none (see Cookie).
	Header string `json:"header,omitempty"`
	// Algorithm is the JWT algorithm: HS256, HS384, HS512, RS256, ES256 or
	// EdDSA. Required.
	Algorithm string `json:"algorithm"`
	// Key is the HMAC secret (base64) or the PEM public key; `env:` and
	// `file:` work as for Keys. Required.
	Key string `json:"key"`
	// Issuer, when set, must equal the JWT's `iss`. Default: not checked.
	Issuer string `json:"issuer,omitempty"`
	// Audience, when set, must be in the JWT's `aud`. Default: not checked.
	Audience string `json:"audience,omitempty"`
	// Required refuses visitors without a valid login (401) instead of
	// letting them wait anonymously. Default: false.
	Required bool `json:"required,omitempty"`
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

// Hook is called with the pass when a visitor is admitted. A 2xx answer
// admits, and a `session` string in its JSON body goes into the pass as
// `ses`; 409 or 429 keeps the visitor waiting without penalty; anything
// else, or no answer within Timeout, follows OnFailure. Each call carries
// the pass id as its `Idempotency-Key`: the same pass delivered again (its
// first answer was lost) calls the hook with the same key, and a hook that
// replays its first answer for it (the seat service does) keeps one
// session per pass.
type Hook struct {
	// URL receives a POST per admission: an absolute http or https URL.
	// In Caddy it may hold request placeholders ({http.request.host}).
	// Required.
	URL string `json:"url"`
	// Timeout of one call. Default: 3s.
	Timeout Duration `json:"timeout,omitempty"`
	// OnFailure is `closed` (keep the visitor waiting; default) or `open`
	// (admit without a session).
	OnFailure string `json:"on_failure,omitempty"`
}

// Cache serves read paths from memory.
type Cache struct {
	// Paths as in Bypass.Paths. Only GET and HEAD are cached, and never for
	// a request with an Authorization header. Entries are filled with the
	// request stripped of credentials (Cookie, Authorization, fairgate's
	// headers): a cached path serves every visitor what an anonymous one
	// gets. Default: none (nothing is cached).
	Paths []string `json:"paths"`
	// TTL when the upstream sends no `s-maxage`/`max-age`. Default: 2s.
	TTL Duration `json:"ttl,omitempty"`
	// StaleWhileRevalidate is how long an expired entry is served while one
	// request refreshes it. Default: 10s.
	StaleWhileRevalidate Duration `json:"stale_while_revalidate,omitempty"`
	// MaxRetryAfter bounds how long an upstream 429 or 503 with
	// Retry-After is served from memory on these paths (it is kept like any
	// other answer that is not one visitor's). Default: 10s.
	MaxRetryAfter Duration `json:"max_retry_after,omitempty"`
	// MaxBytes bounds the memory of cached bodies. Default: 64 MiB.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// MaxEntryBytes bounds one cached body. Default: 1 MiB.
	MaxEntryBytes int64 `json:"max_entry_bytes,omitempty"`
}

// Duration is a time.Duration that reads from JSON as a string such as
// "1m30s" or a number of nanoseconds, as Caddy's durations do.
type Duration = duration.Duration

// DefaultRoom is the room of a config that names none.
const DefaultRoom = "main"

// RoomName is the room the config is for, DefaultRoom when it names none.
func (c Config) RoomName() string {
	if c.Room == "" {
		return DefaultRoom
	}
	return c.Room
}

// Defaults of the room settings that are the gateway's own (the token,
// pass and backoff defaults are admission.DefaultPolicy's).
const (
	// DefaultRate is the target admissions per second without Rate or Sessions.
	DefaultRate = 10
	// DefaultTau is the mean wait the serving clock starts with.
	DefaultTau = 2 * time.Minute
	// DefaultDifficulty is about 65,000 hashes: well under a second in a browser.
	DefaultDifficulty = 16
	// DefaultQueueOrder is the queue's rule without QueueOrder.
	DefaultQueueOrder = admission.OrderLottery
	// DefaultLuckWindow is the fifo luck window: ten times the spread of
	// network delays (0-500 ms), so a faster connection buys little.
	DefaultLuckWindow = 5 * time.Second
	// DefaultActiveWindow is how long a visitor counts as on the site after
	// their last request with a pass: longer than reading a page, short
	// enough that a visitor who left frees their place within minutes.
	DefaultActiveWindow = 3 * time.Minute
)

// DefaultPrefix is where the gateway's endpoints live unless Prefix says.
const DefaultPrefix = "/_fairgate"

// validPrefix is the rule for Prefix: a path of plain segments, which the
// gateway's routes (ServeMux patterns) are made from.
func validPrefix(p string) bool {
	rest, ok := strings.CutPrefix(p, "/")
	if !ok {
		return false
	}
	for seg := range strings.SplitSeq(rest, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsFunc(seg, func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-._~", r))
		}) {
			return false
		}
	}
	return true
}

// EndpointPrefix is the path the gateway's own endpoints live under.
func (c Config) EndpointPrefix() string {
	if c.Prefix == "" {
		return DefaultPrefix
	}
	return c.Prefix
}

var roomName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// OptionError is a config value that is wrong on its own, named by its
// option, so the Caddyfile adapter can point at the line that set it.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string {
	if msg := e.Err.Error(); strings.HasPrefix(msg, e.Option+" ") {
		return msg
	}
	return e.Option + ": " + e.Err.Error()
}
func (e *OptionError) Unwrap() error { return e.Err }

func optionErr(option string, format string, args ...any) error {
	return &OptionError{Option: option, Err: fmt.Errorf(format, args...)}
}

// Validate checks the config as the gateway will read it, without loading
// keys or files.
func (c Config) Validate() error {
	_, err := c.settle()
	return err
}

// settings is a Config with defaults applied and values parsed.
type settings struct {
	Config
	state      admission.State
	saleStart  time.Time
	difficulty int
	order      admission.Order
	trusted    []netip.Prefix
	language   int // index in pageLanguages, or -1 for Accept-Language
	lanes      []laneRule
	// activeWindow is ActiveWindow or its default, with or without capacity.
	activeWindow time.Duration
}

// validationStatePath stands in for a front door's default bolt file when
// a config is only checked.
const validationStatePath = "(the front door's default)"

// laneRule is a validated Lane.
type laneRule struct {
	name, key, value string
	share            float64
}

// settleLanes checks the lanes: names unique and well formed, shares in
// (0, 1) summing below 1, claims `key=value`, identity configured.
func settleLanes(lanes []Lane, identity *Identity) ([]laneRule, error) {
	rules := make([]laneRule, 0, len(lanes))
	seen := map[string]bool{}
	sum := 0.0
	for i, l := range lanes {
		if !roomName.MatchString(l.Name) {
			return nil, optionErr("lanes", "lane %d: name %q: use 1 to 64 letters, digits, '-' or '_'", i+1, l.Name)
		}
		if l.Name == defaultLane {
			return nil, optionErr("lanes", "lane %s: the name is the default lane's", l.Name)
		}
		if seen[l.Name] {
			return nil, optionErr("lanes", "lane %s: name used twice", l.Name)
		}
		seen[l.Name] = true
		if !(l.Share > 0 && l.Share < 1) {
			return nil, optionErr("lanes", "lane %s: share %v: must be between 0 and 1, exclusive", l.Name, l.Share)
		}
		sum += l.Share
		key, value, ok := strings.Cut(l.Claim, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" || value == "" {
			return nil, optionErr("lanes", "lane %s: claim %q: want key=value, e.g. tier=vip", l.Name, l.Claim)
		}
		rules = append(rules, laneRule{name: l.Name, key: key, value: value, share: l.Share})
	}
	if sum >= 1 {
		return nil, optionErr("lanes", "shares sum to %v: must be below 1, the default lane gets the rest", sum)
	}
	// Not an OptionError: identity may come after the lanes.
	if len(lanes) > 0 && identity == nil {
		return nil, errors.New("lanes need identity: a lane is granted by a claim of the verified login")
	}
	return rules, nil
}

// defaults fills in defaults and checks the config.
func (c Config) settle() (settings, error) {
	s := settings{Config: c}
	s.Room = c.RoomName()
	if !roomName.MatchString(s.Room) {
		return s, optionErr("room", "%q: use 1 to 64 letters, digits, '-' or '_'", s.Room)
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
	setDur(&s.SessionLength, admission.DefaultPolicy.PassTTL)
	setDur(&s.Tau, DefaultTau)
	setDur(&s.TokenTTL, admission.DefaultPolicy.TokenTTL)
	setDur(&s.MinBackoff, admission.DefaultPolicy.MinBackoff)
	setDur(&s.MaxBackoff, admission.DefaultPolicy.MaxBackoff)
	if s.MinBackoff > s.MaxBackoff {
		return s, optionErr("backoff", "min_backoff %v is longer than max_backoff %v", time.Duration(s.MinBackoff), time.Duration(s.MaxBackoff))
	}
	if s.Burst < 0 || math.IsNaN(s.Burst) || math.IsInf(s.Burst, 0) {
		return s, optionErr("burst", "%v: must be a positive number of admissions", s.Burst)
	}
	if s.LedgerSize < 0 {
		return s, optionErr("ledger_size", "%d: must be positive", s.LedgerSize)
	}
	if err := settleCapacity(&s); err != nil {
		return s, err
	}
	if s.Rate == 0 && s.Sessions > 0 {
		s.Rate = float64(s.Sessions) / time.Duration(s.SessionLength).Seconds()
	}
	if s.Rate == 0 {
		s.Rate = DefaultRate
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
		return s, optionErr("luck_window", "%v: must not be negative", time.Duration(s.LuckWindow))
	}
	if s.LuckWindow > 0 && s.order != admission.OrderFIFO {
		return s, optionErr("luck_window", "only applies to queue_order fifo")
	}
	if s.order == admission.OrderFIFO {
		setDur(&s.LuckWindow, DefaultLuckWindow)
	}
	s.difficulty = DefaultDifficulty
	if s.Difficulty != nil {
		s.difficulty = *s.Difficulty
	}
	if err := tokens.CheckDifficulty(s.difficulty); err != nil {
		return s, &OptionError{Option: "difficulty", Err: err}
	}
	s.Prefix = c.EndpointPrefix()
	if !validPrefix(s.Prefix) {
		return s, optionErr("prefix", "%q: must be a path such as /_fairgate: segments of letters, digits and -._~, not . or ..", s.Prefix)
	}
	if s.BindPass && !s.BindIP {
		return s, errors.New("bind_pass needs bind_ip: a pass carries its waiting token's address binding")
	}
	if s.WaitingStatus == 0 {
		s.WaitingStatus = 200
	}
	if s.WaitingStatus < 200 || s.WaitingStatus > 599 {
		return s, optionErr("waiting_status", "%d is not an HTTP status", s.WaitingStatus)
	}
	s.language = -1
	if s.Language != "" {
		if s.language, err = pageLanguages.byName(s.Language); err != nil {
			return s, &OptionError{Option: "language", Err: err}
		}
	}
	if s.lanes, err = settleLanes(s.Lanes, s.Identity); err != nil {
		return s, err
	}
	if s.LedgerSize == 0 {
		s.LedgerSize = 1 << 20
	}
	if _, err := settleStore(s.StateStore, validationStatePath); err != nil {
		return s, err
	}
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = 4096
	}
	for _, cidr := range s.TrustedProxies {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return s, &OptionError{Option: "trusted_proxies", Err: err}
		}
		s.trusted = append(s.trusted, p)
	}
	if err := checkBypass(s.Bypass); err != nil {
		return s, &OptionError{Option: "bypass", Err: err}
	}
	if s.Cache != nil {
		if _, err := newMatcher(s.Cache.Paths); err != nil {
			return s, &OptionError{Option: "cache", Err: err}
		}
	}
	if s.Hook != nil {
		if err := checkHookURL(s.Hook.URL); err != nil {
			return s, &OptionError{Option: "admission_hook", Err: err}
		}
		setDur(&s.Hook.Timeout, 3*time.Second)
		switch s.Hook.OnFailure {
		case "":
			s.Hook.OnFailure = "closed"
		case "open", "closed":
		default:
			return s, optionErr("on_failure", "%q: want open or closed", s.Hook.OnFailure)
		}
	}
	if s.Cache != nil {
		setDur(&s.Cache.TTL, 2*time.Second)
		setDur(&s.Cache.StaleWhileRevalidate, 10*time.Second)
		setDur(&s.Cache.MaxRetryAfter, 10*time.Second)
		if s.Cache.MaxBytes == 0 {
			s.Cache.MaxBytes = 64 << 20
		}
		if s.Cache.MaxEntryBytes == 0 {
			s.Cache.MaxEntryBytes = 1 << 20
		}
	}
	return s, nil
}

// settleCapacity checks capacity and active_window and applies the
// window's default.
func settleCapacity(s *settings) error {
	if s.Capacity < 0 {
		return optionErr("capacity", "capacity %d: must be a positive number of active visitors", s.Capacity)
	}
	if s.Capacity > 0 && s.Sessions > 0 {
		return errors.New("capacity and sessions both size the room: capacity measures the visitors on the site, sessions assumes them from session_length; use one")
	}
	if s.ActiveWindow < 0 {
		return optionErr("active_window", "%v: must not be negative", time.Duration(s.ActiveWindow))
	}
	if s.ActiveWindow > 0 && s.Capacity == 0 {
		return optionErr("active_window", "only applies with capacity")
	}
	// In the settings only: the window also counts a rate room's visitors
	// (the admin API's figures), where the option itself is refused.
	s.activeWindow = time.Duration(s.ActiveWindow)
	if s.activeWindow == 0 {
		s.activeWindow = DefaultActiveWindow
	}
	return nil
}

// checkBypass compiles the bypass rules as the gateway will.
func checkBypass(b Bypass) error {
	if _, err := newMatcher(b.Paths); err != nil {
		return fmt.Errorf("paths: %w", err)
	}
	for _, ua := range b.UserAgents {
		if _, err := newRegexpMatcher(ua); err != nil {
			return fmt.Errorf("user_agents: %w", err)
		}
	}
	for _, c := range b.CIDRs {
		if _, err := netip.ParsePrefix(c); err != nil {
			return fmt.Errorf("cidrs: %w", err)
		}
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
		return optionErr("capacity", "capacity %v: must be a positive number of active visitors; leave capacity out to admit at rate", *set.Capacity)
	}
	return nil
}

// placeholder is a Caddy placeholder such as {http.request.host}.
var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

// checkHookURL accepts an absolute http or https URL; placeholders (which
// the Caddy module fills per request) stand in for any text.
func checkHookURL(raw string) error {
	u, err := url.Parse(placeholder.ReplaceAllString(raw, "placeholder"))
	if err != nil {
		return fmt.Errorf("url %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q: want an absolute http:// or https:// URL", raw)
	}
	return nil
}

func setDur(d *Duration, def time.Duration) {
	if *d <= 0 {
		*d = Duration(def)
	}
}

func (s settings) roomConfig() admission.RoomConfig {
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

func (s settings) policy() admission.Policy {
	return admission.Policy{
		TokenTTL:   time.Duration(s.TokenTTL),
		PassTTL:    time.Duration(s.SessionLength),
		MinBackoff: time.Duration(s.MinBackoff),
		MaxBackoff: time.Duration(s.MaxBackoff),
	}
}
