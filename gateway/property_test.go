package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/room"
)

// The property test of the published invariants (docs/FAIRNESS.md, "The
// invariants"): random crowds with a random strategy per login, through
// the gateway's HTTP handler with the injected clock, checked against a
// model written from the document alone. The model never asks the
// admission package what a place deserves: it computes each draw v from
// the room's lottery key as "The rule" defines it, a place's key from its
// entry and draw (lottery: srv − ln(1 − v); fifo: v·P in the pre-queue,
// rank + L·(−ln(1 − v)) after the start), and reads only the room's clock,
// an input of the rule.
//
// What it checks, in both queue orders: one pass per login and every slot
// kept; no place admitted more than the network's spread before the clock
// reached its key; nobody gains by a strategy against its twin in a world
// with the same arrivals and draws (checkPropertyWorld); in the honest
// world, slots go in the order places are found eligible; in fifo, the
// pre-queue goes first and in the order of its draws, up to
// fifoPreQueueSlack.
//
// FAIRGATE_PROPERTY_SEEDS=n runs n seeds per order instead of
// propertySeeds: a longer search, about 2 s a seed under -race.

const (
	// propertySeeds is how many random worlds each order runs by default.
	propertySeeds = 3
	// propertyRate is the rooms' admissions a second: the bucket binds.
	propertyRate = 2
	// propertyStep is the time between two rounds of requests.
	propertyStep = 100 * time.Millisecond
	// propertyStart is when the sale starts after the first arrival window
	// opens: arrivals before it are the pre-queue.
	propertyStart = 10 * time.Second
	// propertyArrivals is the window visitors arrive in.
	propertyArrivals = 30 * time.Second
	// propertyHorizon bounds a world: every login is in long before.
	propertyHorizon = 4 * time.Minute

	// networkSpread is the invariant's tolerance: two tokens of one draw
	// are admitted together up to the network's spread.
	networkSpread = time.Second
	// rateStep is the granularity of admissions: one slot of the bucket.
	rateStep = time.Second / propertyRate
	// fifoPreQueueSlack is how far the fifo pre-queue is served out of
	// the order the invariant gives it, and what that lets places behind
	// it gain: the counter passes the pre-queue's keys at once at the
	// start, and the places found eligible at one moment are served in the
	// order they present within the pacer's slack (2 s, not re-timed to
	// that moment), which for honest pages is the order of the nxt each
	// was told at its claim, not of their draws. The invariant allows one
	// slot (rateStep); tighten this to zero once the pre-queue is served
	// in the order of its draws.
	fifoPreQueueSlack = 2 * time.Second
	// pacerBurstTime is how far the pacer may re-space an on-time slot
	// holder after a late one took its turn on credit ("Slots and rate
	// changes"): a later slot within it is not a lost slot.
	pacerBurstTime = 2 * time.Second
)

// propStrategy is how one login waits: its tabs, and which versions each
// tab presents at a moment. vacates says it may leave its slot unused for
// a while (it presents late): the places behind it may then go in earlier
// than in the honest world, one slot each, and the slot is reclaimed.
type propStrategy struct {
	name    string
	tabs    int
	vacates bool
	present func(p *propVisitor, now time.Time, versions []ticketJSON) []ticketJSON
}

func honestStrategy() propStrategy {
	return propStrategy{name: "honest", tabs: 1, present: func(_ *propVisitor, now time.Time, vs []ticketJSON) []ticketJSON {
		return honestPage(now, vs)
	}}
}

// randomStrategy is one of the strategies of the strategy world, its
// parameters drawn from r.
func randomStrategy(r *rand.Rand, start time.Time) propStrategy {
	switch r.IntN(8) {
	case 0:
		return honestStrategy()
	case 1:
		return propStrategy{name: "polls every 100 ms", tabs: 1, present: func(_ *propVisitor, _ time.Time, vs []ticketJSON) []ticketJSON {
			return vs[len(vs)-1:]
		}}
	case 2:
		return propStrategy{name: "replays old versions every 500 ms", tabs: 1, present: func(p *propVisitor, now time.Time, vs []ticketJSON) []ticketJSON {
			if now.UnixMilli()%500 != 0 {
				return honestPage(now, vs)
			}
			return []ticketJSON{vs[0], vs[p.rand.IntN(len(vs))], vs[len(vs)-1]}
		}}
	case 3:
		late := time.Duration(3+r.IntN(18)) * time.Second
		return propStrategy{name: "presents " + late.String() + " late", tabs: 1, vacates: true, present: func(_ *propVisitor, now time.Time, vs []ticketJSON) []ticketJSON {
			return honestPage(now.Add(-late), vs)
		}}
	case 4:
		return propStrategy{name: "asks at a random moment within 2 s of nxt", tabs: 1, vacates: true, present: func(p *propVisitor, now time.Time, vs []ticketJSON) []ticketJSON {
			for len(p.jitter) < len(vs) {
				p.jitter = append(p.jitter, time.Duration(p.rand.IntN(21))*propertyStep)
			}
			return honestPage(now.Add(-p.jitter[len(vs)-1]), vs)
		}}
	case 5:
		every := time.Duration(10+r.IntN(21)) * time.Second
		phase := time.Duration(r.IntN(int(every/propertyStep))) * propertyStep
		return propStrategy{name: "polls every " + every.String(), tabs: 1, vacates: true, present: func(_ *propVisitor, now time.Time, vs []ticketJSON) []ticketJSON {
			if now.Sub(start.Add(phase))%every != 0 {
				return nil
			}
			return honestPage(now, vs)
		}}
	case 6:
		return propStrategy{name: "three tabs", tabs: 3, present: func(_ *propVisitor, now time.Time, vs []ticketJSON) []ticketJSON {
			return honestPage(now, vs)
		}}
	default:
		// Takes its token at arrival (before the start, if it came then)
		// and presents nothing until well after the start.
		claim := start.Add(time.Duration(2+r.IntN(19)) * time.Second)
		return propStrategy{name: "claims after " + claim.Sub(start).String() + " from the start", tabs: 1, vacates: true, present: func(_ *propVisitor, now time.Time, vs []ticketJSON) []ticketJSON {
			if now.Before(claim) {
				return nil
			}
			return honestPage(now, vs)
		}}
	}
}

// propVisitor is one login in one world.
type propVisitor struct {
	strategy propStrategy
	login    string
	opens    time.Time // the sale start, which messages count from
	arrive   time.Time
	rand     *rand.Rand
	jitter   []time.Duration
	tabs     [][]ticketJSON // every version each tab holds, oldest first
	done     []bool         // each tab was admitted
	in       time.Time      // the login's first admission
	passes   map[string]bool
	slot     time.Time // the slot held (busy), zero if none
	lost     []string  // slots given and not kept
	entry    propEntry
}

// propEntry is what a place's tokens carry about its entry.
type propEntry struct {
	lot string
	srv float64
	pos int64   // fifo: rank + 1, negated in the pre-queue; 0 until claimed
	lk  float64 // fifo: luck span in ranks
}

// propWorld is one run: its visitors and the room's clock.
type propWorld struct {
	opens    time.Time
	visitors []*propVisitor
	clock    []clockReading
	rankZero float64
	rankBase int64
	preQueue float64
}

type clockReading struct {
	at time.Time
	s  float64
}

// propertyRoom is the room of every world: scheduled to start
// propertyStart after the clock's start, admitting propertyRate a second
// with a burst of one, logins required.
func propertyRoom(t *testing.T, order string) *env {
	cfg := Config{
		Config: room.Config{Room: "sale", State: "scheduled", QueueOrder: order, Rate: propertyRate, Burst: 1, SaleStart: newFakeClock().Now().Add(propertyStart).Format(time.RFC3339)},
		Identity: &Identity{Header: "Authorization", Algorithm: "HS256",
			Key: base64.StdEncoding.EncodeToString(laneLoginSecret), Required: true},
	}
	switch order {
	case "lottery":
		// A clock independent of who presents: a place's eligibility is
		// the same moment in both worlds.
		cfg.Tau, cfg.FixedSpeed = Duration(10*time.Second), true
	case "fifo":
		cfg.LuckWindow = Duration(time.Second)
	}
	return newEnv(t, cfg, nil)
}

// runPropertyWorld runs one world: visitor i arrives arrivals[i] after the
// clock's start and waits as strategies[i] says.
func runPropertyWorld(t *testing.T, seed uint64, order string, arrivals []time.Duration, strategies []propStrategy) propWorld {
	t.Helper()
	e := propertyRoom(t, order)
	begin := e.clock.Now()
	w := propWorld{opens: begin.Add(propertyStart)}
	for i, st := range strategies {
		w.visitors = append(w.visitors, &propVisitor{strategy: st, opens: w.opens, arrive: begin.Add(arrivals[i]),
			login:  laneLogin(t, e, fmt.Sprint("fan-", i), nil),
			rand:   rand.New(rand.NewPCG(seed, uint64(i))),
			passes: map[string]bool{}})
	}
	for now := begin; now.Before(begin.Add(propertyHorizon)); now = now.Add(propertyStep) {
		e.clock.Set(now)
		if now.Sub(begin)%time.Second == 0 {
			e.gw.Room().Tick(now)
		}
		w.clock = append(w.clock, clockReading{at: now, s: e.gw.Room().Room.View(now).Clock.At(now)})
		waiting := 0
		for _, p := range w.visitors {
			if now.Before(p.arrive) {
				waiting++
				continue
			}
			if p.tabs == nil {
				p.takeTokens(e)
			}
			for i := range p.tabs {
				if !p.done[i] {
					p.presentTab(e, i, now)
				}
				if !p.done[i] {
					waiting++
				}
			}
		}
		if waiting == 0 {
			break
		}
	}
	v := e.gw.Room().Room.View(e.clock.Now())
	w.rankZero, w.rankBase, w.preQueue = v.RankZero, v.RankBase, v.PreQueue
	return w
}

// takeTokens opens the login's tabs, each taking a token.
func (p *propVisitor) takeTokens(e *env) {
	e.t.Helper()
	for range p.strategy.tabs {
		tk := e.laneTicket(p.login)
		p.tabs = append(p.tabs, []ticketJSON{tk})
		p.done = append(p.done, false)
		p.note(e, tk)
	}
}

// note reads a token's entry: the earliest srv of the place, and its rank
// once claimed.
func (p *propVisitor) note(e *env, tk ticketJSON) {
	e.t.Helper()
	c := e.claims(tk.Token)
	if p.entry.lot == "" || c.Srv < p.entry.srv {
		p.entry.srv = c.Srv
	}
	if p.entry.lot != "" && c.Lot != p.entry.lot {
		e.t.Fatalf("one login holds two draws: %s and %s", p.entry.lot, c.Lot)
	}
	p.entry.lot = c.Lot
	if c.Pos != 0 && p.entry.pos == 0 {
		p.entry.pos, p.entry.lk = c.Pos, c.Lk
	}
}

// presentTab presents what the strategy says tab i presents now and reads
// the answers, checking that a slot once given is kept.
func (p *propVisitor) presentTab(e *env, i int, now time.Time) {
	e.t.Helper()
	for _, tk := range p.strategy.present(p, now, p.tabs[i]) {
		status, body := serveAttempt(e, tk, p.login)
		switch status {
		case http.StatusOK:
			var a admitResponse
			if err := json.Unmarshal(body, &a); err != nil {
				e.t.Fatal(err)
			}
			pc, err := e.gw.door.VerifyPass(a.Pass, now)
			if err != nil {
				e.t.Fatal(err)
			}
			p.passes[pc.ID] = true
			p.done[i] = true
			if p.in.IsZero() {
				p.in = now
			}
			return
		case http.StatusTooManyRequests:
			var back ticketJSON
			if err := json.Unmarshal(body, &back); err != nil {
				e.t.Fatal(err)
			}
			p.answered(now, back)
			vs := p.tabs[i]
			if back.Token != "" && back.Token != vs[len(vs)-1].Token {
				p.tabs[i] = append(vs, back)
				p.note(e, back)
			}
		default:
			e.t.Fatalf("%s at %v: %d %s", p.login, now, status, body)
		}
	}
}

// serveAttempt is e.attempt through the gateway's handler in process,
// without a connection: the property's crowds poll ten times a second.
func serveAttempt(e *env, tk ticketJSON, login string) (int, []byte) {
	e.t.Helper()
	body := fmt.Sprintf(`{"token":%q,"nonce":%q}`, tk.Token, solveFor(e.t, tk))
	req := httptest.NewRequest(http.MethodPost, "/_fairgate/admit", strings.NewReader(body))
	req.Header.Set("Authorization", login)
	rec := httptest.NewRecorder()
	e.srv.Config.Handler.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// answered checks a waiting answer against the slot the place holds: once
// given a slot, a place is never told to wait again, nor given a slot
// later than the pacer may re-space it.
func (p *propVisitor) answered(now time.Time, back ticketJSON) {
	nxt := time.UnixMilli(back.NextAttempt)
	switch {
	case back.Outcome == "busy" && p.slot.IsZero():
		p.slot = nxt
	case back.Outcome == "busy" && nxt.After(p.slot.Add(pacerBurstTime)):
		p.lost = append(p.lost, fmt.Sprintf("at %v: slot %v moved to %v", now.Sub(p.opens), p.slot.Sub(p.opens), nxt.Sub(p.opens)))
		p.slot = nxt
	case back.Outcome == "wait" && !p.slot.IsZero():
		p.lost = append(p.lost, fmt.Sprintf("at %v: slot %v, then told to wait", now.Sub(p.opens), p.slot.Sub(p.opens)))
	}
}

// lotteryNumber is v of docs/FAIRNESS.md, "The rule": HMAC-SHA256 of the
// ticket under the room's lottery key, its first 8 bytes big-endian over
// 2^64.
func lotteryNumber(t *testing.T, lot string) float64 {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(testKeys.Lottery)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(lot))
	return float64(binary.BigEndian.Uint64(mac.Sum(nil)[:8])) / (1 << 64)
}

// exponential is −ln(1 − v), the draw's threshold.
func exponential(v float64) float64 { return -math.Log1p(-v) }

// modelKey is the serving-clock distance a place waits in the model: in
// lottery its key srv − ln(1 − v) (the clock reading it is eligible at);
// in fifo rank + L·(−ln(1 − v)) from the rank origin, or v·P in the
// pre-queue of P places.
func (w propWorld) modelKey(t *testing.T, order string, en propEntry) float64 {
	v := lotteryNumber(t, en.lot)
	switch {
	case order == "lottery":
		return en.srv + exponential(v)
	case en.pos < 0:
		return v * w.preQueue
	default:
		return float64(en.pos-1-w.rankBase) + en.lk*exponential(v)
	}
}

// eligible is the first moment the room's clock reached key (fifo: from
// the rank origin), or the far future if it never did.
func (w propWorld) eligible(order string, key float64) time.Time {
	if order == "fifo" {
		key += w.rankZero
	}
	for _, r := range w.clock {
		if r.s >= key {
			return r.at
		}
	}
	return time.Unix(math.MaxInt32, 0)
}

// spacing bounds the time between a draw's checkpoints at at: the rooms'
// min_backoff at the start, growing by a tenth of the time since it, to at
// most max_backoff (the defaults).
func (w propWorld) spacing(at time.Time) time.Duration {
	p := admission.DefaultPolicy
	return min(p.MinBackoff+time.Duration(p.BackoffShare*float64(at.Sub(w.opens))), p.MaxBackoff)
}

func propertySeedCount(t *testing.T) int {
	s := os.Getenv("FAIRGATE_PROPERTY_SEEDS")
	if s == "" {
		return propertySeeds
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("FAIRGATE_PROPERTY_SEEDS=%q: want a positive count", s)
	}
	return n
}

// TestPropertyStrategiesGainNothing: random crowds (20 to 40 logins
// arriving over 30 s around a sale start at 10 s, 2 admissions a second)
// in both queue orders, each run honest and with a random strategy per
// login; the invariants hold against the model.
func TestPropertyStrategiesGainNothing(t *testing.T) {
	for _, order := range []string{"lottery", "fifo"} {
		for seed := range uint64(propertySeedCount(t)) {
			t.Run(fmt.Sprintf("%s/seed=%d", order, seed), func(t *testing.T) {
				t.Parallel()
				checkPropertyWorld(t, order, seed)
			})
		}
	}
}

// checkPropertyWorld draws a world from seed and runs it three times with
// the same arrivals and draws: every login honest (h); the logins whose
// strategy presents late with it, the rest honest (l); every login with
// its strategy (s). l and s differ only in strategies that ask more, or
// from more tabs, than the page: nobody may gain by them. h and l differ by
// lateness, which frees slots for the places behind until they come back.
// Each failure names the seed.
func checkPropertyWorld(t *testing.T, order string, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	n := 20 + r.IntN(21)
	arrivals := make([]time.Duration, n)
	honest, late, strategic := make([]propStrategy, n), make([]propStrategy, n), make([]propStrategy, n)
	start := newFakeClock().Now().Add(propertyStart)
	for i := range n {
		arrivals[i] = time.Duration(r.Int64N(int64(propertyArrivals/propertyStep))) * propertyStep
		honest[i], strategic[i] = honestStrategy(), randomStrategy(r, start)
		late[i] = honest[i]
		if strategic[i].vacates {
			late[i] = strategic[i]
		}
	}
	h := runPropertyWorld(t, seed, order, arrivals, honest)
	l := runPropertyWorld(t, seed, order, arrivals, late)
	s := runPropertyWorld(t, seed, order, arrivals, strategic)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("seed %d, %s, %d logins: %s", seed, order, n, fmt.Sprintf(format, args...))
	}
	for _, w := range []propWorld{h, l, s} {
		checkOnePassKeptSlots(w, fail)
		checkNotBeforeKey(t, order, w, fail)
		if order == "fifo" {
			checkPreQueueFirst(w, fail)
			checkPreQueueDraws(t, w, fail)
		}
	}
	checkTwins("asking more than the page", l, s, 0, 0, fail)
	lateSlack := time.Duration(0)
	if order == "fifo" {
		lateSlack = fifoPreQueueSlack // a late place leaving the pre-queue reorders it
	}
	checkTwins("presenting late", h, l, rateStep, lateSlack, fail)
	checkHonestOrder(t, order, h, fail)
	if t.Failed() {
		logWorlds(t, order, h, s)
	}
}

type failer func(format string, args ...any)

// checkOnePassKeptSlots: every login is admitted with one pass, and keeps
// every slot it was given.
func checkOnePassKeptSlots(w propWorld, fail failer) {
	for i, p := range w.visitors {
		if p.in.IsZero() {
			fail("login %d (%s) never got in", i, p.strategy.name)
			continue
		}
		if len(p.passes) != 1 {
			fail("login %d (%s, %d tabs) got %d passes, want 1", i, p.strategy.name, len(p.tabs), len(p.passes))
		}
		for _, l := range p.lost {
			fail("login %d (%s) lost its slot %s", i, p.strategy.name, l)
		}
	}
}

// checkNotBeforeKey: no place is admitted more than the network's spread
// before the room's clock reached its key, whatever it presents.
func checkNotBeforeKey(t *testing.T, order string, w propWorld, fail failer) {
	for i, p := range w.visitors {
		if p.in.IsZero() {
			continue
		}
		due := w.eligible(order, w.modelKey(t, order, p.entry))
		if p.in.Before(due.Add(-networkSpread)) {
			fail("login %d (%s) admitted at %v, %v before the clock reached its key", i, p.strategy.name, p.in.Sub(w.opens), due.Sub(p.in))
		}
	}
}

// checkTwins: no login is admitted more than the network's spread before
// itself in world h, beyond perVacated for each login that vacated its
// slot (presented late) in s and was admitted after it there.
func checkTwins(worlds string, h, s propWorld, perVacated, slack time.Duration, fail failer) {
	for i, p := range s.visitors {
		twin := h.visitors[i]
		if p.in.IsZero() || twin.in.IsZero() {
			continue
		}
		vacated := 0
		for j, q := range s.visitors {
			if j != i && q.strategy.vacates && !h.visitors[j].in.After(twin.in) && q.in.After(p.in) {
				vacated++
			}
		}
		allowed := networkSpread + time.Duration(vacated)*perVacated + slack
		if gain := twin.in.Sub(p.in); gain > allowed {
			fail("%s: login %d (%s) admitted %v before its twin (at %v), %d slots vacated ahead of it", worlds, i, p.strategy.name, gain, twin.in.Sub(h.opens), vacated)
		}
	}
}

// checkHonestOrder: in the honest world, a place found eligible before
// another's key was even reached (at its first checkpoint after its key,
// the first one a min_backoff after its token at the earliest) is not
// admitted after it beyond one slot: slots go in the order places are
// found eligible.
func checkHonestOrder(t *testing.T, order string, w propWorld, fail failer) {
	due, found := make([]time.Time, len(w.visitors)), make([]time.Time, len(w.visitors))
	for i, p := range w.visitors {
		due[i] = w.eligible(order, w.modelKey(t, order, p.entry))
		from := maxTime(due[i], p.arrive.Add(admission.DefaultPolicy.MinBackoff))
		found[i] = from.Add(w.spacing(from))
	}
	for i, a := range w.visitors {
		for j, b := range w.visitors {
			if found[i].Before(due[j]) && a.in.After(b.in.Add(rateStep)) {
				fail("honest login %d (key reached at %v) admitted at %v, %v after login %d (key reached at %v)",
					i, due[i].Sub(w.opens), a.in.Sub(w.opens), a.in.Sub(b.in), j, due[j].Sub(w.opens))
			}
		}
	}
}

// checkPreQueueFirst (fifo): a place claimed before the start and waiting
// as the page says goes in before every place claimed after the start,
// beyond one slot and the asking slack.
func checkPreQueueFirst(w propWorld, fail failer) {
	for i, a := range w.visitors {
		if a.entry.pos >= 0 || a.strategy.vacates {
			continue
		}
		for j, b := range w.visitors {
			if b.entry.pos > 0 && a.in.After(b.in.Add(rateStep+fifoPreQueueSlack)) {
				fail("pre-queue login %d (%s) admitted at %v, %v after login %d (%s) claimed after the start (rank %d)",
					i, a.strategy.name, a.in.Sub(w.opens), a.in.Sub(b.in), j, b.strategy.name, b.entry.pos-1)
			}
		}
	}
}

// logWorlds lays out both worlds, visitor by visitor, for a failure.
func logWorlds(t *testing.T, order string, h, s propWorld) {
	t.Helper()
	for i, p := range s.visitors {
		hp := h.visitors[i]
		t.Logf("%2d arrive %6v v %.3f | honest pos %3d key %7.3f due %7v in %7v | %-40s pos %3d key %7.3f due %7v in %7v",
			i, p.arrive.Sub(s.opens), lotteryNumber(t, p.entry.lot),
			hp.entry.pos, h.modelKey(t, order, hp.entry), h.eligible(order, h.modelKey(t, order, hp.entry)).Sub(h.opens), hp.in.Sub(h.opens),
			p.strategy.name, p.entry.pos, s.modelKey(t, order, p.entry), s.eligible(order, s.modelKey(t, order, p.entry)).Sub(s.opens), p.in.Sub(s.opens))
	}
}

// checkPreQueueDraws (fifo): the pre-queue is served in the order of its
// draws. A pre-queue place presenting on time is not admitted after a
// pre-queue place of a higher draw beyond one slot.
func checkPreQueueDraws(t *testing.T, w propWorld, fail failer) {
	for i, a := range w.visitors {
		if a.entry.pos >= 0 || a.strategy.vacates {
			continue
		}
		va := lotteryNumber(t, a.entry.lot)
		for j, b := range w.visitors {
			if b.entry.pos >= 0 || lotteryNumber(t, b.entry.lot) <= va {
				continue
			}
			if a.in.After(b.in.Add(rateStep + fifoPreQueueSlack)) {
				fail("pre-queue login %d (%s, draw %.3f) admitted at %v, %v after login %d (%s, draw %.3f)",
					i, a.strategy.name, va, a.in.Sub(w.opens), a.in.Sub(b.in), j, b.strategy.name, lotteryNumber(t, b.entry.lot))
			}
		}
	}
}
