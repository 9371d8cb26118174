package main

import (
	"context"
	"fmt"
	"io"
	"os"
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
	fs.DurationVar(&cfg.Jitter, "jitter", cfg.Jitter, "largest network delay")
	fs.IntVar(&cfg.Difficulty, "difficulty", cfg.Difficulty, "proof-of-work bits")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	plot := fs.String("plot", "fairgate-sim.svg", "where to write the SVG plot (empty: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.PreQueue < 1 || cfg.Arrivals < 1 || cfg.Rate <= 0 {
		return usageErr("need at least one visitor in each group and a positive rate")
	}
	report, err := sim.RunAll(ctx, cfg)
	if err != nil {
		return err
	}
	if err := report.WriteTable(stdout); err != nil {
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
