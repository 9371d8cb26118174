// Package sim simulates a sale through the gateway's HTTP handler (the same
// handler `fairgate proxy` and the Caddy module serve) in simulated time,
// with visitors that follow the page and visitors that try every strategy a
// client can, each paired with its honest twin: the same visitor, the same
// draw, in a run where everyone is honest.
package sim

import (
	"cmp"
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fairgate/fairgate/admission"

	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/gateway"
	"github.com/fairgate/fairgate/room"
)

// Config describes one simulated sale.
type Config struct {
	// PreQueue visitors arrive over PreQueueSpan before the start.
	PreQueue     int
	PreQueueSpan time.Duration
	// Arrivals visitors arrive over ArrivalSpan after the start.
	Arrivals    int
	ArrivalSpan time.Duration
	// Rate is the target admission rate per second.
	Rate float64
	// FixedTau, when set, runs the serving clock at 1/FixedTau instead of
	// letting the controller adapt it. The controller reacts to how many
	// places are presented when, so with it a strategy's run and the
	// baseline drift apart a little for everyone (the report shows how much
	// as the honest visitors' noise); a fixed clock pairs twins exactly.
	FixedTau time.Duration
	// Jitter is the largest one-way network delay. Each visitor's network
	// has a delay drawn uniformly from [0, Jitter), and each request adds
	// up to a tenth of Jitter more that nobody can predict: a visitor's
	// tabs and retries share its network, and its honest twin has the same.
	Jitter time.Duration
	// Difficulty is the proof-of-work difficulty in bits.
	Difficulty int
	// Share of visitors plays each strategy other than honest.
	Share float64
	// Tabs is k for the k-tabs and k-tokens strategies.
	Tabs int
	// Horizon bounds the simulated time after the start.
	Horizon time.Duration
	// Seed makes a run reproducible.
	Seed uint64
	// VIPVisitors is the share of visitors whose login carries tier=vip,
	// and VIPLane the share of Rate their lane gets (docs/FAIRNESS.md,
	// "Lanes"). Zero VIPLane: no lane.
	VIPVisitors, VIPLane float64
	// QueueOrder is the room's queue_order, "lottery" or "fifo"; empty is
	// the gateway's default. LuckWindow is fifo's luck_window (zero: the
	// default).
	QueueOrder string
	LuckWindow time.Duration
	// Only, when not empty, limits RunAll to these strategies' runs (the
	// baseline always runs): a full-scale ordering run need not pay for
	// every strategy.
	Only []Kind
	// Mixed runs every strategy in one run next to the baseline instead of
	// one run per strategy: two runs instead of eight. Each strategy's
	// visitors are still paired with their own honest twins in the
	// baseline; what changes is the noise, which is then what all the
	// strategies together did to the honest visitors (with an adaptive
	// clock, a little more than one strategy alone).
	Mixed bool
	// Parallel is how many runs RunAll makes at once (0 or 1: one after
	// the other). Runs share nothing, so the report is the same.
	Parallel int
	// Progress, when set, gets a line per run every 5 simulated minutes:
	// how far the run is, how many are in and how many requests it took.
	// With Parallel, runs write to it at once.
	Progress io.Writer
	// SkipEarlyRepeats answers a strategy's attempt from the gateway's
	// last answer instead of sending it, when that answer was 429 "early"
	// for the very token presented again, still before that token's nxt:
	// the gateway judges and counts nothing before nxt, so the answer is
	// the same (docs/FAIRNESS.md, "The rule"). The attempt still counts in
	// the visitor's requests; Run.Repeats counts those not sent. At full
	// scale the fast retriers' early repeats are most of a mixed run's
	// requests; TestSkipEarlyRepeats checks that admissions do not change.
	SkipEarlyRepeats bool
}

// Luck is the luck window the ordering table measures against: the
// configured one, or the gateway's default.
func (c Config) Luck() time.Duration { return cmp.Or(c.LuckWindow, room.DefaultLuckWindow) }

// DefaultConfig is the full-scale scenario: 100k in the pre-queue, 100k
// arriving over the first 10 minutes, 0-500 ms jitter, 100 admissions/s.
var DefaultConfig = Config{
	PreQueue: 100_000, PreQueueSpan: 10 * time.Minute,
	Arrivals: 100_000, ArrivalSpan: 10 * time.Minute,
	Rate: 100, Jitter: 500 * time.Millisecond, Difficulty: 4,
	Share: 0.002, Tabs: 3, Horizon: 12 * time.Hour, Seed: 1,
}

// controlBands is how many whole bands of width share lie beyond the
// strategies' seven: the number of control groups.
func controlBands(share float64) int {
	if share <= 0 {
		return 0
	}
	return max(0, int(math.Floor(1/share+1e-9))-int(kinds-1))
}

// LatePeriod is the late presenter's timer period: a background tab whose
// timers fire once a minute. Each of its requests is up to that late, plus
// its network delay.
const LatePeriod = time.Minute

// Kind is a visitor strategy.
type Kind int

// Strategies.
const (
	Honest        Kind = iota // attempts at nxt, as the page does
	FastRetrier               // attempts every 100 ms with the newest token
	Replayer                  // keeps every version and presents them all at each attempt
	IgnoreNxt                 // attempts every second whatever nxt says
	EarlyHammerer             // attempts 1 s and 300 ms before nxt, then at nxt
	LatePresenter             // a background tab: timers fire once a minute
	Tabs                      // k tabs with the same login
	AnonTokens                // k anonymous tokens (k draws, k proofs of work)
	kinds
	// everyStrategy, as Simulate's active kind, has every visitor play
	// the strategy drawn for it (Config.Mixed).
	everyStrategy = kinds
)

var kindNames = [...]string{"honest", "fast retrier", "old-token replayer", "ignore nxt", "early hammerer",
	"late presenter", "k tabs, one login", "k anonymous tokens"}

func (k Kind) String() string { return kindNames[k] }

// runName names the run in which active is played.
func runName(active Kind) string {
	switch active {
	case Honest:
		return "baseline"
	case everyStrategy:
		return "every strategy's"
	}
	return "the " + active.String()
}

// Visitor is one simulated visitor's history.
type Visitor struct {
	ID   int
	Kind Kind
	// PreQueue marks a visitor in the pre-queue: arrived before the start
	// and, in a fifo room, claimed its place before it.
	PreQueue bool
	Arrive   time.Duration // relative to the sale start
	Admitted time.Duration // relative to the sale start; valid when Done
	Done     bool
	// Requests is how many requests the visitor sent; Hashes the proof of
	// work it did.
	Requests int
	Hashes   uint64
	// Expired counts the visitor's tokens that expired while it waited:
	// a lost place.
	Expired int
	// Counted is how many requests the visitor sent once its place
	// counted: answered busy (a slot ahead, the rate, the budget) or
	// admitted.
	Counted int
	// Late is how late a late presenter's counted requests arrived, each
	// against the time the page aimed at (nil for every other visitor).
	Late []time.Duration
	// Lane is the lane the visitor's login grants, "" for the default one.
	Lane string
	// Control is the control group of an honest visitor (1, 2, …; 0:
	// none): the visitors whose draw fell in the same band of width Share
	// beyond the strategies' bands, chosen exactly as a strategy's
	// visitors are, and honest in every run (docs/FAIRNESS.md, "The
	// control groups").
	Control int
	// Lot is the lottery number of the visitor's first token, which the
	// simulation (holding the keys) may know and the visitor may not.
	Lot float64
}

// Run is the outcome of one simulation.
type Run struct {
	Config   Config
	Visitors []Visitor
	Requests int
	// Repeats counts the requests answered from the last answer instead of
	// sent (Config.SkipEarlyRepeats); they are in Requests too.
	Repeats  int
	Duration time.Duration
}

type event struct {
	at      time.Time
	visitor int
}

type events []event

func (e events) Len() int           { return len(e) }
func (e events) Less(i, j int) bool { return e[i].at.Before(e[j].at) }
func (e events) Swap(i, j int)      { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)        { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// answer is what the simulation reads of the gateway's JSON.
type answer struct {
	Token       string `json:"token"`
	Challenge   string `json:"challenge"`
	Difficulty  int    `json:"difficulty"`
	NextAttempt int64  `json:"next_attempt"`
	Outcome     string `json:"outcome"`
	Error       struct {
		Code string `json:"code"`
	} `json:"error"`
}

// held is one token a visitor holds, with its solved challenge.
type held struct {
	answer
	nonce string
}

type state struct {
	login    string
	tokens   []held // the newest version of each token held (k for tabs)
	versions []held // every version ever held: the replayer's only
	phase    time.Duration
	delay    time.Duration
	net      *rand.Rand
	issued   int
	// early is the token the gateway last answered 429 "early" unchanged.
	early string
	// aimed is when a late presenter's page aimed its next request to
	// arrive, before the tab's timer moved it (Visitor.Late).
	aimed time.Time
	// claimed is set once a fifo place's claim is known (Visitor.PreQueue).
	claimed bool
	// slot is the slot the last busy answer named, and slotTold when
	// that answer arrived (admittedAt).
	slot, slotTold time.Time
}

// admittedAt is the moment the room admitted a visitor answered 200 at
// now for a token whose checkpoint was nxt: the slot a busy answer gave
// it, when this request presented that slot as soon as the visitor's
// network allowed (its round trip after the answer, and the per-request
// spread); now otherwise. The room gave the place that moment, and the
// round trip to present it is the visitor's network, not its order: twins
// whose only difference is that one was answered busy a moment before
// the other found a free slot are admitted at their slots (as
// e2e/fairness reads fifo's pre-queue boundary).
func (s *sale) admittedAt(st *state, nxt int64) time.Time {
	if st.slot.IsZero() || nxt != st.slot.UnixMilli() {
		return s.now
	}
	due := st.slot
	if back := st.slotTold.Add(2 * st.delay); back.After(due) {
		due = back
	}
	if s.now.After(due.Add(s.cfg.Jitter/10 + time.Millisecond)) {
		return s.now // presented late: the lateness is the visitor's
	}
	return st.slot
}

// holds reports whether token is one of the versions kept: an answer that
// hands back a version already kept (the ledger mints none once it holds a
// place) is not a new one.
func (st *state) holds(token string) bool {
	for _, h := range st.versions {
		if h.Token == token {
			return true
		}
	}
	return false
}

// sale is one run: a gateway with its injected clock, and its visitors.
type sale struct {
	cfg    Config
	now    time.Time
	start  time.Time
	client *client
	body   []byte // the last admission attempt's JSON, reused
	shared *room.Shared
	random *streams
	run    *Run
	states []state
	queue  events
}

// Simulate runs one sale in which the visitors drawn for the active
// strategy play it and everyone else is honest (active kinds: every visitor
// plays the strategy drawn for it). Arrivals, logins, draws and network
// delays are the same whatever is active, so the run with Honest active is
// the baseline each strategy is paired against, visitor by visitor.
func Simulate(ctx context.Context, cfg Config, active Kind) (*Run, error) {
	s, err := newSale(cfg, active)
	if err != nil {
		return nil, err
	}
	nextTick := s.now
	nextReport, admitted := s.now, 0
	for s.queue.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("simulation interrupted: %w", err)
		}
		ev := heap.Pop(&s.queue).(event)
		if ev.at.Sub(s.start) > cfg.Horizon {
			break
		}
		for !nextTick.After(ev.at) {
			s.shared.Tick(nextTick)
			nextTick = nextTick.Add(time.Second)
		}
		s.now = ev.at
		if cfg.Progress != nil && !s.now.Before(nextReport) {
			fmt.Fprintf(cfg.Progress, "sim seed %d, %s run: at %v, %d of %d in, %d requests\n", cfg.Seed, runName(active),
				s.now.Sub(s.start).Round(time.Second), admitted, len(s.run.Visitors), s.run.Requests)
			nextReport = nextReport.Add(5 * time.Minute)
		}
		if s.run.Visitors[ev.visitor].Done {
			continue
		}
		if err := s.act(ev.visitor); err != nil {
			return nil, fmt.Errorf("visitor %d at %v: %w", ev.visitor, s.now.Sub(s.start), err)
		}
		if s.run.Visitors[ev.visitor].Done {
			admitted++
		}
	}
	s.run.Duration = s.now.Sub(s.start)
	return s.run, nil
}

var (
	simSecret   = []byte("fairgate-simulation-login-secret")
	simStart    = time.Date(2031, 3, 9, 12, 0, 0, 0, time.UTC)
	simLoginTTL = 48 * time.Hour
)

func newSale(cfg Config, active Kind) (*sale, error) {
	s := &sale{cfg: cfg, start: simStart, now: simStart.Add(-cfg.PreQueueSpan), random: &streams{seed: cfg.Seed}}
	difficulty := cfg.Difficulty
	pcfg := gateway.Config{
		Config: room.Config{Room: "sim", State: "scheduled", SaleStart: s.start.Format(time.RFC3339), Rate: cfg.Rate, Burst: cfg.Rate, Tau: gateway.Duration(cmp.Or(cfg.FixedTau, time.Minute)), FixedSpeed: cfg.FixedTau > 0, Difficulty: &difficulty, Keys: simKeys(cfg.Seed), QueueOrder: cfg.QueueOrder, LuckWindow: gateway.Duration(cfg.LuckWindow)},
		Identity: &gateway.Identity{Header: "Authorization", Algorithm: "HS256",
			Key: base64.StdEncoding.EncodeToString(simSecret)},
	}
	if cfg.VIPLane > 0 {
		pcfg.Lanes = []room.Lane{{Name: "vip", Share: cfg.VIPLane, Claim: "tier=vip"}}
	}
	clock := func() time.Time { return s.now }
	shared, err := gateway.NewShared(pcfg, clock)
	if err != nil {
		return nil, err
	}
	gw, err := gateway.New(pcfg, shared, gateway.Options{Now: clock, Random: s.random})
	if err != nil {
		return nil, err
	}
	s.client = newClient(gw.Wrap(http.NotFoundHandler()))
	s.shared = shared

	n := cfg.PreQueue + cfg.Arrivals
	s.run = &Run{Config: cfg, Visitors: make([]Visitor, n)}
	s.states = make([]state, n)
	setup := rand.New(rand.NewPCG(cfg.Seed, 0))
	// Its own stream, so adding lanes changes nobody's arrival or kind.
	vips := rand.New(rand.NewPCG(cfg.Seed, 1<<63))
	for i := range n {
		v := &s.run.Visitors[i]
		v.ID, v.PreQueue = i, i < cfg.PreQueue
		if v.PreQueue {
			v.Arrive = -time.Duration(setup.Float64() * float64(cfg.PreQueueSpan))
		} else {
			v.Arrive = time.Duration(setup.Float64() * float64(cfg.ArrivalSpan))
		}
		// Draw the kind in every run so the runs stay in step. The draw's
		// band of width Share picks the strategy (bands 0 to 6); the
		// visitors of each later whole band, all honest, are a control
		// group drawn exactly as a strategy's are (Visitor.Control).
		band := int(setup.Float64() / cfg.Share)
		kind := Kind(min(band+1, int(kinds)))
		if kind == kinds {
			kind = Honest
			if band < controlBands(cfg.Share)+int(kinds-1) {
				v.Control = band - int(kinds-1) + 1
			}
		}
		if kind == active || active == everyStrategy {
			v.Kind = kind
		}
		claims := jwt.MapClaims{"sub": "visitor-" + strconv.Itoa(i), "exp": s.start.Add(simLoginTTL).Unix()}
		if cfg.VIPLane > 0 && vips.Float64() < cfg.VIPVisitors {
			claims["tier"], v.Lane = "vip", "vip"
		}
		login, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(simSecret)
		if err != nil {
			return nil, fmt.Errorf("signing a login: %w", err)
		}
		s.states[i] = state{
			login: "Bearer " + login,
			phase: time.Duration(setup.Float64() * float64(time.Minute)),
			delay: time.Duration(setup.Float64() * float64(cfg.Jitter)),
			net:   rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1)),
		}
		s.queue = append(s.queue, event{at: s.start.Add(v.Arrive), visitor: i})
	}
	heap.Init(&s.queue)
	return s, nil
}

// act is one thing a visitor does at s.now, and schedules the next.
func (s *sale) act(i int) error {
	v, st := &s.run.Visitors[i], &s.states[i]
	if len(st.tokens) == 0 {
		k := 1
		if v.Kind == Tabs || v.Kind == AnonTokens {
			k = s.cfg.Tabs
		}
		for range k {
			h, err := s.token(i, v.Kind != AnonTokens)
			if err != nil {
				return err
			}
			st.tokens = append(st.tokens, h)
			if v.Kind == Replayer {
				st.versions = append(st.versions, h)
			}
		}
		s.schedule(i)
		return nil
	}
	due := func(h held) bool { return !s.now.Before(time.UnixMilli(h.NextAttempt)) }
	var present []int // indexes into st.tokens, or -1-j for st.versions[j]
	switch v.Kind {
	case Replayer:
		for j := range st.versions {
			present = append(present, -1-j)
		}
	case FastRetrier, IgnoreNxt, EarlyHammerer:
		present = []int{0}
	default:
		for j, h := range st.tokens {
			if due(h) {
				present = append(present, j)
			}
		}
	}
	var expired []int // indexes into st.versions of old versions found expired
	for _, j := range present {
		h := st.tokens[max(j, 0)]
		if j < 0 {
			h = st.versions[-1-j]
		}
		if s.cfg.SkipEarlyRepeats && h.Token == st.early && s.now.Before(time.UnixMilli(h.NextAttempt)) {
			// The same early answer, not sent again (SkipEarlyRepeats).
			v.Requests++
			s.run.Requests++
			s.run.Repeats++
			continue
		}
		a, status, err := s.admit(i, h)
		if err != nil {
			return err
		}
		if status == http.StatusTooManyRequests && a.Outcome == "early" && a.Token == h.Token {
			st.early = h.Token
		}
		if status == http.StatusOK || a.Outcome == "busy" {
			v.Counted++
			if v.Kind == LatePresenter {
				v.Late = append(v.Late, max(0, s.now.Sub(st.aimed)))
			}
		}
		switch {
		case status == http.StatusOK:
			v.Done, v.Admitted = true, s.admittedAt(st, h.NextAttempt).Sub(s.start)
			return nil
		case status == http.StatusTooManyRequests && a.Token != "":
			s.noteClaim(v, st, a.Token)
			if a.Outcome == "busy" {
				st.slot, st.slotTold = time.UnixMilli(a.NextAttempt), s.now
			}
			next := held{answer: a, nonce: h.nonce}
			if a.Challenge != h.Challenge || a.Difficulty != h.Difficulty {
				if next.nonce, err = s.solve(v, a.answerChallenge()); err != nil {
					return err
				}
			}
			if j < 0 { // a replayed version: the answer replaces the newest
				j = 0
			}
			if v.Kind == Replayer && a.Token != st.tokens[j].Token && !st.holds(a.Token) {
				st.versions = append(st.versions, next)
			}
			st.tokens[j] = next
		case status == http.StatusConflict:
			// This version's place was used (by another version): only
			// the replayer sees it, and it keeps trying the others.
		case status == http.StatusUnauthorized && a.Error.Code == "token_invalid" && j < 0 && h.Token != st.tokens[0].Token:
			// An old version the replayer kept has expired: not a lost
			// place (it holds a newer one), so it is dropped. Taking a new
			// token for it, as for a lost place, made each expired version
			// a new place at every attempt: past token_ttl the replayer's
			// list, and its requests, grew without bound (the stalled
			// lottery mixed runs).
			expired = append(expired, -1-j)
		case status == http.StatusUnauthorized && a.Error.Code == "token_invalid":
			// An expired token: the place is lost, the page takes a new one.
			v.Expired++
			h, err := s.token(i, v.Kind != AnonTokens)
			if err != nil {
				return err
			}
			st.tokens[max(j, 0)] = h
			if v.Kind == Replayer {
				st.versions = append(st.versions, h)
			}
		default:
			return fmt.Errorf("admit: %d %s", status, a.Error.Code)
		}
	}
	st.versions = dropVersions(st.versions, expired)
	s.schedule(i)
	return nil
}

// dropVersions removes the versions at the indexes drop (ascending) from
// versions.
func dropVersions(versions []held, drop []int) []held {
	if len(drop) == 0 {
		return versions
	}
	kept := versions[:0]
	for k, h := range versions {
		if len(drop) > 0 && drop[0] == k {
			drop = drop[1:]
			continue
		}
		kept = append(kept, h)
	}
	return kept
}

// schedule queues the visitor's next request, as its strategy would. Times
// are arrivals at the gateway. The page aims its request to arrive at nxt
// (it subtracts half the round trip it measured), and no request can leave
// before the answer to the last one came back.
func (s *sale) schedule(i int) {
	v, st := &s.run.Visitors[i], &s.states[i]
	next := time.UnixMilli(st.tokens[0].NextAttempt)
	for _, h := range st.tokens[1:] {
		if t := time.UnixMilli(h.NextAttempt); t.Before(next) {
			next = t
		}
	}
	earliest := s.now.Add(2 * st.delay)
	switch v.Kind {
	case FastRetrier:
		// Fire and forget every 100 ms with the newest token it has.
		next, earliest = s.now.Add(100*time.Millisecond), s.now
	case IgnoreNxt:
		next = s.now.Add(time.Second)
	case EarlyHammerer:
		for _, early := range []time.Duration{time.Second, 300 * time.Millisecond, 0} {
			if t := next.Add(-early); t.After(s.now) {
				next = t
				break
			}
		}
	case LatePresenter:
		st.aimed = next
		if next.Before(earliest) {
			st.aimed = earliest
		}
		// The tab's timer fires on its own minute grid, at the first tick
		// at or after nxt, and the request then travels.
		// (Ceiling division: nxt may lie before the grid's origin, in the
		// pre-queue, and Go's division truncates towards zero, which
		// fired such a timer up to two periods late.)
		origin := s.start.Add(st.phase)
		ticks := ceilDiv(next.Sub(origin), LatePeriod)
		next = origin.Add(ticks*LatePeriod + st.delay)
	}
	if next.Before(earliest) {
		next = earliest
	}
	if !next.After(s.now) {
		next = s.now.Add(time.Millisecond)
	}
	heap.Push(&s.queue, event{at: next.Add(jitter(st.net, s.cfg.Jitter/10)), visitor: i})
}

// ceilDiv is ⌈a/b⌉ for b > 0, negative a included.
func ceilDiv(a, b time.Duration) time.Duration {
	q := a / b
	if a%b > 0 {
		q++
	}
	return q
}

// token asks for a new token, logged in or anonymously, and solves it.
func (s *sale) token(i int, loggedIn bool) (held, error) {
	v, st := &s.run.Visitors[i], &s.states[i]
	s.random.use(i, st.issued)
	st.issued++
	name, value := "", ""
	if loggedIn {
		name, value = "Authorization", st.login
	}
	a, status := s.post(v, &s.client.token, nil, name, value)
	if status != http.StatusOK || a.Token == "" {
		return held{}, fmt.Errorf("token: %d %s", status, a.Error.Code)
	}
	if v.Lot == 0 {
		v.Lot = s.lotteryNumber(a.Token)
	}
	nonce, err := s.solve(v, a.answerChallenge())
	return held{answer: a, nonce: nonce}, err
}

// noteClaim records where a fifo place's claim put it: a place is in the
// pre-queue when it claimed, with its work solved, before the start, not
// when it took its token (docs/FAIRNESS.md, "Queue orders").
func (s *sale) noteClaim(v *Visitor, st *state, token string) {
	if st.claimed || s.cfg.QueueOrder != string(admission.OrderFIFO) {
		return
	}
	var c tokens.WaitClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &c); err != nil || c.Pos == 0 {
		return
	}
	st.claimed, v.PreQueue = true, c.Pos < 0
}

// lotteryNumber is the lottery number of a token's draw, read with the
// simulation's own lottery key; 0 if the token does not decode.
func (s *sale) lotteryNumber(token string) float64 {
	var c tokens.WaitClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &c); err != nil {
		return 0
	}
	key, err := base64.StdEncoding.DecodeString(simKeys(s.cfg.Seed).Lottery)
	if err != nil {
		return 0
	}
	return tokens.LotteryNumber(key, c.Lot)
}

func (s *sale) admit(i int, h held) (answer, int, error) {
	v, st := &s.run.Visitors[i], &s.states[i]
	s.body = admitBody(s.body, h.nonce, h.Token)
	name, value := "", ""
	if v.Kind != AnonTokens {
		name, value = "Authorization", st.login
	}
	a, status := s.post(v, &s.client.admit, s.body, name, value)
	return a, status, nil
}

func (s *sale) post(v *Visitor, tmpl *http.Request, body []byte, name, value string) (answer, int) {
	status, resp := s.client.do(tmpl, body, name, value)
	v.Requests++
	s.run.Requests++
	return decodeAnswer(resp), status
}

type challenge struct {
	ch  string
	dif int
}

func (a answer) answerChallenge() challenge { return challenge{a.Challenge, a.Difficulty} }

func (s *sale) solve(v *Visitor, c challenge) (string, error) {
	nonce, err := tokens.Solve(context.Background(), c.ch, c.dif)
	if err != nil {
		return "", err
	}
	v.Hashes += nonce + 1
	return strconv.FormatUint(nonce, 10), nil
}

func jitter(r *rand.Rand, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(r.Int64N(int64(max)))
}

// streams gives each visitor's n-th token its own random stream, so its
// id, draw and challenge do not depend on what other visitors did before.
type streams struct {
	seed uint64
	cur  *rand.ChaCha8
}

func (s *streams) use(visitor, n int) {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], s.seed)
	binary.LittleEndian.PutUint64(seed[8:], uint64(visitor))
	binary.LittleEndian.PutUint64(seed[16:], uint64(n))
	s.cur = rand.NewChaCha8(seed)
}

func (s *streams) Read(p []byte) (int, error) {
	if s.cur == nil {
		s.use(-1, 0)
	}
	return s.cur.Read(p)
}

func simKeys(seed uint64) tokens.KeysConfig {
	secret := func(label string) string {
		s := sha256.Sum256([]byte(label + strconv.FormatUint(seed, 10)))
		return base64.StdEncoding.EncodeToString(s[:])
	}
	return tokens.KeysConfig{Signing: "sim", Keys: map[string]string{"sim": secret("sign")}, Lottery: secret("lottery")}
}
