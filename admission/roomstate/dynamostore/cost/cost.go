// Package cost counts what a cluster's room-state traffic costs on
// DynamoDB: it drives several nodes' budget, ledger and once-a-second
// calls over injected time against one table and counts the requests
// DynamoDB receives, by operation. Counts, not timings: they do not depend
// on the machine. dynamostore's tests run it small; `go run
// ./bench/roomstate-cost` runs it at the scale docs/SCALING.md reports.
package cost

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/roomstate"
)

// Load is the traffic: for Seconds of injected time from Start, a crowd
// of Crowd × Rate attempts a second, spread over the nodes as Share,
// against one-second budget windows of Rate reserved Block at a time.
type Load struct {
	Rate    float64
	Seconds int
	Share   []float64 // one entry a node, summing to 1
	Crowd   float64   // attempts a second as a multiple of Rate
	Block   int64
	Start   time.Time
}

// Result is what a run admitted and what it cost.
type Result struct {
	Attempts, Admissions int
	// Windows is how many were admitted in each one-second window.
	Windows []int
	// Ledger, Budget and Ticks count DynamoDB requests by operation: the
	// ledger's (a conditional write an admission), the budget's, and the
	// once-a-second calls of every node (control poll, population publish
	// and sum).
	Ledger, Budget, Ticks map[string]int
}

// Sum is the requests of one count.
func Sum(calls map[string]int) int {
	n := 0
	for _, c := range calls {
		n += c
	}
	return n
}

// Open returns a store on the run's table whose client takes the option
// (the counter).
type Open func(option func(*dynamodb.Options)) (roomstate.Store, error)

// Run drives the load over stores from open, one each for the ledger, the
// budget and the ticks, so each is counted apart. It stops at the first
// store error.
func Run(ctx context.Context, open Open, l Load) (Result, error) {
	var ledgerCalls, budgetCalls, tickCalls counter
	ledger, err := open(ledgerCalls.option)
	if err != nil {
		return Result{}, err
	}
	budget, err := open(budgetCalls.option)
	if err != nil {
		return Result{}, err
	}
	ticks, err := open(tickCalls.option)
	if err != nil {
		return Result{}, err
	}
	const room = "cost"
	if _, err := ticks.SaveControl(ctx, room, roomstate.Control{State: "queue", Rate: l.Rate}, 0); err != nil {
		return Result{}, fmt.Errorf("creating the room: %w", err)
	}
	budgets := make([]*roomstate.Budget, len(l.Share))
	for n := range budgets {
		if budgets[n], err = roomstate.NewBudget(budget, room, l.Block, time.Second); err != nil {
			return Result{}, err
		}
	}
	var r Result
	for sec := range l.Seconds {
		start := l.Start.Add(time.Duration(sec) * time.Second)
		inWindow := 0
		for n, share := range l.Share {
			crowd := int(l.Crowd * l.Rate * share)
			for k := range crowd {
				now := start.Add(time.Duration(k) * time.Second / time.Duration(crowd))
				r.Attempts++
				ok, err := budgets[n].Take(ctx, now, l.Rate)
				if err != nil {
					return r, fmt.Errorf("taking from node %d's budget: %w", n, err)
				}
				if !ok {
					continue
				}
				id := fmt.Sprintf("n%d-%d-%d", n, sec, k)
				if _, won, err := ledger.HoldPlace(ctx, room, id, queue.Place{State: queue.PlaceUsed}, now.Add(time.Hour), now); err != nil || !won {
					return r, fmt.Errorf("holding place %s: won %v, %w", id, won, err)
				}
				r.Admissions++
				inWindow++
			}
			if _, _, err := ticks.LoadControl(ctx, room); err != nil {
				return r, err
			}
			if err := ticks.PublishPopulation(ctx, room, fmt.Sprint(n), 1000*share, start.Add(5*time.Second)); err != nil {
				return r, err
			}
			if _, _, err := ticks.Population(ctx, room, start); err != nil {
				return r, err
			}
		}
		r.Windows = append(r.Windows, inWindow)
	}
	r.Ledger, r.Budget, r.Ticks = ledgerCalls.counts(), budgetCalls.counts(), tickCalls.counts()
	return r, nil
}

// counter counts DynamoDB requests by operation, each attempt once (it
// sits after the SDK's retry middleware): what DynamoDB bills.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("countCalls",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				if c.n == nil {
					c.n = map[string]int{}
				}
				c.n[awsmiddleware.GetOperationName(ctx)]++
				c.mu.Unlock()
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	})
}

func (c *counter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// Strays are the windows that admitted more than the limit, or less than
// the limit minus what the nodes can strand (block − 1 each), as
// sentences; none when the budget held.
func (r Result) Strays(l Load) []string {
	var out []string
	limit := int(l.Rate)
	least := limit - len(l.Share)*int(l.Block-1)
	for sec, n := range r.Windows {
		if n > limit || n < least {
			out = append(out, fmt.Sprintf("second %d admitted %d at a limit of %d with blocks of %d on %d nodes", sec, n, limit, l.Block, len(l.Share)))
		}
	}
	return out
}
