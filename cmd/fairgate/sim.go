package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/fairgate/fairgate/sim"
)

func simulate(ctx context.Context, args []string, stdout io.Writer) error {
	cfg := sim.DefaultConfig
	fs := newFlags("sim", stdout)
	fs.IntVar(&cfg.PreQueue, "prequeue", cfg.PreQueue, "visitors in the pre-queue")
	fs.DurationVar(&cfg.PreQueueSpan, "prequeue-span", cfg.PreQueueSpan, "pre-queue arrivals spread over this long before the start")
	fs.IntVar(&cfg.Arrivals, "arrivals", cfg.Arrivals, "visitors arriving after the start")
	fs.DurationVar(&cfg.ArrivalSpan, "arrival-span", cfg.ArrivalSpan, "arrivals spread over this long after the start")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "admissions per second")
	fs.DurationVar(&cfg.FixedTau, "fixed-tau", cfg.FixedTau, "run the clock at 1/tau instead of adapting it (0: adaptive)")
	fs.Float64Var(&cfg.Share, "share", cfg.Share, "share of visitors playing each strategy")
	fs.IntVar(&cfg.Tabs, "tabs", cfg.Tabs, "k for the k-tabs and k-tokens strategies")
	fs.DurationVar(&cfg.Jitter, "jitter", cfg.Jitter, "largest network delay")
	fs.IntVar(&cfg.Difficulty, "difficulty", cfg.Difficulty, "proof-of-work bits")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	fs.Float64Var(&cfg.VIPVisitors, "vip-visitors", cfg.VIPVisitors, "share of visitors whose login has tier=vip")
	fs.Float64Var(&cfg.VIPLane, "vip-lane", cfg.VIPLane, "share of the rate the vip lane gets (0: no lane)")
	fs.StringVar(&cfg.QueueOrder, "queue-order", cfg.QueueOrder, "the room's queue_order: lottery or fifo (empty: the default, lottery)")
	fs.DurationVar(&cfg.LuckWindow, "luck-window", cfg.LuckWindow, "fifo's luck_window (0: the default)")
	baselineOnly := fs.Bool("baseline-only", false, "run only the all-honest baseline: the ordering table and waits, no strategy table (an eighth of the time)")
	fs.BoolVar(&cfg.Mixed, "mixed", cfg.Mixed, "play every strategy in one run next to the baseline (two runs instead of eight; the noise column is then all strategies' together)")
	fs.BoolVar(&cfg.SkipEarlyRepeats, "skip-early-repeats", cfg.SkipEarlyRepeats, "answer a strategy's repeated early attempt (same token, before its nxt, last answered 429 early) from that answer instead of sending it; counted, not sent")
	fs.IntVar(&cfg.Parallel, "parallel", cfg.Parallel, "runs at once (each a CPU core and its own memory; 0 or 1: one at a time)")
	format := fs.String("format", "text", "the report's form: text (every table) or markdown (the strategy table, as docs/FAIRNESS.md quotes it)")
	plot := fs.String("plot", "fairgate-sim.svg", "where to write the SVG plot (empty: none)")
	progress := fs.Bool("progress", false, "print each run's progress to stderr every 5 simulated minutes")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the simulation to this file")
	memProfile := fs.String("memprofile", "", "write a heap profile (after the runs) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.PreQueue < 1 || cfg.Arrivals < 1 || cfg.Rate <= 0 || cfg.Share <= 0 || cfg.Share*7 >= 1 || cfg.Tabs < 1 {
		return usageErr("need at least one visitor in each group, a positive rate, a share in (0, 1/7) and k >= 1")
	}
	if cfg.VIPLane < 0 || cfg.VIPLane >= 1 || cfg.VIPVisitors < 0 || cfg.VIPVisitors > 1 {
		return usageErr("--vip-lane must be in [0, 1) and --vip-visitors in [0, 1]")
	}
	write, err := reportWriter(*format)
	if err != nil {
		return err
	}
	if *progress {
		cfg.Progress = os.Stderr
	}
	if *baselineOnly {
		cfg.Only = []sim.Kind{sim.Honest}
	}
	stopProfile, err := startProfiles(*cpuProfile, *memProfile)
	if err != nil {
		return err
	}
	report, err := sim.RunAll(ctx, cfg)
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	if err := write(report, stdout); err != nil {
		return err
	}
	if *plot == "" {
		return nil
	}
	var svg strings.Builder
	if err := report.WriteSVG(&svg); err != nil {
		return err
	}
	if err := os.WriteFile(*plot, []byte(svg.String()), 0o644); err != nil {
		return fmt.Errorf("writing plot: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "\nplot written to %s\n", *plot)
	return err
}

// reportWriter is the report's rendering named by --format.
func reportWriter(format string) (func(sim.Report, io.Writer) error, error) {
	switch format {
	case "text":
		return sim.Report.WriteTable, nil
	case "markdown":
		return sim.Report.WriteMarkdown, nil
	}
	return nil, usageErr("--format must be text or markdown, not %q", format)
}

// startProfiles starts a CPU profile to cpu (if set); the function it
// returns stops it and writes a heap profile to mem (if set).
func startProfiles(cpu, mem string) (func() error, error) {
	var cpuFile *os.File
	if cpu != "" {
		f, err := os.Create(cpu)
		if err != nil {
			return nil, fmt.Errorf("creating the CPU profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("starting the CPU profile: %w", err)
		}
		cpuFile = f
	}
	return func() error {
		if cpuFile != nil {
			pprof.StopCPUProfile()
			if err := cpuFile.Close(); err != nil {
				return fmt.Errorf("writing the CPU profile: %w", err)
			}
		}
		if mem == "" {
			return nil
		}
		f, err := os.Create(mem)
		if err != nil {
			return fmt.Errorf("creating the heap profile: %w", err)
		}
		runtime.GC()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			f.Close()
			return fmt.Errorf("writing the heap profile: %w", err)
		}
		return f.Close()
	}, nil
}
