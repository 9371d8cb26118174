package main

import (
	"context"
	"io"
	"time"

	"github.com/fairgate/fairgate/admission/sim"
)

// demo shows the waiting room at work. Until the gateway and the ticket
// shop land (issues 3 to 6), it runs a small sale through the real admission
// core in simulated time and prints what happened to whom.
func demo(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("demo", stdout)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := sim.DefaultConfig
	cfg.PreQueue, cfg.Arrivals = 5000, 5000
	cfg.PreQueueSpan, cfg.ArrivalSpan = 2*time.Minute, 2*time.Minute
	cfg.Rate = 30
	if _, err := io.WriteString(stdout, "fairgate demo: a small sale through the admission core, in simulated time\n\n"); err != nil {
		return err
	}
	report, err := sim.RunAll(ctx, cfg)
	if err != nil {
		return err
	}
	return report.WriteTable(stdout)
}
