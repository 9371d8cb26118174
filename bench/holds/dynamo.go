package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// callTimes times every DynamoDB call by operation, the SDK's retries
// included, so a run on DynamoDB says where a hold's time goes: one row per
// operation under each run's row (the load alone: the clients' set-up is
// not counted).
type callTimes struct {
	mu  sync.Mutex
	ops map[string][]time.Duration
}

// middleware adds the timer to a client's stack (dynamodb.Options.APIOptions).
func (c *callTimes) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("HoldsBenchTimer",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			start := time.Now()
			out, md, err := next.HandleInitialize(ctx, in)
			c.add(awsmiddleware.GetOperationName(ctx), time.Since(start))
			return out, md, err
		}), middleware.Before)
}

func (c *callTimes) add(op string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ops == nil {
		c.ops = map[string][]time.Duration{}
	}
	c.ops[op] = append(c.ops[op], d)
}

// reset forgets the calls so far.
func (c *callTimes) reset() {
	c.mu.Lock()
	c.ops = nil
	c.mu.Unlock()
}

// report prints the calls since the last report (or reset), per operation, and
// forgets them.
func (c *callTimes) report(mode string) {
	c.mu.Lock()
	ops := c.ops
	c.ops = nil
	c.mu.Unlock()
	names := slices.Sorted(func(yield func(string) bool) {
		for op := range ops {
			if !yield(op) {
				return
			}
		}
	})
	for _, op := range names {
		lat := ops[op]
		slices.Sort(lat)
		pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))].Round(10 * time.Microsecond) }
		fmt.Printf("|   | %s: DynamoDB %s | | %d calls | | %v | %v | | | |\n", mode, op, len(lat), pct(0.5), pct(0.99))
	}
}
