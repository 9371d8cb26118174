package gateway

import (
	"container/heap"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fairgate/fairgate/room"
)

// capacityCrowd is a room sized by capacity served through the gateways'
// HTTP handlers, in injected time: a fixed number of visitors always
// waiting (each admission brings a new one), each following the waiting
// answers until admitted, then presenting their pass every 1 to 10 s for
// a stay drawn from stay; a share of them (ended) make their last request
// to a path the origin answers with EndSessionHeader. With nodes above
// one, the gateways share one bolt store and every request goes to one of
// them at random (no affinity); with one, it is a gateway on no store.
type capacityCrowd struct {
	capacity, ceiling float64
	window            time.Duration // active_window
	waiting           int
	stay              func(*rand.Rand) time.Duration
	ended             float64
	nodes             int
	seconds           int
	seed              uint64
}

// crowdSecond is one second of a capacityCrowd run, read after the ticks:
// the true count (the distinct passes presented within the window, not
// ended), each node's site.active, and the visitors waiting.
type crowdSecond struct {
	truth   float64
	nodes   []float64
	rate    float64 // in force at the first node
	waiting int
}

// crowdEvent is a visitor's next request.
type crowdEvent struct {
	at time.Time
	v  *crowdVisitor
}

type crowdEvents []crowdEvent

func (q crowdEvents) Len() int           { return len(q) }
func (q crowdEvents) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q crowdEvents) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *crowdEvents) Push(x any)        { *q = append(*q, x.(crowdEvent)) }
func (q *crowdEvents) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// crowdVisitor is one visitor: waiting with tk until it has a pass, then
// on the site until left, its last request ending the session when ends.
type crowdVisitor struct {
	tk   ticketJSON
	pass string
	left time.Time
	ends bool
	last time.Time // the last presentation answered
	gone bool      // the origin ended the session
}

// crowdRun is a capacityCrowd under way.
type crowdRun struct {
	t        *testing.T
	c        capacityCrowd
	clock    *fakeClock
	handlers []http.Handler
	rooms    []*room.Shared
	tick     func(now time.Time)
	cookie   string
	rng      *rand.Rand
	queue    crowdEvents
	visitors []*crowdVisitor
	waiting  int
	ended    int
}

// crowdEndPath is where the test origin ends the session.
const crowdEndPath = "/logout"

func (c capacityCrowd) config() Config {
	return Config{Config: room.Config{Room: "cap", Capacity: int(c.capacity), Rate: c.ceiling, ActiveWindow: Duration(c.window),
		Difficulty: intp(0), MinBackoff: Duration(time.Second), MaxBackoff: Duration(2 * time.Second)}}
}

// origin answers every request, ending the session on crowdEndPath.
func crowdOrigin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == crowdEndPath {
			w.Header().Set(EndSessionHeader, "1")
		}
		_, _ = w.Write([]byte("origin"))
	})
}

// start builds the gateways and how they tick.
func (c capacityCrowd) start(t *testing.T) *crowdRun {
	t.Helper()
	r := &crowdRun{t: t, c: c, clock: newFakeClock(), rng: rand.New(rand.NewPCG(c.seed, c.seed^0x5eed))}
	cfg := c.config()
	// Token ids come from the seed too, so a run's draws are the seed's.
	random := func(node int) io.Reader {
		var seed [32]byte
		binary.LittleEndian.PutUint64(seed[:], c.seed)
		seed[8] = byte(node)
		return rand.NewChaCha8(seed)
	}
	if c.nodes <= 1 {
		cfg.Keys = testKeys
		sh, err := NewShared(cfg, r.clock.Now)
		if err != nil {
			t.Fatal(err)
		}
		gw, err := New(cfg, sh, Options{Now: r.clock.Now, Registerer: prometheus.NewRegistry(), Random: random(0)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(gw.Close)
		r.handlers, r.rooms, r.cookie = []http.Handler{gw.Wrap(crowdOrigin())}, []*room.Shared{sh}, gw.cookies.pass
		r.tick = func(now time.Time) { r.rooms[0].Tick(now) }
		return r
	}
	store := storeKinds(t)["bolt"](t)
	nodes := make([]node, c.nodes)
	for i := range nodes {
		nodes[i] = newNodeWith(t, cfg, store, fmt.Sprint("node", i), r.clock, Options{Random: random(i)})
	}
	for _, n := range nodes {
		r.handlers, r.rooms = append(r.handlers, n.gw.Wrap(crowdOrigin())), append(r.rooms, n.sh)
		r.cookie = n.gw.cookies.pass
	}
	// The nodes tick at once, as they do on their own clocks: their
	// store writes share the bolt file's group commits.
	r.tick = func(now time.Time) {
		errs := make([]error, len(nodes))
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Go(func() {
				if errs[i] = n.sh.Poll(t.Context(), now); errs[i] == nil {
					errs[i] = n.sh.ClusterTick(t.Context(), now)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// do serves one request at a random node at the clock's now.
func (r *crowdRun) do(method, path, body, pass string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if pass != "" {
		req.AddCookie(&http.Cookie{Name: r.cookie, Value: pass})
	}
	rec := httptest.NewRecorder()
	r.handlers[r.rng.IntN(len(r.handlers))].ServeHTTP(rec, req)
	return rec
}

// arrive is a new visitor taking a token at now.
func (r *crowdRun) arrive(now time.Time) {
	v := &crowdVisitor{}
	rec := r.do(http.MethodPost, "/_fairgate/token", "", "")
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &v.tk) != nil || v.tk.Token == "" {
		r.t.Fatalf("token: %d %s", rec.Code, rec.Body)
	}
	r.visitors = append(r.visitors, v)
	r.waiting++
	heap.Push(&r.queue, crowdEvent{at: r.nextAttempt(v.tk, now), v: v})
}

func (r *crowdRun) nextAttempt(tk ticketJSON, now time.Time) time.Time {
	if tk.NextAttempt != 0 {
		return time.UnixMilli(tk.NextAttempt)
	}
	return now.Add(time.Duration(max(tk.RetryAfter, 1) * float64(time.Second)))
}

// step serves a visitor's request due at now.
func (r *crowdRun) step(v *crowdVisitor, now time.Time) {
	if v.pass == "" {
		r.attempt(v, now)
		return
	}
	path := "/shop"
	last := !now.Before(v.left)
	if last && v.ends {
		path = crowdEndPath
	}
	rec := r.do(http.MethodGet, path, "", v.pass)
	if rec.Code != http.StatusOK || rec.Body.String() != "origin" {
		r.t.Fatalf("a pass presented at %s: %d %s, want the origin", path, rec.Code, rec.Body)
	}
	v.last = now
	for _, c := range rec.Result().Cookies() {
		if c.Name == r.cookie && c.Value != "" {
			v.pass = c.Value // renewed
		}
	}
	if path == crowdEndPath {
		if rec.Header().Get(EndSessionHeader) != "" {
			r.t.Fatalf("the visitor saw %s", EndSessionHeader)
		}
		v.gone = true
		r.ended++
	}
	if last {
		return
	}
	next := now.Add(time.Second + time.Duration(r.rng.Float64()*float64(9*time.Second)))
	if next.After(v.left) {
		next = v.left
	}
	heap.Push(&r.queue, crowdEvent{at: next, v: v})
}

// attempt posts a waiting visitor's admission: admitted, it is on the site
// and a new visitor comes to wait; told to wait, it follows the answer.
func (r *crowdRun) attempt(v *crowdVisitor, now time.Time) {
	body := fmt.Sprintf(`{"token":%q,"nonce":"0"}`, v.tk.Token)
	rec := r.do(http.MethodPost, "/_fairgate/admit", body, "")
	switch rec.Code {
	case http.StatusOK:
		var a admitResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || a.Pass == "" {
			r.t.Fatalf("admit: %s (%v)", rec.Body, err)
		}
		r.waiting--
		v.pass, v.last = a.Pass, now // the admission counts as a presentation
		v.left, v.ends = now.Add(r.c.stay(r.rng)), r.rng.Float64() < r.c.ended
		heap.Push(&r.queue, crowdEvent{at: now.Add(time.Second), v: v})
		r.arrive(now)
	case http.StatusTooManyRequests:
		var next ticketJSON
		if err := json.Unmarshal(rec.Body.Bytes(), &next); err != nil {
			r.t.Fatal(err)
		}
		if next.Token != "" {
			v.tk = next
		}
		heap.Push(&r.queue, crowdEvent{at: r.nextAttempt(next, now).Add(time.Millisecond), v: v})
	default:
		r.t.Fatalf("admit: %d %s", rec.Code, rec.Body)
	}
}

// truth is the distinct passes presented within the window at now and
// not ended, as ActiveSet counts them.
func (r *crowdRun) truth(now time.Time) float64 {
	n := 0.0
	for _, v := range r.visitors {
		if v.pass != "" && !v.gone && v.last.After(now.Add(-r.c.window)) {
			n++
		}
	}
	return n
}

// run plays the crowd for c.seconds and returns each second's reading.
func (c capacityCrowd) run(t *testing.T) (seconds []crowdSecond, ended int) {
	t.Helper()
	r := c.start(t)
	start := r.clock.Now()
	for range c.waiting {
		r.arrive(start)
	}
	for s := range c.seconds {
		now := start.Add(time.Duration(s) * time.Second)
		r.clock.Set(now)
		r.tick(now)
		sec := crowdSecond{truth: r.truth(now), waiting: r.waiting}
		for i, sh := range r.rooms {
			st := sh.Status(now).Site
			sec.nodes = append(sec.nodes, st.Active)
			if i == 0 {
				sec.rate = st.Rate
			}
		}
		seconds = append(seconds, sec)
		end := now.Add(time.Second)
		for r.queue.Len() > 0 && r.queue[0].at.Before(end) {
			ev := heap.Pop(&r.queue).(crowdEvent)
			r.clock.Set(ev.at)
			r.step(ev.v, r.clock.Now())
		}
	}
	return seconds, r.ended
}

// TestCapacityCrowdThroughTheGateway: visitors whose stays are drawn from
// short, long and bimodal distributions wait, are admitted and present
// their passes through the gateways' handlers, with the queue never empty;
// once the site has filled, every 10 s window's mean of the visitors on
// it (the true count, and site.active as every node reports it) stays
// within ±5% of the capacity, and no second's count rises above +5%. Also
// with 40% of the sessions ended by the origin, and on three nodes on one
// store that each request reaches at random.
func TestCapacityCrowdThroughTheGateway(t *testing.T) {
	expStay := func(mean time.Duration) func(*rand.Rand) time.Duration {
		return func(r *rand.Rand) time.Duration { return time.Duration(r.ExpFloat64() * float64(mean)) }
	}
	short, long := expStay(30*time.Second), expStay(10*time.Minute)
	bimodal := func(r *rand.Rand) time.Duration {
		if r.Float64() < 0.7 {
			return expStay(20 * time.Second)(r)
		}
		return expStay(5 * time.Minute)(r)
	}
	// floor is the lowest 10 s mean a case holds, as a share of the
	// capacity, and fillBy how soon the site first reaches it: 95% and
	// twice the time the ceiling takes to fill the site, except where the
	// gateway falls short (docs/SCALING.md, "Active visitors").
	tests := []struct {
		name   string
		stay   func(*rand.Rand) time.Duration
		ended  float64
		nodes  int
		floor  float64
		fillBy int
	}{
		{"short stays", short, 0, 1, 0.95, 40},
		{"long stays", long, 0, 1, 0.95, 40},
		{"bimodal stays", bimodal, 0, 1, 0.95, 40},
		// An ended session is refilled from the next tick over the
		// lookahead, by visitors who come back every 1 to 2 s: with short
		// stays that hole is a few percent of the site.
		{"bimodal stays, 40% ended", bimodal, 0.4, 1, 0.90, 40},
		{"short stays, 40% ended", short, 0.4, 1, 0.90, 40},
		// Without affinity a visitor's attempts reach nodes whose bucket
		// holds no slot for them: the room admits below the rate it sets
		// and the site sits under its capacity.
		{"bimodal stays, 40% ended, two nodes without affinity", bimodal, 0.4, 2, 0.80, 90},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			play := func(t *testing.T, seed uint64) {
				c := capacityCrowd{capacity: 200, ceiling: 10, window: 30 * time.Second, waiting: 30,
					stay: tt.stay, ended: tt.ended, nodes: tt.nodes, seconds: 120, seed: seed}
				seconds, ended := c.run(t)
				if tt.ended > 0 && ended == 0 {
					t.Fatal("the origin ended no session")
				}
				checkCrowdHoldsCapacity(t, c, seconds, tt.floor, tt.fillBy)
				t.Logf("%d sessions ended", ended)
			}
			if *crowdSeeds <= 0 {
				play(t, uint64(i+1))
				return
			}
			for seed := range uint64(*crowdSeeds) {
				t.Run(fmt.Sprint("seed_", seed+1), func(t *testing.T) { play(t, seed+1) })
			}
		})
	}
}

// crowdSeeds plays each case of TestCapacityCrowdThroughTheGateway as
// that many crowds, seeds 1 to N, instead of its own one: how often a
// crowd's draws take it below its floor (docs/SCALING.md, "Refilling
// after the site was full").
var crowdSeeds = flag.Int("crowd.seeds", 0, "play each capacity crowd case with seeds 1 to N")

// checkCrowdHoldsCapacity judges a run from the first second the true
// count reaches floor times the capacity, which must come by second
// fillBy: from then on nobody waiting fails, as does a 10 s window whose
// mean is below floor or above +5%, or a second above +5%, of the true
// count or of any node's site.active.
func checkCrowdHoldsCapacity(t *testing.T, c capacityCrowd, seconds []crowdSecond, floor float64, fillBy int) {
	t.Helper()
	defer func() {
		if !t.Failed() {
			return
		}
		var b strings.Builder
		for _, sec := range seconds {
			fmt.Fprintf(&b, " %.0f/%.0f/%.2f", sec.truth, sec.nodes[0], sec.rate)
		}
		t.Logf("by second, the true count/the first node's site.active/its rate in force:%s", b.String())
	}()
	full := -1
	for s, sec := range seconds {
		if sec.truth >= floor*c.capacity {
			full = s
			break
		}
	}
	if full < 0 || full > fillBy {
		t.Fatalf("the site reached %.0f%% of its capacity at second %d, want by %d", 100*floor, full, fillBy)
	}
	if len(seconds)-full < 60 {
		t.Fatalf("only %d seconds judged after the site filled at %d", len(seconds)-full, full)
	}
	series := func(sec crowdSecond) []float64 { return append([]float64{sec.truth}, sec.nodes...) }
	names := []string{"true count"}
	for i := range seconds[0].nodes {
		names = append(names, fmt.Sprintf("node %d's site.active", i))
	}
	lo, hi, top := make([]float64, len(names)), make([]float64, len(names)), make([]float64, len(names))
	ceilingBound := 0
	for i := range names {
		lo[i], hi[i] = math.Inf(1), math.Inf(-1)
	}
	for s := full; s < len(seconds); s++ {
		if seconds[s].waiting == 0 {
			t.Fatalf("second %d: nobody waiting", s)
		}
		for i, v := range series(seconds[s]) {
			top[i] = math.Max(top[i], v)
			if v > 1.05*c.capacity {
				t.Errorf("second %d: %s %v, above the capacity %v +5%%", s, names[i], v, c.capacity)
			}
		}
		if s+10 > len(seconds) {
			continue
		}
		means := make([]float64, len(names))
		// A window in which the room admitted at its ceiling shows the
		// operator's limit, not the room's: departures that outrun the
		// ceiling (short stays, sessions ended) leave the site under its
		// capacity however the rate is set. Only its top is judged.
		atCeiling := false
		for _, sec := range seconds[s : s+10] {
			atCeiling = atCeiling || sec.rate >= c.ceiling
			for i, v := range series(sec) {
				means[i] += v / 10
			}
		}
		if atCeiling {
			ceilingBound++
		}
		for i, m := range means {
			if !atCeiling {
				lo[i] = math.Min(lo[i], m)
			}
			hi[i] = math.Max(hi[i], m)
		}
	}
	if ceilingBound > 0 {
		t.Logf("%d of the 10 s windows had the room at its ceiling (%.0f/s): their floor not judged", ceilingBound, c.ceiling)
	}
	for i, name := range names {
		t.Logf("%s: from second %d, 10 s means %.1f to %.1f, highest second %.0f (capacity %.0f)",
			name, full, lo[i], hi[i], top[i], c.capacity)
		if lo[i] < floor*c.capacity || hi[i] > 1.05*c.capacity {
			t.Errorf("%s: 10 s means from %.1f to %.1f, want %.0f%% to 105%% of %.0f", name, lo[i], hi[i], 100*floor, c.capacity)
		}
	}
}
