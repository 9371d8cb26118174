// Command cluster is the three-node end-to-end test of one waiting room
// shared through DynamoDB: DynamoDB Local with a data directory,
// `fairgate proxy init-tables`, a tiny origin, three `fairgate proxy`
// processes with the same keys and room on state_store dynamodb, and a crowd
// spread over them by weight (60/30/10 by default). It prints each check as
// "ok - …" or "not ok - …", the figures behind it as "# …" lines, and exits
// non-zero when a check fails.
//
//	cluster -fairgate BIN -dynamodb-jar DIR [-rate 20] [-window 30s] [-windows 2] [-races 1000] [-block 1]
//	cluster -caddy CADDY -fairgate BIN -dynamodb-jar DIR …  # three `caddy run` processes instead
//	cluster -fairgate BIN -dynamodb-jar DIR -capacity 120 -rate 20 -window 10s -windows 3 -tolerance 0.10  # the capacity run only
//
// With -capacity the room is sized by that capacity (-rate its ceiling,
// -active-window its active_window) and the run is the capacity run alone
// (capacity.go): visitors each sticking to one node (with -sticky=false,
// each request to a node drawn by weight) wait, are admitted, present
// their pass about once a second for a stay drawn from short and long
// stays (seeded, -seed), then stop; a share of them (-end-share)
// end their session at the origin's /logout, which answers with
// Fairgate-End-Session. From the second the site first holds 95 % of the
// capacity, every node's site.active (admin API) must stay within
// ±tolerance of the capacity on average in each -window, never above
// +tolerance in any second, while visitors wait (below it is skipped, as
// for the rate, when admissions were answered 503 within the controller's
// settle time: the store did not keep up; -strict fails it); the header
// must never reach a visitor, and an ended session's pass cookie must be
// cleared.
//
// With -caddy the nodes are Caddy processes of the binary e2e/build makes,
// each with its own admin endpoint (the room's admin API under
// /waiting_room) and data directory, the waiting_room handler in front of a
// reverse_proxy; the restart, SIGKILL and outage checks are left out (they
// are the process's, and `fairgate proxy` runs the same room code).
//
// e2e/cluster.sh builds the binary and finds DynamoDB Local (the CI's npm
// package); bench/cluster.sh runs it at full scale (±5% over each minute).
// The checks, in order:
//
//   - every node's S(now) equals the stored segments' formula within 1 ms;
//   - the same token raced at all three nodes -races times: never admitted twice;
//   - admissions cluster-wide within ±tolerance of -rate over each -window
//     (above it always fails: the budget is a cap; below it is skipped with
//     the store's figures when the store did not keep up on this machine,
//     unless -strict);
//   - a pause and a rate change through one node reach the others within 2 s;
//   - a node restarted (SIGTERM) resumes the same clock and ledger;
//   - a node killed with SIGKILL: the others keep admitting at the rate; it
//     comes back with the same clock and ledger;
//   - DynamoDB Local stopped mid-run: the waiting page, token issue and valid
//     passes keep working, admissions get 503 with Retry-After (on_unavailable
//     refuse) or continue (local), nothing waits past its deadline; a fourth
//     node started during the outage serves unjoined (the waiting page,
//     passes, a token shown back; a new token and an admission 503 with
//     Retry-After); when DynamoDB comes back on the same port, that node
//     joins (the same S(now) as the others) and admits a visitor, and
//     admissions resume on every node without a restart;
//   - every admitted token replayed at the end: none admitted again.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/e2e/internal/nodes"
	"github.com/fairgate/fairgate/e2e/internal/pass"
	"github.com/fairgate/fairgate/e2e/internal/replay"
	"github.com/fairgate/fairgate/gateway"
)

type options struct {
	fairgate, jarDir, work string
	caddy                  string
	rate                   float64
	window, warmup, outage time.Duration
	windows, races         int
	visitors, difficulty   int
	block                  int
	tolerance              float64
	capacity               int
	activeWindow           time.Duration
	fillWithin             time.Duration
	seed                   uint64
	endShare               float64
	sticky                 bool
	weights                []float64
	onUnavailable, store   string
	callTimeout            time.Duration
	keep, anyway, strict   bool
	timeout                time.Duration
}

const room = "cluster"

var (
	passed, failed, skipped int
)

func check(name string, ok bool, detail string, args ...any) {
	d := fmt.Sprintf(detail, args...)
	if ok {
		passed++
		fmt.Printf("ok - %s", name)
	} else {
		failed++
		fmt.Printf("not ok - %s", name)
	}
	if d != "" {
		fmt.Printf(" (%s)", d)
	}
	fmt.Println()
}

func figure(format string, args ...any) {
	fmt.Printf("# %s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

func main() {
	var o options
	var weights string
	flag.StringVar(&o.fairgate, "fairgate", "", "the fairgate binary (required)")
	flag.StringVar(&o.caddy, "caddy", "", "a Caddy binary with fairgate (e2e/build): the nodes are `caddy run` processes instead of `fairgate proxy` (no restart or outage checks)")
	flag.StringVar(&o.jarDir, "dynamodb-jar", "", "the directory holding DynamoDBLocal.jar (required)")
	flag.StringVar(&o.work, "work", "", "scratch directory (default a new temporary one, removed at the end)")
	flag.Float64Var(&o.rate, "rate", 20, "target admissions per second")
	flag.DurationVar(&o.window, "window", 30*time.Second, "length of each measured window")
	flag.IntVar(&o.windows, "windows", 2, "measured windows")
	flag.DurationVar(&o.warmup, "warmup", 10*time.Second, "crowd time before the first window")
	flag.DurationVar(&o.outage, "outage", 6*time.Second, "how long DynamoDB Local stays down")
	flag.IntVar(&o.races, "races", 1000, "tokens raced at all three nodes")
	flag.IntVar(&o.visitors, "visitors", 0, "concurrent visitors (default 10 × rate, at least 30)")
	flag.IntVar(&o.difficulty, "difficulty", 4, "proof-of-work difficulty")
	flag.IntVar(&o.block, "block", 1, "budget_block: admissions reserved per store write")
	flag.Float64Var(&o.tolerance, "tolerance", 0.05, "allowed relative error of admissions per window")
	flag.IntVar(&o.capacity, "capacity", 0, "run the capacity run only: the room sized by this capacity, -rate its ceiling, -windows windows of -window after the site fills, judged at ±-tolerance (0: the rate run)")
	flag.DurationVar(&o.activeWindow, "active-window", 5*time.Second, "active_window of the capacity run")
	flag.DurationVar(&o.fillWithin, "fill-within", 45*time.Second, "how soon the capacity run's site must fill")
	flag.Float64Var(&o.endShare, "end-share", 0.05, "the capacity run's share of visitors who end their session at the origin (Fairgate-End-Session) when they leave")
	flag.BoolVar(&o.sticky, "sticky", true, "the capacity run's visitors each keep to one node (drawn by -weights); false: each of their requests goes to a node drawn by -weights, as behind a balancer without affinity")
	flag.Uint64Var(&o.seed, "seed", 1, "the capacity run's visitors' seed (their nodes and stays)")
	flag.StringVar(&weights, "weights", "0.6,0.3,0.1", "the crowd's share of each node: as many nodes as shares (1 to 3)")
	flag.StringVar(&o.store, "store", "dynamodb", "state_store type: dynamodb (the cluster) or bolt (one node, its own file)")
	flag.StringVar(&o.onUnavailable, "on-unavailable", "refuse", "state_store on_unavailable: refuse or local")
	flag.DurationVar(&o.callTimeout, "call-timeout", 2*time.Second, "state_store call_timeout")
	flag.BoolVar(&o.keep, "keep", false, "keep the scratch directory")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "the whole run's deadline")
	flag.BoolVar(&o.strict, "strict", false, "fail a rate below the target even when the store did not keep up")
	flag.BoolVar(&o.anyway, "anyway", false, "run the checks even when the gateway does not show the store wired (to try the harness)")
	flag.Parse()
	if o.fairgate == "" {
		fmt.Fprintln(os.Stderr, "cluster: -fairgate is required")
		os.Exit(2)
	}
	var err error
	if o.weights, err = nodes.ParseWeights(weights); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: -weights: %v\n", err)
		os.Exit(2)
	}
	if len(o.weights) < 1 || len(o.weights) > 3 || o.store != "dynamodb" && o.store != "bolt" || o.store == "bolt" && len(o.weights) != 1 {
		fmt.Fprintln(os.Stderr, "cluster: -weights needs one to three shares; -store is dynamodb, or bolt with one node")
		os.Exit(2)
	}
	if o.caddy != "" && o.store != "dynamodb" {
		fmt.Fprintln(os.Stderr, "cluster: -caddy runs on -store dynamodb")
		os.Exit(2)
	}
	if o.store == "dynamodb" && o.jarDir == "" {
		fmt.Fprintln(os.Stderr, "cluster: -dynamodb-jar is required with -store dynamodb")
		os.Exit(2)
	}
	if o.capacity < 0 || o.capacity > 0 && (o.store != "dynamodb" || o.caddy != "") {
		fmt.Fprintln(os.Stderr, "cluster: -capacity runs `fairgate proxy` nodes on -store dynamodb")
		os.Exit(2)
	}
	if o.visitors == 0 && o.capacity > 0 {
		// As many waiting as on the site: the queue never empties.
		o.visitors = 2 * o.capacity
	}
	if o.visitors == 0 {
		o.visitors = int(math.Max(30, 10*o.rate))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	err = run(ctx, o)
	if err != nil {
		fmt.Printf("not ok - the cluster e2e could not run: %v\n", err)
		failed++
	}
	fmt.Printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if failed > 0 {
		os.Exit(1)
	}
}

// cluster is everything the run started.
type cluster struct {
	o      options
	keys   []byte        // the nodes' key ring (fairgate keygen)
	table  string        // the DynamoDB table
	env    []string      // the nodes' environment (AWS settings)
	extra  []*node       // nodes started beside the crowd's (the one started during the outage)
	budget *budgetReader // nil without DynamoDB
	ddb    *nodes.Dynamo
	nodes  []*node
	origin *http.Server
}

func (c *cluster) stopAll() {
	for _, n := range append(c.nodes, c.extra...) {
		_ = n.p.Stop(syscall.SIGTERM, 5*time.Second)
	}
	if c.ddb.Running() {
		_ = c.ddb.Stop()
	}
	if c.origin != nil {
		_ = c.origin.Close()
	}
}

func run(ctx context.Context, o options) error {
	if o.work == "" {
		dir, err := os.MkdirTemp("", "fairgate-cluster-")
		if err != nil {
			return err
		}
		o.work = dir
		if !o.keep {
			defer os.RemoveAll(dir)
		}
	}
	c := &cluster{o: o}
	defer c.stopAll()
	defer func() {
		if failed == 0 {
			return
		}
		for _, n := range c.nodes {
			fmt.Printf("--- %s log (last lines)\n%s\n", n.name, nodes.Tail(n.logPath, 8))
		}
	}()
	if err := c.setup(ctx); err != nil {
		return err
	}
	kind := "fairgate proxy"
	if o.caddy != "" {
		kind = "caddy"
	}
	figure("%d %s node(s) on state_store %s, rate %g/s, budget_block %d, crowd %d visitors weighted %v, logs in %s",
		len(c.nodes), kind, o.store, o.rate, o.block, o.visitors, o.weights, o.work)
	if !c.wired(ctx) && !o.anyway {
		return fmt.Errorf("the gateway does not run on the shared room-state store (its admin API shows no node id " +
			"or control version): the state_store config is not wired into `fairgate proxy` in this build")
	}

	if c.ddb != nil {
		// A node whose first store calls outlasted call_timeout (DynamoDB
		// Local's JVM warming up on a loaded machine) started unjoined; its
		// loop joins within a poll or two.
		if took, ok := c.waitAll(ctx, c.nodes, time.Now(), 30*time.Second, func(s status) bool { return s.Cluster != nil && s.Cluster.Joined }); !ok {
			return fmt.Errorf("not every node joined the room within 30 s of starting (%v)", took)
		}
	}
	c.clockCheck(ctx, "at start")
	if o.capacity > 0 {
		c.capacityRun(ctx)
		return nil
	}
	if len(c.nodes) > 1 {
		c.race(ctx)
	}

	cr := newCrowd(c.nodes, o.weights, room)
	crowdCtx, stopCrowd := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); cr.run(crowdCtx, o.visitors) }()
	defer func() { stopCrowd(); wg.Wait() }()

	c.rateWindows(ctx, cr)
	c.clockCheck(ctx, "under load")
	if len(c.nodes) > 1 {
		c.propagation(ctx)
	}
	if o.caddy == "" {
		c.restart(ctx, cr, len(c.nodes)-1, syscall.SIGTERM)
		c.restart(ctx, cr, len(c.nodes)/2, syscall.SIGKILL)
		if c.ddb != nil {
			c.outage(ctx, cr)
		}
	}

	stopCrowd()
	wg.Wait()
	c.replayAll(ctx, cr.usedTokens(), "at the end, at every node")
	figure("crowd: %d requests, %d connection errors (nodes stopped on purpose), %d tokens refused by a node not yet joined, %d failed, %d lost places, %d places found used after an unanswered attempt; slowest answer %s",
		cr.requests.Load(), cr.conn.Load(), cr.unjoined.Load(), cr.failed.Load(), cr.lost.Load(), cr.lostUnknown.Load(), time.Duration(cr.maxTook.Load()).Round(time.Millisecond))
	for _, s := range cr.samples {
		figure("  %s", s)
	}
	check("the crowd: no failed request, no lost place", cr.failed.Load() == 0 && cr.lost.Load() == 0,
		"%d failed, %d lost", cr.failed.Load(), cr.lost.Load())
	return nil
}

func (c *cluster) setup(ctx context.Context) error {
	o := c.o
	env := nodes.AWSEnv
	table := fmt.Sprintf("fairgate-e2e-%d", time.Now().UnixNano())
	if o.store == "dynamodb" {
		port, err := nodes.FreePort()
		if err != nil {
			return err
		}
		c.ddb = &nodes.Dynamo{JarDir: o.jarDir, DataDir: filepath.Join(o.work, "dynamodb"), LogPath: filepath.Join(o.work, "dynamodb.log"), Port: port}
		if err := c.ddb.Start(ctx); err != nil {
			return err
		}
		c.budget = newBudgetReader(c.ddb.Endpoint(), table)
		if err := nodes.InitTables(ctx, o.fairgate, c.ddb.Endpoint(), table); err != nil {
			return err
		}
	}

	// The origin: every path answers 200; endPath ends the session.
	originPort, err := nodes.FreePort()
	if err != nil {
		return err
	}
	c.origin = &http.Server{Addr: fmt.Sprintf("127.0.0.1:%d", originPort), ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == endPath {
				w.Header().Set(gateway.EndSessionHeader, "1")
			}
			_, _ = w.Write([]byte("shop\n"))
		})}
	go func() { _ = c.origin.ListenAndServe() }()
	if err := nodes.WaitHTTP(ctx, "http://"+c.origin.Addr+"/", 10*time.Second); err != nil {
		return err
	}

	keys, err := exec.CommandContext(ctx, o.fairgate, "keygen", "--kid", "e2e").Output()
	if err != nil {
		return fmt.Errorf("fairgate keygen: %w", err)
	}
	c.keys, c.table, c.env = keys, table, env
	for i := range o.weights {
		name := fmt.Sprintf("node%d", i+1)
		n, err := c.makeNode(name)
		if err != nil {
			return err
		}
		// A node that cannot start (its store answered with a refusal, a
		// port taken) is started again, twice at most.
		for attempt := 1; ; attempt++ {
			err := n.start(ctx)
			if err == nil {
				break
			}
			if attempt == 3 {
				return err
			}
			figure("%s failed to start (attempt %d), starting again: %v", name, attempt, err)
		}
		c.nodes = append(c.nodes, n)
	}
	return nil
}

// makeNode writes node name's config (its own directory and free ports)
// and returns it, not started.
func (c *cluster) makeNode(name string) (*node, error) {
	o, keys, table, env := c.o, c.keys, c.table, c.env
	dir := filepath.Join(o.work, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg := map[string]any{
		"room": room, "state": "queue", "rate": o.rate, "burst": o.rate, "tau": "1s", "fixed_speed": true,
		"difficulty": o.difficulty, "keys": json.RawMessage(keys), "min_backoff": "1s", "max_backoff": "2s",
	}
	if o.capacity > 0 {
		cfg["capacity"], cfg["active_window"] = o.capacity, o.activeWindow.String()
	}
	// With bolt, no state_store: the default store, a file in the
	// node's own directory (--state's default).
	if c.ddb != nil {
		store := nodes.StateStore(c.ddb.Endpoint(), table, name)
		store["budget_block"], store["poll"] = o.block, "500ms"
		store["call_timeout"], store["on_unavailable"] = o.callTimeout.String(), o.onUnavailable
		cfg["state_store"] = store
	}
	pub, err := nodes.FreePort()
	if err != nil {
		return nil, err
	}
	adm, err := nodes.FreePort()
	if err != nil {
		return nil, err
	}
	n := &node{name: name, bin: o.fairgate, dir: dir, logPath: filepath.Join(o.work, name+".log"),
		upstream: "http://" + c.origin.Addr, pubPort: pub, admPort: adm, adminToken: "e2e-" + name, env: env,
		client: &http.Client{Timeout: 10 * time.Second}}
	var doc any = cfg
	if o.caddy != "" {
		// One Caddy per node: the room in front of a reverse proxy to
		// the origin, the admin endpoint (with the room's admin API and
		// /metrics) on its own port, Caddy's storage in the node's
		// directory.
		n.caddy, n.bin = true, o.caddy
		n.env = append(append([]string(nil), env...), "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "HOME="+dir)
		cfg["handler"] = "waiting_room"
		doc = map[string]any{
			"admin": map[string]any{"listen": fmt.Sprintf("127.0.0.1:%d", adm)},
			"apps": map[string]any{"http": map[string]any{"servers": map[string]any{"site": map[string]any{
				"listen":          []string{fmt.Sprintf("127.0.0.1:%d", pub)},
				"automatic_https": map[string]any{"disable": true},
				"routes": []any{map[string]any{"handle": []any{
					cfg,
					map[string]any{"handler": "reverse_proxy", "upstreams": []any{map[string]any{"dial": c.origin.Addr}}},
				}}},
			}}}},
		}
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	path := filepath.Join(o.work, name+".json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, err
	}
	n.configPath = path
	return n, nil
}

// wired says whether the nodes run on the shared store: their admin API
// names the node and the control version.
func (c *cluster) wired(ctx context.Context) bool {
	st, err := c.nodes[0].status(ctx, room)
	if err != nil {
		return false
	}
	return st.Cluster != nil && st.Cluster.Node != ""
}

// clockCheck reads every node's S(now) and checks it against the segments'
// formula at the node's own answer time: within 1 ms of clock time, and
// every node on the same clock. A node may run a version behind for up to
// a poll, and right after a DynamoDB outage for up to its next successful
// one (a node can be two versions behind shortly after the store comes
// back), so the reading is taken again, for at most 10 s, until every node
// runs the same version.
func (c *cluster) clockCheck(ctx context.Context, when string) {
	c.clockCheckOn(ctx, c.nodes, when)
}

// clockCheckOn is clockCheck on the given nodes.
func (c *cluster) clockCheckOn(ctx context.Context, nodes []*node, when string) {
	name := "every node's S(now) on the segments' formula within 1 ms, " + when
	var sts []status
	for deadline := time.Now().Add(10 * time.Second); ; {
		sts = sts[:0]
		for _, n := range nodes {
			st, err := n.status(ctx, room)
			if err != nil {
				check(name, false, "%v", err)
				return
			}
			sts = append(sts, st)
		}
		if sameVersion(sts) || !time.Now().Before(deadline) || ctx.Err() != nil {
			break
		}
		sleep(ctx, 150*time.Millisecond)
	}
	worst, same, detail := clockAgreement(sts)
	check(name, same && worst <= time.Millisecond, "worst %s; %s", worst, detail)
}

func sameVersion(sts []status) bool {
	for _, st := range sts {
		if st.Cluster == nil || st.Cluster.Version != sts[0].Cluster.Version {
			return false
		}
	}
	return true
}

// formula is S(t) from a clock's origin, value and segments, written out
// here rather than taken from queue.Clock.At: S(t) = value + the sum,
// over the segments, of speed × how long each ran before t (from its start
// to the next one's start or t, whichever comes first; nothing if it starts
// at t or later).
func formula(c queue.Clock, t time.Time) float64 {
	total := c.Value
	for i := range c.Segments {
		stop := t
		if i+1 < len(c.Segments) {
			stop = minTime(t, c.Segments[i+1].Start)
		}
		if ran := stop.Sub(c.Segments[i].Start); ran > 0 {
			total += c.Segments[i].Speed * ran.Seconds()
		}
	}
	return total
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// clockAgreement returns the largest gap, in time, between a node's
// reported S(now) and the formula of the first node's clock at that node's
// now, and whether every node reported the same clock.
func clockAgreement(sts []status) (time.Duration, bool, string) {
	ref := sts[0].ClockState
	if ref.Origin.IsZero() {
		return 0, false, "the admin API shows no clock_state"
	}
	var worst time.Duration
	same := true
	var parts []string
	for i, st := range sts {
		// Nodes may hold the same clock re-based at different origins: it
		// is the same clock when both formulas agree at every node's now.
		for _, other := range sts {
			at, err := time.Parse(time.RFC3339Nano, other.Now)
			if err != nil {
				continue
			}
			if d := math.Abs(formula(st.ClockState, at) - formula(ref, at)); st.ClockSpeed > 0 && d/st.ClockSpeed > 0.001 || st.ClockSpeed == 0 && d > 1e-9 {
				if same {
					a, _ := json.Marshal(ref)
					b, _ := json.Marshal(st.ClockState)
					parts = append(parts, fmt.Sprintf("node1 %s, node%d %s", a, i+1, b))
				}
				same = false
			}
		}
		at, err := time.Parse(time.RFC3339Nano, st.Now)
		if err != nil {
			return 0, false, fmt.Sprintf("node %d: no answer time (now %q)", i+1, st.Now)
		}
		want := formula(ref, at)
		speed := st.ClockSpeed
		gap := time.Duration(0)
		switch {
		case speed > 0:
			gap = time.Duration(math.Abs(st.Clock-want) / speed * float64(time.Second))
		case math.Abs(st.Clock-want) > 1e-9:
			gap = time.Hour // a frozen clock must read its value exactly
		}
		worst = max(worst, gap)
		version := uint64(0)
		if st.Cluster != nil {
			version = st.Cluster.Version
		}
		parts = append(parts, fmt.Sprintf("node%d S=%.4f v%d", i+1, st.Clock, version))
	}
	if !same {
		parts = append(parts, "clocks differ")
	}
	return worst, same, strings.Join(parts, ", ")
}

// waitAll polls every node until cond holds for each, and returns how long
// each took from since (bounded by within).
func (c *cluster) waitAll(ctx context.Context, nodes []*node, since time.Time, within time.Duration, cond func(status) bool) ([]time.Duration, bool) {
	took := make([]time.Duration, len(nodes))
	done := make([]bool, len(nodes))
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		all := true
		for i, n := range nodes {
			if done[i] {
				continue
			}
			st, err := n.status(ctx, room)
			if err == nil && cond(st) {
				done[i], took[i] = true, time.Since(since)
				continue
			}
			all = false
		}
		if all {
			return took, true
		}
		sleep(ctx, 50*time.Millisecond)
	}
	return took, false
}

// race admits the same token at all three nodes at once, o.races times.
func (c *cluster) race(ctx context.Context) {
	if c.o.races == 0 {
		return
	}
	start := time.Now()
	if err := c.nodes[0].change(ctx, room, map[string]any{"state": "open", "rate": 1000, "burst": 1000}); err != nil {
		check("race: open the room at 1000/s", false, "%v", err)
		return
	}
	if _, ok := c.waitAll(ctx, c.nodes, start, 5*time.Second, func(s status) bool { return s.State == "open" && s.Rate == 1000 }); !ok {
		check("race: every node open at 1000/s", false, "not within 5 s")
		return
	}
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var once, none, twice, errs atomic.Int64
	var mu sync.Mutex
	var samples []string
	var g errgroup.Group
	g.SetLimit(16)
	for i := range c.o.races {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			n := c.nodes[i%3]
			status, body, _, err := do(ctx, client, http.MethodPost, n.site()+"/_fairgate/token", nil, "")
			var tk ticket
			if err != nil || status != http.StatusOK || json.Unmarshal(body, &tk) != nil {
				errs.Add(1)
				return nil
			}
			_, req, err := tk.Solve(ctx)
			if err != nil {
				errs.Add(1)
				return nil
			}
			// A token the nodes all put off (429: a slot reserved by the
			// node that won the ledger, or its checkpoint ahead; 503: the
			// store failing, the place kept) is raced again after its
			// Retry-After, three times at most; every 200 of every round
			// counts, by its pass: the nodes that find the place used by
			// this very token answer with the pass it was given (the
			// answer to the winner may be lost), so one admission is one
			// distinct pass id.
			var statuses []int
			admitted := 0
			passes := map[string]bool{}
			for round := 0; round < 4 && admitted == 0; round++ {
				got := make([]int, 3)
				ids := make([]string, 3)
				wait := make([]float64, 3)
				var race sync.WaitGroup
				gun := make(chan struct{})
				for j, n := range c.nodes {
					race.Add(1)
					go func() {
						defer race.Done()
						<-gun
						var body []byte
						got[j], body, _, _ = do(ctx, client, http.MethodPost, n.site()+"/_fairgate/admit", req, "")
						if got[j] == http.StatusOK {
							var a struct{ Pass string }
							_ = json.Unmarshal(body, &a)
							ids[j] = pass.ID(a.Pass)
						}
						var tk ticket
						if json.Unmarshal(body, &tk) == nil {
							wait[j] = tk.RetryAfter
						}
					}()
				}
				close(gun)
				race.Wait()
				statuses = append(statuses, got...)
				busy := false
				soonest := 2.0
				for j, st := range got {
					switch st {
					case http.StatusOK:
						if !passes[ids[j]] {
							passes[ids[j]] = true
							admitted++
						}
					case http.StatusTooManyRequests:
						busy = true
						soonest = min(soonest, wait[j])
					case http.StatusServiceUnavailable:
						// The store failing: the place is kept, ask again.
						busy = true
						soonest = min(soonest, 1)
					}
				}
				if admitted > 0 || !busy {
					break
				}
				sleep(ctx, time.Duration(soonest*float64(time.Second))+10*time.Millisecond)
			}
			switch admitted {
			case 0:
				none.Add(1)
				mu.Lock()
				if len(samples) < 3 {
					samples = append(samples, fmt.Sprint(statuses))
				}
				mu.Unlock()
			case 1:
				once.Add(1)
			default:
				twice.Add(1)
			}
			return nil
		})
	}
	_ = g.Wait() // the races count their own errors
	figure("race: %d tokens each raced at 3 nodes in %s: %d admitted once, %d admitted twice or more, %d not admitted %v, %d errors",
		c.o.races, time.Since(start).Round(time.Millisecond), once.Load(), twice.Load(), none.Load(), samples, errs.Load())
	check("the same token raced at all three nodes: zero admitted twice", twice.Load() == 0, "%d of %d", twice.Load(), c.o.races)
	check("the same token raced at all three nodes: each admitted once", once.Load() >= int64(c.o.races*99/100),
		"%d of %d admitted exactly once", once.Load(), c.o.races)
	restore := time.Now()
	if err := c.nodes[0].change(ctx, room, map[string]any{"state": "queue", "rate": c.o.rate, "burst": c.o.rate}); err != nil {
		check("race: back to the queue", false, "%v", err)
		return
	}
	_, ok := c.waitAll(ctx, c.nodes, restore, 5*time.Second, func(s status) bool { return s.State == "queue" && s.Rate == c.o.rate })
	check("after the race, every node back to queue", ok, "")
}

// rateWindows measures admissions cluster-wide over each window.
func (c *cluster) rateWindows(ctx context.Context, cr *crowd) {
	sleep(ctx, c.o.warmup)
	before := c.storeMetrics(ctx)
	start := nextSecond()
	last := before
	for w := range c.o.windows {
		from := start.Add(time.Duration(w) * c.o.window)
		sleep(ctx, time.Until(from.Add(c.o.window+c.o.callTimeout+time.Second)))
		now := c.storeMetrics(ctx)
		c.judgeRate(ctx, cr, fmt.Sprintf("window %d of %s: admissions cluster-wide", w+1, c.o.window), from, c.o.window, c.o.tolerance, last, now)
		last = now
	}
	after := c.storeMetrics(ctx)
	elapsed := time.Since(start)
	got, _ := cr.admissions(start, start.Add(elapsed))
	answers, _ := cr.answersBetween(start, start.Add(elapsed))
	attempts := 0
	for _, k := range answers {
		attempts += k
	}
	c.cost(before, after, got, attempts, elapsed)
}

// storeMetrics sums every node's store metrics (fairgate_state_store_*).
func (c *cluster) storeMetrics(ctx context.Context) map[string]float64 {
	out := map[string]float64{}
	for _, n := range c.nodes {
		m, err := n.metrics(ctx, "fairgate_state_store")
		if err != nil {
			continue
		}
		for k, v := range m {
			out[k] += v // the same series on every node: summed
		}
	}
	return out
}

// cost prints the store requests per admission and per node-second from
// the nodes' own counters.
func (c *cluster) cost(before, after map[string]float64, admitted, attempts int, elapsed time.Duration) {
	var keys []string
	for k := range after {
		if strings.Contains(k, "_bucket") || strings.HasSuffix(k, "_sum") {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		figure("cost: the nodes expose no fairgate_state_store_* metrics; see docs/SCALING.md for the counted figures")
		return
	}
	nodeSeconds := elapsed.Seconds() * float64(len(c.nodes))
	figure("cost over %s: %d admissions of %d admission attempts, %.0f node-seconds (budget_block %d):",
		elapsed.Round(time.Second), admitted, attempts, nodeSeconds, c.o.block)
	for _, k := range keys {
		d := after[k] - before[k]
		if d == 0 {
			continue
		}
		figure("  %s: %.0f (%.3f per admission, %.3f per attempt, %.3f per node-second)",
			k, d, d/math.Max(1, float64(admitted)), d/math.Max(1, float64(attempts)), d/nodeSeconds)
	}
}

// propagation pauses the room through node 1 and changes its rate through
// node 2, and times when every other node shows the change.
func (c *cluster) propagation(ctx context.Context) {
	others := func(skip int) []*node {
		var out []*node
		for i, n := range c.nodes {
			if i != skip {
				out = append(out, n)
			}
		}
		return out
	}
	t0 := time.Now()
	if err := c.nodes[0].change(ctx, room, map[string]any{"state": "paused"}); err != nil {
		check("pause through node 1", false, "%v", err)
		return
	}
	took, ok := c.waitAll(ctx, others(0), t0, 5*time.Second, func(s status) bool { return s.State == "paused" })
	check("a pause through node 1 reaches the others within 2 s", ok && maxDur(took) <= 2*time.Second, "%v", took)
	t1 := time.Now()
	rate := c.o.rate * 2
	if err := c.nodes[1].change(ctx, room, map[string]any{"rate": rate, "state": "queue"}); err != nil {
		check("rate change through node 2", false, "%v", err)
		return
	}
	took, ok = c.waitAll(ctx, others(1), t1, 5*time.Second, func(s status) bool { return s.Rate == rate && s.State == "queue" })
	check("a rate change (and resume) through node 2 reaches the others within 2 s", ok && maxDur(took) <= 2*time.Second, "%v", took)
	t2 := time.Now()
	_ = c.nodes[2].change(ctx, room, map[string]any{"rate": c.o.rate, "burst": c.o.rate})
	_, ok = c.waitAll(ctx, c.nodes, t2, 5*time.Second, func(s status) bool { return s.Rate == c.o.rate })
	check("the rate restored through node 3 on every node", ok, "")
}

func maxDur(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// restart stops node i with sig while the crowd runs, measures the others'
// admissions while it is down, starts it again and checks its clock and
// ledger.
func (c *cluster) restart(ctx context.Context, cr *crowd, i int, sig syscall.Signal) {
	n := c.nodes[i]
	how := map[syscall.Signal]string{syscall.SIGTERM: "restarted (SIGTERM)", syscall.SIGKILL: "killed with SIGKILL"}[sig]
	before, _ := n.status(ctx, room)
	down := time.Now()
	figure("%s: stopping with %v", n.name, sig)
	if err := n.p.Stop(sig, 10*time.Second); err != nil {
		check(n.name+" "+how, false, "%v", err)
	}
	if sig == syscall.SIGKILL && len(c.nodes) > 1 {
		// The others continue: admissions at the rate while it is down.
		reserved, admitted, ok := c.rateOver(ctx, cr, n.name+" killed: the others admit at the rate", 10*time.Second)
		if ok {
			// What the killed node had reserved and not spent is lost to its
			// window: at most its block, plus one admission for each attempt
			// it was deciding when it died (each took its own admission).
			cut := cr.admitsCut(i, down, down.Add(2*time.Second))
			lost := reserved - int64(admitted)
			check(n.name+" killed: the budget lost is at most its unspent block and the admissions it was deciding",
				lost <= int64(c.o.block)+int64(cut), "reserved %d, admitted %d in the 10 s after the kill (by decision second): %d lost; block %d, %d attempts cut at %s",
				reserved, admitted, lost, c.o.block, cut, n.name)
		}
	}
	if err := n.start(ctx); err != nil {
		check(n.name+" "+how+" starts again", false, "%v", err)
		return
	}
	figure("%s: started again, %s after the stop", n.name, time.Since(down).Round(time.Millisecond))
	after, err := n.status(ctx, room)
	check(n.name+" "+how+": its clock resumes where it was, not at 0", err == nil && after.Clock >= before.Clock && before.Clock > 0,
		"S %.3f before, %.3f after", before.Clock, after.Clock)
	c.clockCheck(ctx, "after "+n.name+" "+how)
	if len(c.nodes) > 1 {
		// Back in the cluster, it takes no more than its share.
		c.rateOver(ctx, cr, n.name+" "+how+" and back: the cluster admits at the rate", 10*time.Second)
	}
	used := cr.usedTokens()
	c.replay(ctx, []*node{n}, used, n.name+" "+how)
}

// rateOver checks the cluster-wide admissions over the next span: within
// twice the tolerance (a short span) plus one block.
// It returns what the budget reserved in the span and what the crowd was
// admitted, when the budget can be read.
func (c *cluster) rateOver(ctx context.Context, cr *crowd, name string, span time.Duration) (int64, int, bool) {
	from := nextSecond()
	before := c.storeMetrics(ctx)
	shares := c.sampleShares(ctx, from, span)
	// The last answers arrive within the store's call timeout and a second.
	sleep(ctx, time.Until(from.Add(span+c.o.callTimeout+time.Second)))
	after := c.storeMetrics(ctx)
	reserved, got, ok := c.judgeRate(ctx, cr, name, from, span, 2*c.o.tolerance+float64(c.o.block)/(c.o.rate*span.Seconds()), before, after)
	figure("%s: each node's share of the rate, nodes seen and bucket level, second by second: %s", name, shares())
	return reserved, got, ok
}

// sampleShares reads every node's cluster share, node count and bucket
// level once a second over the span, to explain a rate the check judges;
// the returned func gives what was read.
func (c *cluster) sampleShares(ctx context.Context, from time.Time, span time.Duration) func() string {
	var mu sync.Mutex
	lines := make([][]string, len(c.nodes))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for at := from; at.Before(from.Add(span)); at = at.Add(time.Second) {
			sleep(ctx, time.Until(at.Add(500*time.Millisecond)))
			for i, n := range c.nodes {
				st, err := n.status(ctx, room)
				cell := "down"
				if err == nil && st.Cluster != nil {
					cell = fmt.Sprintf("%.2f/%d/%.1f", st.Cluster.Share, st.Cluster.Nodes, st.BucketLevel)
				}
				mu.Lock()
				lines[i] = append(lines[i], cell)
				mu.Unlock()
			}
		}
	}()
	return func() string {
		<-done
		mu.Lock()
		defer mu.Unlock()
		out := ""
		for i, l := range lines {
			out += fmt.Sprintf("%s %v; ", c.nodes[i].name, l)
		}
		return out
	}
}

// judgeRate checks the admissions the crowd saw in [from, from+span)
// against the target. More than the target plus the tolerance always
// fails: the shared budget is a cap. Fewer than the target less the
// tolerance fails only when the store kept up (no failed store call, mean
// budget and ledger writes under 50 ms): otherwise the machine, not the
// room, was the limit, and the check says so and is skipped (-strict fails
// it anyway).
func (c *cluster) judgeRate(ctx context.Context, cr *crowd, name string, from time.Time, span time.Duration, tolerance float64, before, after map[string]float64) (int64, int, bool) {
	target := c.o.rate * span.Seconds()
	got, perNode := cr.admissions(from, from.Add(span))
	answers, slowest := cr.answersBetween(from, from.Add(span))
	perSecond := make([]int, int(span/time.Second))
	for i := range perSecond {
		perSecond[i], _ = cr.admissions(from.Add(time.Duration(i)*time.Second), from.Add(time.Duration(i+1)*time.Second))
	}
	dev := (float64(got) - target) / target
	errs, writeMean := storeHealth(before, after)
	detail := fmt.Sprintf("%d against %.0f (%+.1f%%), per node %v, per second %v; admission answers %v, slowest %s; store: %.0f failed calls, budget and ledger writes %s on average",
		got, target, dev*100, perNode, perSecond, answers, slowest.Round(time.Millisecond), errs, writeMean.Round(time.Millisecond))
	var reserved int64
	readable := false
	if c.budget != nil {
		if used, err := c.budget.used(ctx, room, from, from.Add(span)); err == nil {
			readable = true
			for _, u := range used {
				reserved += u
			}
			detail += fmt.Sprintf("; the shared budget reserved %d (per second %v)", reserved, used)
		} else {
			detail += fmt.Sprintf("; the shared budget could not be read: %v", err)
		}
	}
	name = fmt.Sprintf("%s within ±%.3g%% of the target", name, tolerance*100)
	switch {
	case dev > tolerance:
		check(name, false, "%s", detail)
	case dev < -tolerance && !c.o.strict && (errs > 0 || writeMean > 50*time.Millisecond):
		skipped++
		fmt.Printf("skip - %s: below it, but the store did not keep up on this machine (%s)\n", name, detail)
	default:
		check(name, dev >= -tolerance, "%s", detail)
	}
	return reserved, got, readable
}

// nextSecond is the start of the next whole second, where budget windows
// and passes' iat seconds begin.
func nextSecond() time.Time { return time.Now().Truncate(time.Second).Add(time.Second) }

// storeHealth is the store calls that failed and the mean duration of the
// budget and ledger writes between two scrapes.
func storeHealth(before, after map[string]float64) (float64, time.Duration) {
	var errs, sum, n float64
	for k, v := range after {
		d := v - before[k]
		switch {
		case strings.HasPrefix(k, "fairgate_state_store_errors_total"):
			errs += d
		case strings.Contains(k, `op="reserve_budget"`) || strings.Contains(k, `op="hold_place"`) || strings.Contains(k, `op="use_place"`):
			if strings.HasPrefix(k, "fairgate_state_store_call_seconds_sum") {
				sum += d
			} else if strings.HasPrefix(k, "fairgate_state_store_call_seconds_count") {
				n += d
			}
		}
	}
	if n == 0 {
		return errs, 0
	}
	return errs, time.Duration(sum / n * float64(time.Second))
}

// replay posts admitted tokens again at the given nodes: none may be
// admitted a second time.
func (c *cluster) replay(ctx context.Context, nodes []*node, used []usedToken, when string) {
	if len(used) > 300 {
		used = used[len(used)-300:]
	}
	// Open the room at a high rate first, so that the ledger is the only
	// thing that can refuse a replay: in the queue a replay may be told to
	// wait, which proves nothing.
	t0 := time.Now()
	if err := nodes[0].change(ctx, room, map[string]any{"state": "open", "rate": 1000, "burst": 1000}); err != nil {
		check("admitted tokens stay used, "+when, false, "opening the room: %v", err)
		return
	}
	defer func() {
		t1 := time.Now()
		_ = nodes[0].change(ctx, room, map[string]any{"state": "queue", "rate": c.o.rate, "burst": c.o.rate})
		c.waitAll(ctx, c.nodes, t1, 5*time.Second, func(s status) bool { return s.State == "queue" && s.Rate == c.o.rate })
	}()
	if _, ok := c.waitAll(ctx, nodes, t0, 5*time.Second, func(s status) bool { return s.State == "open" && s.Rate == 1000 }); !ok {
		check("admitted tokens stay used, "+when, false, "the room did not open on every node within 5 s")
		return
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	var mu sync.Mutex
	again, same, answered := 0, 0, 0
	statuses := map[int]int{}
	var g errgroup.Group
	g.SetLimit(16)
	for _, u := range used {
		g.Go(func() error {
			req, _ := json.Marshal(map[string]string{"nonce": u.nonce, "token": u.token})
			for _, n := range nodes {
				status, body, err := replay.Admit(ctx, client, n.site(), req)
				if err != nil {
					continue
				}
				mu.Lock()
				answered++
				statuses[status]++
				if status == http.StatusOK {
					if replay.Again(body, pass.ID(u.pass)) {
						again++
					} else {
						same++
					}
				}
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait() // the replays count what they could not send
	check("admitted tokens stay used, "+when, again == 0 && answered > 0 && len(used) > 0,
		"%d replays of %d admitted tokens answered %v, %d admitted again (%d answered with the pass they were given)", answered, len(used), statuses, again, same)
}

func (c *cluster) replayAll(ctx context.Context, used []usedToken, when string) {
	c.replay(ctx, c.nodes, used, when)
}

// outage stops DynamoDB Local while the crowd runs, probes every node, and
// starts it again on the same port and data directory.
func (c *cluster) outage(ctx context.Context, cr *crowd) {
	used := cr.usedTokens()
	if len(used) == 0 {
		check("DynamoDB down: a pass to probe with", false, "no visitor was admitted before")
		return
	}
	pass := used[len(used)-1].pass
	// A token placed while the store answered, to show a node that starts
	// during the outage.
	var shown ticket
	if status, body, _, err := do(ctx, &http.Client{Timeout: 10 * time.Second}, http.MethodPost, c.nodes[0].site()+"/_fairgate/token", nil, ""); err != nil || status != http.StatusOK || json.Unmarshal(body, &shown) != nil {
		check("DynamoDB down: a token to show a node started during the outage", false, "%d %v", status, err)
	}
	down := time.Now()
	if err := c.ddb.Stop(); err != nil {
		check("DynamoDB Local stops", false, "%v", err)
	}
	stopped := time.Now()
	type probe struct {
		ok, total int
		slowest   time.Duration
	}
	probes := map[string]*probe{"waiting page": {}, "token issue": {}, "pass": {}}
	client := &http.Client{Timeout: 10 * time.Second}
	for time.Since(stopped) < c.o.outage && ctx.Err() == nil {
		for _, n := range c.nodes {
			for name, p := range probes {
				start := time.Now()
				var status int
				var err error
				switch name {
				case "waiting page":
					status, _, _, err = do(ctx, client, http.MethodGet, n.site()+"/", nil, "")
					err = okStatus(status, err, http.StatusOK, http.StatusTooManyRequests)
				case "token issue":
					status, _, _, err = do(ctx, client, http.MethodPost, n.site()+"/_fairgate/token", nil, "")
					err = okStatus(status, err, http.StatusOK)
				case "pass":
					status, _, _, err = do(ctx, client, http.MethodGet, n.site()+"/shop", nil, "fairgate_pass_"+room+"="+pass)
					err = okStatus(status, err, http.StatusOK)
				}
				p.total++
				if err == nil {
					p.ok++
				}
				p.slowest = max(p.slowest, time.Since(start))
			}
		}
		sleep(ctx, 300*time.Millisecond)
	}
	back := time.Now()
	grace := c.o.callTimeout + time.Second
	answers, slowest := cr.answersBetween(stopped.Add(grace), back)
	for _, name := range []string{"waiting page", "token issue", "pass"} {
		p := probes[name]
		check("DynamoDB down: the "+name+" keeps working on every node", p.total > 0 && p.ok == p.total,
			"%d of %d, slowest %s", p.ok, p.total, p.slowest.Round(time.Millisecond))
	}
	figure("DynamoDB down %s (stop took %s): admission answers after a %s grace %v, slowest %s",
		c.o.outage, stopped.Sub(down).Round(time.Millisecond), grace, answers, slowest.Round(time.Millisecond))
	if c.o.onUnavailable == "refuse" {
		check("DynamoDB down (on_unavailable refuse): no admission, 503 with Retry-After instead",
			answers["200"] == 0 && answers["503"] > 0, "%v", answers)
	} else {
		check("DynamoDB down (on_unavailable local): admissions continue", answers["200"] > 0, "%v", answers)
	}
	check("DynamoDB down: nothing hangs (every admission answered within call_timeout + 1 s)", slowest <= grace,
		"slowest %s", slowest.Round(time.Millisecond))

	cold := c.coldStart(ctx, shown, pass)

	if err := c.ddb.Start(ctx); err != nil {
		check("DynamoDB Local starts again on the same port", false, "%v", err)
		return
	}
	restarted := time.Now()
	if cold != nil {
		took, ok := c.waitAll(ctx, []*node{cold}, restarted, 20*time.Second, func(s status) bool { return s.Cluster != nil && s.Cluster.Joined })
		check(cold.name+", started during the outage, joins the room once DynamoDB answers (no restart)", ok, "after %v", took)
		c.clockCheckOn(ctx, append(append([]*node(nil), c.nodes...), cold), "with "+cold.name+" joined")
		c.admitOne(ctx, cold)
		if err := cold.p.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
			check(cold.name+" stops", false, "%v", err)
		}
	}
	// Judged from the crowd's answers after the store came back, however
	// long the cold node's checks above took.
	within := 20 * time.Second
	sleep(ctx, time.Until(restarted.Add(within)))
	firsts := cr.firstAdmissions(restarted)
	ok := true
	for _, f := range firsts {
		ok = ok && f > 0 && f <= within
	}
	check("DynamoDB back: every node admits again without a restart", ok, "first admission per node after %v", firsts)
}

// coldStart starts one more node, beside the crowd's, while DynamoDB is
// down, and checks the answers a node that never read the room's state
// gives (docs/SCALING.md, "Starting while the store is down"): it starts;
// its admin API says it has not joined; the waiting page and a valid pass
// work; a token placed by a joined node is shown back unchanged; a new
// token and an admission get 503 with Retry-After, whatever on_unavailable
// says. A new node rather than a restarted one: a node restarted during an
// outage with on_unavailable local loses the places it admitted from
// memory (documented), which the final replay would count. Nil when the
// run has one node.
func (c *cluster) coldStart(ctx context.Context, shown ticket, pass string) *node {
	if len(c.nodes) < 2 {
		return nil
	}
	n, err := c.makeNode(fmt.Sprintf("node%d", len(c.nodes)+1))
	if err != nil {
		check("a node started while DynamoDB is down", false, "%v", err)
		return nil
	}
	c.extra = append(c.extra, n)
	token := shown.Token
	start := time.Now()
	if err := n.start(ctx); err != nil {
		check(n.name+" starts while DynamoDB is down", false, "%v", err)
		return nil
	}
	check(n.name+" starts while DynamoDB is down", true, "serving after %s", time.Since(start).Round(time.Millisecond))
	client := &http.Client{Timeout: 10 * time.Second}
	st, err := n.status(ctx, room)
	check(n.name+" unjoined: its admin API says so", err == nil && st.Cluster != nil && !st.Cluster.Joined, "%v", err)
	status, _, _, err := do(ctx, client, http.MethodGet, n.site()+"/", nil, "")
	check(n.name+" unjoined: the waiting page", okStatus(status, err, http.StatusOK, http.StatusTooManyRequests) == nil, "%d %v", status, err)
	status, _, _, err = do(ctx, client, http.MethodGet, n.site()+"/shop", nil, "fairgate_pass_"+room+"="+pass)
	check(n.name+" unjoined: a valid pass goes through", status == http.StatusOK, "%d %v", status, err)
	status, body, _, err := do(ctx, client, http.MethodPost, n.site()+"/_fairgate/token", nil, "fairgate_wait_"+room+"="+token)
	var back ticket
	_ = json.Unmarshal(body, &back)
	check(n.name+" unjoined: a token placed by a joined node is shown back unchanged", status == http.StatusOK && back.Token == token && token != "", "%d %v", status, err)
	status, _, h, err := do(ctx, client, http.MethodPost, n.site()+"/_fairgate/token", nil, "")
	check(n.name+" unjoined: a new token gets 503 with Retry-After (no place on a clock of its own)",
		status == http.StatusServiceUnavailable && h.Get("Retry-After") != "", "%d Retry-After %q %v", status, h.Get("Retry-After"), err)
	// Solved, so that only the join can refuse it.
	nonce, err := tokens.Solve(ctx, shown.Challenge, shown.Difficulty)
	if err != nil {
		check(n.name+" unjoined: an admission", false, "solving: %v", err)
		return n
	}
	req, _ := json.Marshal(map[string]string{"nonce": strconv.FormatUint(nonce, 10), "token": token})
	status, _, h, err = do(ctx, client, http.MethodPost, n.site()+"/_fairgate/admit", req, "")
	check(n.name+" unjoined: an admission gets 503 with Retry-After (on_unavailable "+c.o.onUnavailable+")",
		status == http.StatusServiceUnavailable && h.Get("Retry-After") != "", "%d Retry-After %q %v", status, h.Get("Retry-After"), err)
	return n
}

// admitOne takes a token at node n and follows its answers as a page would,
// for 60 s at most, until it is admitted. The room is saturated (the crowd
// is ten times the rate, every place eligible within seconds), so a place
// the shared budget turns away competes again each window with the crowd's,
// and can be turned away many times before it gets in.
func (c *cluster) admitOne(ctx context.Context, n *node) {
	const name = " joined: a visitor who takes a token there is admitted"
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	var answers []int
	status, body, _, err := do(ctx, client, http.MethodPost, n.site()+"/_fairgate/token", nil, "")
	var tk ticket
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &tk) != nil {
		check(n.name+" joined: a new token", false, "%d %v", status, err)
		return
	}
	for time.Now().Before(deadline) && ctx.Err() == nil {
		sleep(ctx, time.Duration(tk.RetryAfter*float64(time.Second)))
		nonce, err := tokens.Solve(ctx, tk.Challenge, tk.Difficulty)
		if err != nil {
			break
		}
		req, _ := json.Marshal(map[string]string{"nonce": strconv.FormatUint(nonce, 10), "token": tk.Token})
		status, body, h, err := do(ctx, client, http.MethodPost, n.site()+"/_fairgate/admit", req, "")
		answers = append(answers, status)
		switch {
		case err != nil:
			tk.RetryAfter = 0.5
		case status == http.StatusOK:
			check(n.name+name, true, "answers %v", answers)
			return
		case status == http.StatusTooManyRequests:
			var next ticket
			_ = json.Unmarshal(body, &next)
			if next.Token != "" {
				tk = next
			} else {
				tk.RetryAfter = next.RetryAfter
			}
		case status == http.StatusServiceUnavailable:
			ra, _ := strconv.ParseFloat(h.Get("Retry-After"), 64)
			tk.RetryAfter = max(ra, 0.5)
		default:
			check(n.name+name, false, "answers %v: %.200s", answers, body)
			return
		}
	}
	check(n.name+name, false, "not within 60 s; answers %v", answers)
}

func okStatus(status int, err error, want ...int) error {
	if err != nil {
		return err
	}
	for _, w := range want {
		if status == w {
			return nil
		}
	}
	return fmt.Errorf("status %d", status)
}
