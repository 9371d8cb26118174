package gateway

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/room"
)

// TestCapacityRateFollowsTheVisitorsOnTheSite admits visitors into a room
// sized by capacity, has them present their passes and then stop, and
// checks the rate the room admits at after each tick: the gap to the
// capacity spread over the controller's settle time while there is room,
// the floor while the site is full, the departures as they come due, and a
// session the origin ends refilled as a departure due at once.
func TestCapacityRateFollowsTheVisitorsOnTheSite(t *testing.T) {
	const capacity, ceiling, window = 3, 5.0, 30 * time.Second
	o := &origin{}
	site := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/logout" {
			w.Header().Set(EndSessionHeader, "1")
		}
		o.ServeHTTP(w, r)
	})
	e := newEnv(t, Config{Config: room.Config{Capacity: capacity, Rate: ceiling, ActiveWindow: Duration(window)}}, site)
	sh := e.gw.Room()
	settle := admission.DefaultCapacitySettle.Seconds()
	tick := func() room.CapacityStatus {
		t.Helper()
		sh.Tick(e.clock.Now())
		return sh.Status(e.clock.Now()).Site
	}
	wantRate := func(st room.CapacityStatus, active, rate float64) {
		t.Helper()
		if st.Active != active || !near(st.Rate, rate) {
			t.Fatalf("active %v at rate %v, want %v at %v (%+v)", st.Active, st.Rate, active, rate, st)
		}
	}
	wantRate(tick(), 0, capacity/settle)

	jars := make([]http.CookieJar, capacity)
	for i := range jars {
		e.client.Jar = newClockJar(e.clock.Now)
		e.admitted()
		jars[i] = e.client.Jar
	}
	present := func(i int, path string) *http.Response {
		t.Helper()
		e.client.Jar = jars[i]
		resp, body := e.do("GET", path, "")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "origin:") {
			t.Fatalf("visitor %d, %s: %d %s, want the origin", i, path, resp.StatusCode, body)
		}
		return resp
	}
	for i := range jars {
		present(i, "/shop")
	}
	wantRate(tick(), capacity, admission.MinCapacityRate)

	// Visitor 2 stops; 0 and 1 go on presenting every 10 s. Visitor 2's
	// window ends 30 s after its last request: within the lookahead the
	// room admits for its departure, after it for the gap.
	last := e.clock.Now()
	for sec := 1; sec <= 31; sec++ {
		e.clock.Set(last.Add(time.Duration(sec) * time.Second))
		if sec%10 == 0 {
			present(0, "/shop")
			present(1, "/shop")
		}
		st := tick()
		switch {
		case sec < 28:
			wantRate(st, capacity, admission.MinCapacityRate)
		case sec < 30:
			wantRate(st, capacity, 1/admission.CapacityLookahead.Seconds())
		default:
			wantRate(st, capacity-1, 1/settle)
		}
	}

	resp := present(1, "/logout")
	if got := resp.Header.Get(EndSessionHeader); got != "" {
		t.Errorf("the visitor saw %s: %q", EndSessionHeader, got)
	}
	if !clearsCookie(resp, e.gw.cookies.pass) {
		t.Errorf("ending the session did not clear the pass cookie: %q", resp.Header.Values("Set-Cookie"))
	}
	if got := o.last().Header.Get(passHeader); got == "" {
		t.Error("the origin's request to end the session carried no pass")
	}
	// The ended session is a departure due now: the room admits for it
	// over the lookahead, and its place is out of the count at once.
	lookahead := admission.CapacityLookahead.Seconds()
	wantRate(tick(), capacity-2, 1/lookahead+2/settle)
	if st := sh.Status(e.clock.Now()).Site; st.Ended != 1 {
		t.Errorf("site.ended = %v, want 1", st.Ended)
	}
	e.clock.Add(admission.CapacityLookahead)
	wantRate(tick(), capacity-2, 2/settle)

	if got := testutil.ToFloat64(e.gw.metrics.sessionsEnded); got != 1 {
		t.Errorf("sessions_ended_total = %v, want 1", got)
	}
	scrape := gather(t, e)
	for name, want := range map[string]float64{
		"fairgate_active_visitors": capacity - 2,
		"fairgate_capacity":        capacity,
		"fairgate_rate_ceiling":    ceiling,
		"fairgate_target_rate":     2 / settle,
	} {
		if got, ok := scrape[name]; !ok || !near(got, want) {
			t.Errorf("%s = %v (reported %v), want %v", name, got, ok, want)
		}
	}
}

// TestCapacityChangeThroughTheAdminAPI: capacity turns on and off live,
// the rate then the ceiling or the room's rate again; a negative one is
// refused and changes nothing.
func TestCapacityChangeThroughTheAdminAPI(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Rate: 4}}, nil)
	sh := e.gw.Room()
	now := e.clock.Now()
	settle := admission.DefaultCapacitySettle.Seconds()
	for _, tc := range []struct {
		capacity float64
		wantErr  bool
		rate     float64
	}{
		{capacity: 20, rate: 20 / settle}, // the gap from an empty site
		{capacity: -1, wantErr: true, rate: 20 / settle},
		{capacity: 0, rate: 4},
	} {
		err := sh.Apply(room.RoomChange{Capacity: &tc.capacity}, now)
		if (err != nil) != tc.wantErr {
			t.Fatalf("capacity %v: %v, want error %v", tc.capacity, err, tc.wantErr)
		}
		sh.Tick(now)
		if st := sh.Status(now); !near(st.Rate, tc.rate) || !near(st.Site.Rate, tc.rate) {
			t.Errorf("after capacity %v: rate %v (site %v), want %v", tc.capacity, st.Rate, st.Site.Rate, tc.rate)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// clearsCookie reports whether resp deletes cookie name.
func clearsCookie(resp *http.Response, name string) bool {
	for _, c := range resp.Cookies() {
		if c.Name == name && c.Value == "" && (c.MaxAge < 0 || c.Expires.Before(time.Unix(1, 0))) {
			return true
		}
	}
	return false
}

// gather scrapes e's registry: each unlabelled gauge's value by name.
func gather(t *testing.T, e *env) map[string]float64 {
	t.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if len(f.GetMetric()) == 1 && f.GetMetric()[0].GetGauge() != nil {
			out[f.GetName()] = f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return out
}

// TestClusterCapacityCountsEveryNode: two nodes on one store, each seeing
// its own visitors' passes, run at the one rate the capacity controller
// derives from their summed count; a capacity changed through one node's
// admin API reaches the other within a poll.
func TestClusterCapacityCountsEveryNode(t *testing.T) {
	store := storeKinds(t)["bolt"](t)
	clock := newFakeClock()
	nodes := newNodes(t, Config{Config: room.Config{Room: "cap", Capacity: 10, Rate: 5}}, store, clock, 2)
	settle := admission.DefaultCapacitySettle.Seconds()
	seen := []int{4, 3}
	tickAll := func() {
		t.Helper()
		clock.Add(time.Second)
		now := clock.Now()
		for i, n := range nodes {
			for p := range seen[i] {
				n.sh.See(fmt.Sprintf("node%d-pass%d", i, p), now)
			}
			if err := n.sh.ClusterTick(t.Context(), now); err != nil {
				t.Fatal(err)
			}
		}
		pollAll(t, nodes, now)
	}
	// A rate takes effect two polls (1 s) after the tick that sets it,
	// and the count misses the other nodes' admissions of up to a tick:
	// with no visitor waiting at either node, the ticking node's share of
	// them is none, so a tick (1 s). The rates set before admit over
	// those 2 s, and the gap is what they leave. The first tick's rate is
	// the only one set: both nodes counted from their joins, so it took
	// effect two polls after its tick, at the second tick, for the last
	// second of the span.
	span := 2*500*time.Millisecond + admission.ClusterCountLag(0, time.Second)
	tickAll() // the first node ticks before the second published its counts
	before := nodes[0].sh.Status(clock.Now()).Rate
	tickAll()
	want := (10 - 7 - before*1) / settle
	for i, n := range nodes {
		st := n.sh.Status(clock.Now())
		if !near(st.Rate, want) || st.Site.Active != 7 {
			t.Errorf("node %d: %v active at rate %v, want 7 at %v", i, st.Site.Active, st.Rate, want)
		}
	}
	// A capacity set through the admin API takes effect at once, from
	// the last count; the next tick counts what it admits over the span.
	capacity := 27.0
	if err := nodes[1].sh.Apply(room.RoomChange{Capacity: &capacity}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	tickAll()
	want = (capacity - 7 - (capacity-7)/settle*span.Seconds()) / settle
	for i, n := range nodes {
		if st := n.sh.Status(clock.Now()); st.Site.Capacity != capacity || !near(st.Rate, want) {
			t.Errorf("node %d: capacity %v at rate %v, want %v at %v", i, st.Site.Capacity, st.Rate, capacity, want)
		}
	}
}

// TestEndSessionHeader: however the origin answers, its end-session header
// never reaches the visitor, the pass cookie is cleared and the pass stops
// counting; an answer without it leaves the pass counted.
func TestEndSessionHeader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		origin func(w http.ResponseWriter)
		ends   bool
	}{
		{"with a body", func(w http.ResponseWriter) {
			w.Header().Set(EndSessionHeader, "1")
			_, _ = w.Write([]byte("bye"))
		}, true},
		{"no content", func(w http.ResponseWriter) {
			w.Header().Set(EndSessionHeader, "1")
			w.WriteHeader(http.StatusNoContent)
		}, true},
		{"nothing written", func(w http.ResponseWriter) { w.Header().Set(EndSessionHeader, "1") }, true},
		{"underscore spelling", func(w http.ResponseWriter) {
			w.Header()["Fairgate_End_Session"] = []string{"1"}
			w.WriteHeader(http.StatusOK)
		}, true},
		{"an ordinary answer", func(w http.ResponseWriter) { _, _ = w.Write([]byte("ok")) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{Config: room.Config{Capacity: 10}}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { tc.origin(w) }))
			e.admitted()
			resp, _ := e.do("GET", "/logout", "")
			for name := range resp.Header {
				if strings.HasPrefix(strings.ToLower(strings.ReplaceAll(name, "_", "-")), "fairgate-") {
					t.Errorf("the visitor saw %s", name)
				}
			}
			if got := clearsCookie(resp, e.gw.cookies.pass); got != tc.ends {
				t.Errorf("pass cookie cleared: %v, want %v", got, tc.ends)
			}
			want := 1.0
			if tc.ends {
				want = 0
			}
			if got := e.gw.Room().OnSite(e.clock.Now()); got != want {
				t.Errorf("active passes %v, want %v", got, want)
			}
		})
	}
}

// TestPassRenewedWhileActive: in a room sized by capacity a visitor's
// request renews their pass once less than half of session_length is left,
// with the same id (they count once); in a room sized by its rate the pass
// keeps its expiry.
func TestPassRenewedWhileActive(t *testing.T) {
	const session = 10 * time.Minute
	for _, tc := range []struct {
		name  string
		cfg   Config
		renew bool
	}{
		{"capacity", Config{Config: room.Config{Capacity: 10, SessionLength: Duration(session)}}, true},
		{"rate", Config{Config: room.Config{Rate: 10, SessionLength: Duration(session)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.cfg, nil)
			e.admitted()
			admitted := e.clock.Now()
			passCookie := func(resp *http.Response) *http.Cookie {
				for _, c := range resp.Cookies() {
					if c.Name == e.gw.cookies.pass {
						return c
					}
				}
				return nil
			}
			e.clock.Set(admitted.Add(session / 4))
			if resp, _ := e.do("GET", "/shop", ""); passCookie(resp) != nil {
				t.Fatal("a pass with more than half its life left was renewed")
			}
			e.clock.Set(admitted.Add(session * 3 / 4))
			resp, _ := e.do("GET", "/shop", "")
			c := passCookie(resp)
			if (c != nil) != tc.renew {
				t.Fatalf("renewed %v, want %v", c != nil, tc.renew)
			}
			if !tc.renew {
				return
			}
			claims, err := e.gw.door.VerifyPass(c.Value, e.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			if want := e.clock.Now().Add(session).Unix(); claims.ExpiresAt != want {
				t.Errorf("renewed pass expires at %d, want %d", claims.ExpiresAt, want)
			}
			if got := e.origin.last().Header.Get(passHeader); got != c.Value {
				t.Error("the origin got the old pass, not the renewed one")
			}
			// Past the first pass's expiry the renewed one still passes.
			e.clock.Set(admitted.Add(session + time.Minute))
			if resp, body := e.do("GET", "/shop", ""); resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "origin:") {
				t.Fatalf("after the first pass's expiry: %d %s", resp.StatusCode, body)
			}
			if got := e.gw.Room().OnSite(e.clock.Now()); got != 1 {
				t.Errorf("active passes %v, want 1: the renewed pass is the same visitor", got)
			}
			if got := testutil.ToFloat64(e.gw.metrics.passesRenewed); got != 1 {
				t.Errorf("passes_renewed_total = %v, want 1", got)
			}
		})
	}
}

// TestClusterCapacityCountsEachPassOnce: with balancing that is not
// sticky a visitor's pass reaches several nodes; each node counts it, but
// the room's count (the nodes' sketches merged) counts it once, within
// three standard errors of the sketch (3 × queue.SketchError) of the
// true number of distinct passes, where the sum of the nodes' counts would
// be up to nodes times it. A session ended at one node stops counting for
// the room although the other nodes that saw its pass still hold it.
func TestClusterCapacityCountsEachPassOnce(t *testing.T) {
	tests := []struct {
		name                 string
		nodes, passes, ended int
		seenBy               func(pass, node int) bool
	}{
		{"one node", 1, 500, 0, func(int, int) bool { return true }},
		{"every pass on both of two nodes", 2, 1_500, 0, func(int, int) bool { return true }},
		{"every pass on all of five nodes", 5, 3_000, 0, func(int, int) bool { return true }},
		{"each pass on two of four nodes", 4, 2_000, 0, func(p, n int) bool { return n == p%4 || n == (p+1)%4 }},
		{"sticky: each pass on one of three nodes", 3, 900, 0, func(p, n int) bool { return n == p%3 }},
		{"all of three nodes, a third of the sessions ended at one", 3, 1_500, 500, func(int, int) bool { return true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := storeKinds(t)["bolt"](t)
			clock := newFakeClock()
			nodes := newNodes(t, Config{Config: room.Config{Room: "cap", Capacity: 10_000, Rate: 50}}, store, clock, tt.nodes)
			sum := 0
			for p := range tt.passes {
				for i, n := range nodes {
					if tt.seenBy(p, i) {
						n.sh.See(fmt.Sprintf("pass-%d", p), clock.Now())
						sum++
					}
				}
			}
			for p := range tt.ended {
				nodes[p%tt.nodes].sh.End(fmt.Sprintf("pass-%d", p), clock.Now())
				sum--
			}
			for range 2 { // the first node ticks before the others published
				clock.Add(time.Second)
				for _, n := range nodes {
					if err := n.sh.ClusterTick(t.Context(), clock.Now()); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := float64(tt.passes - tt.ended)
			tol := 3 * queue.SketchError * want
			for i, n := range nodes {
				got := n.sh.Status(clock.Now()).Site.Active
				if math.Abs(got-want) > tol {
					t.Errorf("node %d counts %.0f active, want %v within %.0f (the nodes' sum is %d)", i, got, want, tol, sum)
				}
				if i == 0 {
					t.Logf("%d distinct passes, %d ended, %d in the nodes' sum: the room counts %.0f (%+.2f%%)", tt.passes, tt.ended, sum, got, 100*(got-want)/want)
				}
			}
		})
	}
}
