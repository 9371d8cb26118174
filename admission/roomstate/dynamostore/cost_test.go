package dynamostore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/storetest"
)

// calls counts DynamoDB requests by operation, each attempt once (the
// counter sits after the retry middleware): what DynamoDB bills.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("countCalls",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				c.n[awsmiddleware.GetOperationName(ctx)]++
				c.mu.Unlock()
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	})
}

func (c *calls) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := 0
	for _, n := range c.n {
		sum += n
	}
	return sum
}

// TestCostPerAdmission drives three nodes over one minute of injected time
// with a crowd of 1.2 times the target rate spread 60/30/10, each attempt
// consuming its place id and taking from the node's Budget, and each node
// doing once a second what a node of the cluster does: poll the control
// state, publish its population, read the sum. It counts the requests (a
// deterministic count, not a timing) for several block sizes, and checks
// that no window admits more than its limit or less than the limit minus
// what the nodes can strand.
func TestCostPerAdmission(t *testing.T) {
	const (
		rate    = 100.0
		seconds = 60
		nodes   = 3
	)
	share := [nodes]float64{0.6, 0.3, 0.1}
	for _, block := range []int64{1, 5, 10, 25} {
		t.Run(fmt.Sprintf("block%d", block), func(t *testing.T) {
			ledgerCalls, budgetCalls, tickCalls := &calls{n: map[string]int{}}, &calls{n: map[string]int{}}, &calls{n: map[string]int{}}
			table := newStore(t, localClient(t)).table
			open := func(c *calls) *Store { return New(localClient(t, c.option), table, 10*time.Second) }
			ledger, budget, ticks := open(ledgerCalls), open(budgetCalls), open(tickCalls)
			ctx := context.Background()
			room := "cost"
			if _, err := ticks.SaveControl(ctx, room, roomstate.Control{State: "queue", Rate: rate}, 0); err != nil {
				t.Fatal(err)
			}
			var budgets [nodes]*roomstate.Budget
			for n := range budgets {
				b, err := roomstate.NewBudget(budget, room, block, time.Second)
				if err != nil {
					t.Fatal(err)
				}
				budgets[n] = b
			}
			admissions, attempts := 0, 0
			for sec := range seconds {
				start := storetest.T0.Add(time.Duration(sec) * time.Second)
				inWindow := 0
				for n := range nodes {
					crowd := int(1.2 * rate * share[n])
					for k := range crowd {
						now := start.Add(time.Duration(k) * time.Second / time.Duration(crowd))
						attempts++
						ok, err := budgets[n].Take(ctx, now, rate)
						if err != nil {
							t.Fatal(err)
						}
						if !ok {
							continue
						}
						won, err := storetest.Consume(ctx, ledger, room, fmt.Sprintf("n%d-%d-%d", n, sec, k), now.Add(time.Hour), now)
						if err != nil || !won {
							t.Fatalf("Consume = %v, %v", won, err)
						}
						admissions++
						inWindow++
					}
					if _, _, err := ticks.LoadControl(ctx, room); err != nil {
						t.Fatal(err)
					}
					if err := ticks.PublishPopulation(ctx, room, fmt.Sprint(n), 1000*share[n], start.Add(5*time.Second)); err != nil {
						t.Fatal(err)
					}
					if _, _, err := ticks.Population(ctx, room, start); err != nil {
						t.Fatal(err)
					}
				}
				if inWindow > rate || inWindow < int(rate)-nodes*int(block-1) {
					t.Errorf("second %d admitted %d at a limit of %v with blocks of %d on %d nodes", sec, inWindow, rate, block, nodes)
				}
			}
			t.Logf("block %d: %d attempts, %d admissions; ledger %d requests (%.3f per admission) %v; budget %d requests (%.3f per admission) %v; per node-second %.2f requests %v",
				block, attempts, admissions,
				ledgerCalls.total(), float64(ledgerCalls.total())/float64(admissions), ledgerCalls.n,
				budgetCalls.total(), float64(budgetCalls.total())/float64(admissions), budgetCalls.n,
				float64(tickCalls.total())/float64(seconds*nodes), tickCalls.n)
		})
	}
}
