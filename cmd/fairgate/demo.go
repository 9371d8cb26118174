package main

import (
	"context"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/fairgate/fairgate/demo"
)

// runDemo is `fairgate demo`: the waiting room in front of a ticket shop.
func runDemo(ctx context.Context, args []string, stdout io.Writer) error {
	opts := demo.Options{Out: stdout}
	fs := newFlags("demo", stdout)
	fs.StringVar(&opts.Listen, "listen", "127.0.0.1:8080", "the site's address")
	fs.StringVar(&opts.Admin, "admin", "127.0.0.1:2020", "Caddy's admin API address (loopback)")
	fs.StringVar(&opts.DB, "db", "", "seat store file (default: a temporary one)")
	fs.IntVar(&opts.Crowd, "crowd", 0, "simulated visitors keeping the queue busy")
	fs.DurationVar(&opts.SaleIn, "sale-in", 0, "start the sale this far ahead, with a pre-queue until then")
	fs.Float64Var(&opts.Rate, "rate", 2, "admissions per second")
	fs.DurationVar(&opts.Tau, "tau", 20*time.Second, "initial mean wait")
	fs.IntVar(&opts.Difficulty, "difficulty", 14, "proof-of-work bits")
	fs.StringVar(&opts.OperatorToken, "operator-token", "", "token of the operator page (default: a random one, printed)")
	verbose := fs.Bool("v", false, "log what the services do")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := requireLoopback(opts.Admin); err != nil {
		return err
	}
	if *verbose {
		log, err := zap.NewDevelopment()
		if err != nil {
			return err
		}
		opts.Logger = log
	}
	return demo.Run(ctx, opts)
}
