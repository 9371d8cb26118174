// Command holds measures seat holds per second and their latency through
// the seat service (domain rules plus store), on the embedded store or on
// DynamoDB, first in process and then, in the same run, over the HTTP API
// with a pass and an Idempotency-Key on every request, printing one table
// row for each:
//
//	go run ./bench/holds -store bolt -clients 256
//	go run ./bench/holds -store dynamodb -endpoint http://127.0.0.1:PORT -clients 64
//
// Over HTTP the clients are, by default, a minimal HTTP/1.1 client (one
// kept-alive connection each, as wrk); -client net/http uses Go's client as
// before, and -client raw,net/http runs both, one after the other.
//
// Each client opens its own session and, for -duration, holds one seat and
// releases it again. Only the hold is timed (p50, p99): it is what a buyer
// waits for after a click (-timed cycle times both, as before). Uncontended, each client has a row of its own;
// -hot puts every client on one 200-seat section, so holds race and lose.
// -cpuprofile profiles the run; with -inprocess=false, the HTTP path alone.
//
// Beside each HTTP run, the same clients send the same requests (a hold
// and its release, pass and key included) to the ceiling: a plain net/http
// server on loopback answering 200 bytes of JSON. A line after the pair
// gives the seat API's requests per second over the ceiling's, the share
// of what HTTP allows here; -rounds N repeats the pair N times, the
// ceiling first in even rounds, and ends with every round's ratio and
// their median (-ceiling=false skips it).
//
// On bolt, a line under each row gives the group commits per second, their
// mean size (writes per commit) and how busy the one committing goroutine
// was (near 100%, the commits bound the run; a group under way when the
// run starts counts whole, so it can read a little over 100%), and how
// much of that in bbolt's commit (writing pages, two fdatasyncs). "CPU per hold" is this process's CPU
// time (service and load generator) per successful hold with its release:
// on a machine shared with other work it says more than holds/s, which
// wait for CPU the process does not get.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/boltstore"
	"github.com/fairgate/fairgate/seats/dynamostore"
)

func main() {
	kind := flag.String("store", "bolt", "bolt or dynamodb")
	endpoint := flag.String("endpoint", os.Getenv("FAIRGATE_DYNAMODB_ENDPOINT"), "DynamoDB endpoint")
	clients := flag.Int("clients", 64, "concurrent clients")
	hot := flag.Bool("hot", false, "every client on one hot section")
	duration := flag.Duration("duration", 10*time.Second, "how long to run")
	inProc := flag.Bool("inprocess", true, "run the load in process (no HTTP)")
	timed := flag.String("timed", "hold", "what p50 and p99 time: hold, or cycle (the hold and its release, as this command timed before)")
	overHTTP := flag.Bool("http", true, "run the same load over the HTTP API")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	traceFile := flag.String("trace", "", "write an execution trace of the whole run to this file (go tool trace: where goroutines wait for the CPU, the committer, the disk)")
	withCeiling := flag.Bool("ceiling", true, "run the ceiling (a plain net/http server answering 200 bytes of JSON) with the same clients and load beside each HTTP run, and print the ratio")
	rounds := flag.Int("rounds", 1, "HTTP runs of each client, alternated with the ceiling's (ceiling first in even rounds)")
	client := flag.String("client", "raw", "the HTTP load's clients, one HTTP run each, comma-separated: raw (a minimal HTTP/1.1 client, one connection per client, as wrk) and net/http (Go's client, as this command used before)")
	flag.Parse()
	for _, c := range strings.Split(*client, ",") {
		switch c {
		case "raw", "net/http":
			httpClients = append(httpClients, c)
		default:
			fmt.Fprintln(os.Stderr, "holds: -client lists raw and net/http")
			os.Exit(2)
		}
	}
	switch *timed {
	case "hold":
	case "cycle":
		timeCycle = true
	default:
		fmt.Fprintln(os.Stderr, "holds: -timed is hold or cycle")
		os.Exit(2)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "holds:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *traceFile != "" {
		stop, err := startTrace(*traceFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "holds:", err)
			os.Exit(1)
		}
		defer stop()
	}
	ceilingRuns, httpRounds = *withCeiling, max(*rounds, 1)
	if err := run(*kind, *endpoint, *clients, *hot, *inProc, *overHTTP, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "holds:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(kind, endpoint string, clients int, hot, inProc, overHTTP bool, duration time.Duration) error {
	ctx := context.Background()
	var store seats.Store
	switch kind {
	case "bolt":
		dir, err := os.MkdirTemp("", "holds")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bs, err := boltstore.Open(filepath.Join(dir, "seats.db"))
		if err != nil {
			return err
		}
		store, groups = bs, bs.Stats
	case "dynamodb":
		calls = new(callTimes)
		client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
			Credentials: credentials.NewStaticCredentialsProvider("bench", "local", ""),
			APIOptions:  []func(*middleware.Stack) error{calls.middleware}})
		n := time.Now().UnixNano()
		ds := dynamostore.New(client, dynamostore.Tables{Seats: fmt.Sprintf("bs_%d", n), Reservations: fmt.Sprintf("br_%d", n)})
		if err := ds.CreateTables(ctx); err != nil {
			return err
		}
		store = ds
	default:
		return fmt.Errorf("unknown store %q", kind)
	}
	defer store.Close()
	svc := seats.NewService(store, time.Now)

	// A row of 20 per client, clientsPerSection rows a section, plus one
	// hot section of 200.
	ev := seats.Event{ID: "bench", Name: "bench", MaxSeats: 6, HoldWindow: seats.Duration(time.Hour)}
	row := func(id string, n int) seats.Row {
		r := seats.Row{ID: id}
		for i := 1; i <= n; i++ {
			r.Seats = append(r.Seats, seats.SeatSpec{Number: i})
		}
		return r
	}
	for c := range clients {
		if c%clientsPerSection == 0 {
			ev.Sections = append(ev.Sections, seats.Section{ID: fmt.Sprintf("C%d", c/clientsPerSection), Blocks: []seats.Block{{ID: "1"}}})
		}
		b := &ev.Sections[len(ev.Sections)-1].Blocks[0]
		b.Rows = append(b.Rows, row(fmt.Sprint(1+c%clientsPerSection), 20))
	}
	ev.Sections = append(ev.Sections, seats.Section{ID: "HOT", Blocks: []seats.Block{{ID: "1", Rows: []seats.Row{row("1", 100), row("2", 100)}}}})
	if _, err := svc.CreateEvent(ctx, ev); err != nil {
		return err
	}
	if calls != nil {
		calls.reset() // the tables and the import are not the load
	}

	hotSeats = hot
	seatFor := seatOf
	mode := "uncontended"
	if hot {
		mode = "hot section"
	}

	timed := "hold"
	if timeCycle {
		timed = "cycle"
	}
	fmt.Printf("| store | load | clients | attempts/s | holds/s | %s p50 | %s p99 | lost races | errors | CPU used | CPU per hold |\n", timed, timed)
	fmt.Println("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")

	// In process: the domain and the store, no HTTP.
	inProcess := func(c int) (cycle, error) {
		user := fmt.Sprintf("u%d", c)
		sess, err := svc.OpenSession(ctx, "bench", user, "t"+user, time.Now(), nil)
		if err != nil {
			return nil, err
		}
		return func(i int) (time.Duration, bool, error) {
			seat := seatFor(c, i)
			start := time.Now()
			_, err := svc.HoldSeats(ctx, sess.ID, user, []string{seat}, time.Now(), nil)
			took := time.Since(start)
			if err != nil {
				return took, false, err
			}
			_, err = svc.ReleaseSeat(ctx, sess.ID, user, seat, time.Now(), nil)
			return took, true, err
		}, nil
	}
	if inProc {
		report(kind, mode+", in process", clients, duration, drive(clients, duration, inProcess))
	}

	// Over HTTP: the seat API on loopback, every hold with its pass and an
	// Idempotency-Key, as a browser behind the gateway sends it.
	if !overHTTP {
		return nil
	}
	api, err := newHTTPTarget(svc)
	if err != nil {
		return err
	}
	defer api.close()
	var ceil *ceiling
	if ceilingRuns {
		if ceil, err = newCeiling(); err != nil {
			return err
		}
		defer ceil.close()
	}
	ratios := map[string][]float64{}
	for r := range httpRounds {
		for _, c := range httpClients {
			raw := c == "raw"
			seatAPI := func() float64 {
				return report(kind, mode+", HTTP + Idempotency-Key, "+c+" client", clients, duration, drive(clients, duration, api.clients(raw)))
			}
			if ceil == nil {
				seatAPI()
				continue
			}
			plain := func() float64 {
				return report("net/http", "ceiling: 200 B of JSON, "+c+" client", clients, duration, drive(clients, duration, ceil.clients(raw, api)))
			}
			var got, most float64
			if r%2 == 0 {
				got, most = seatAPI(), plain()
			} else {
				most, got = plain(), seatAPI()
			}
			if most > 0 {
				ratios[c] = append(ratios[c], got/most)
				fmt.Printf("|   | %s client, round %d: seat API %.0f req/s, ceiling %.0f req/s | | | | ratio %.2f | | | | | |\n", c, r+1, got, most, got/most)
			}
		}
	}
	for _, c := range httpClients {
		if rs := ratios[c]; len(rs) > 0 {
			fmt.Printf("ratio to the ceiling, %s client, %d clients: %s (median %.2f)\n", c, clients, percents(rs), median(rs))
		}
	}
	return nil
}

// percents lists ratios as percentages, in run order.
func percents(rs []float64) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprintf("%.0f%%", 100*r)
	}
	return strings.Join(s, " / ")
}

func median(rs []float64) float64 {
	s := slices.Sorted(slices.Values(rs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ceilingRuns and httpRounds are -ceiling and -rounds.
var (
	ceilingRuns bool
	httpRounds  int
)

// httpClients are the clients of the HTTP runs (-client).
var httpClients []string

// hotSeats puts every client on the hot section.
var hotSeats bool

// timeCycle times the hold and its release together, as this command did
// before it timed the hold alone (for comparing with figures of then).
var timeCycle bool

// seatOf is the seat client c holds on its i-th try.
func seatOf(c, i int) string {
	if hotSeats {
		return seats.SeatID("HOT", "1", fmt.Sprint(1+(c+i)%2), 1+(c*7+i*13)%100)
	}
	return seats.SeatID(fmt.Sprintf("C%d", c/clientsPerSection), "1", fmt.Sprint(1+c%clientsPerSection), 1+i%20)
}

// clientsPerSection is how many clients' rows share a section (an event
// has at most seats.MaxSections, a section seats.MaxRowsPerSection rows).
const clientsPerSection = 100

// cycle is one client's i-th hold and release; it returns how long the
// hold took and whether it held the seat.
type cycle func(i int) (hold time.Duration, held bool, err error)

type result struct {
	lat              []time.Duration
	ok, lost, failed int
	firstErr         error // the first failure, printed with the row
	// cpu is this process's CPU time (service and load generator) over
	// the run: cores busy = cpu / duration. Not DynamoDB Local's.
	cpu time.Duration
	// groups0 and groups are the embedded store's group-commit counts
	// before and after the run, which took elapsed: duration and the
	// cycles under way at its end.
	groups0, groups boltstore.Stats
	elapsed         time.Duration
}

// groups reads the embedded store's group-commit counts (nil on DynamoDB).
var groups func() boltstore.Stats

// drive sets up clients with setup and then runs each one's cycle until
// duration is over (the set-up is not timed); it keeps every hold's time.
func drive(clients int, duration time.Duration, setup func(c int) (cycle, error)) result {
	var mu sync.Mutex
	var res result
	// Every client is set up (admitted, its session opened) before the
	// clock starts: the run times the load alone.
	var ready sync.WaitGroup
	start := make(chan struct{})
	var deadline time.Time
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			hold, err := setup(c)
			ready.Done()
			<-start
			if err != nil {
				mu.Lock()
				res.failed++
				res.firstErr = cmp.Or(res.firstErr, fmt.Errorf("client %d: %w", c, err))
				mu.Unlock()
				return
			}
			var mine result
			for i := 0; time.Now().Before(deadline); i++ {
				start := time.Now()
				took, held, err := hold(i)
				if timeCycle {
					took = time.Since(start)
				}
				mine.lat = append(mine.lat, took)
				var taken *seats.TakenError
				switch {
				case held && err == nil:
					mine.ok++
				case errors.As(err, &taken):
					mine.lost++
				default:
					mine.failed++
					mine.firstErr = cmp.Or(mine.firstErr, err)
				}
			}
			mu.Lock()
			res.lat = append(res.lat, mine.lat...)
			res.ok, res.lost, res.failed = res.ok+mine.ok, res.lost+mine.lost, res.failed+mine.failed
			res.firstErr = cmp.Or(res.firstErr, mine.firstErr)
			mu.Unlock()
		}()
	}
	ready.Wait()
	if calls != nil {
		calls.reset()
	}
	cpu0 := cpuTime()
	if groups != nil {
		res.groups0 = groups()
	}
	began := time.Now()
	deadline = began.Add(duration)
	close(start)
	wg.Wait()
	res.elapsed = time.Since(began)
	res.cpu = cpuTime() - cpu0
	if groups != nil {
		res.groups = groups()
	}
	return res
}

// calls times DynamoDB's calls, on that store.
var calls *callTimes

// report prints a run's row and returns its requests per second (each
// attempt, and each successful hold's release).
func report(kind, mode string, clients int, duration time.Duration, r result) float64 {
	if calls != nil {
		defer calls.report(mode)
	}
	if r.firstErr != nil {
		fmt.Fprintf(os.Stderr, "holds: %s: first of %d errors: %v\n", mode, r.failed, r.firstErr)
	}
	if len(r.lat) == 0 {
		fmt.Printf("| %s | %s | %d | no holds completed | | | | | %d | | |\n", kind, mode, clients, r.failed)
		return 0
	}
	slices.Sort(r.lat)
	pct := func(p float64) time.Duration { return r.lat[int(p*float64(len(r.lat)-1))] }
	perHold := "n/a"
	if r.ok > 0 {
		perHold = (r.cpu / time.Duration(r.ok)).Round(time.Microsecond).String()
	}
	fmt.Printf("| %s | %s | %d | %.0f | %.0f | %v | %v | %d | %d | %.2f cores | %s |\n", kind, mode, clients,
		float64(len(r.lat))/duration.Seconds(), float64(r.ok)/duration.Seconds(), pct(0.5).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), r.lost, r.failed,
		r.cpu.Seconds()/duration.Seconds(), perHold)
	if n := r.groups.Commits - r.groups0.Commits; n > 0 {
		g, g0 := r.groups, r.groups0
		fmt.Printf("|   | %s: group commits | | %.0f/s | | %.1f writes, %.1f KiB logged each | committer busy %.0f%% (writing the log %.0f%%) | %.1f checkpoints/s, %.0f pages each | | | |\n", mode,
			float64(n)/r.elapsed.Seconds(), float64(g.Writes-g0.Writes)/float64(n), float64(g.Logged-g0.Logged)/1024/float64(n),
			100*(g.Busy-g0.Busy).Seconds()/r.elapsed.Seconds(), 100*(g.Syncing-g0.Syncing).Seconds()/r.elapsed.Seconds(),
			float64(g.Checkpoints-g0.Checkpoints)/r.elapsed.Seconds(), float64(g.Pages-g0.Pages)/float64(max(1, g.Checkpoints-g0.Checkpoints)))
		if failed := g.FailedCheckpoints - g0.FailedCheckpoints; failed > 0 {
			fmt.Fprintf(os.Stderr, "holds: %s: %d checkpoints failed (each was tried again)\n", mode, failed)
		}
	}
	return float64(len(r.lat)+r.ok) / duration.Seconds()
}

// startTrace starts an execution trace into path; the returned function
// stops it and closes the file.
func startTrace(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { trace.Stop(); _ = f.Close() }, nil
}
