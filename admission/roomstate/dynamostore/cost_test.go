package dynamostore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/dynamostore/cost"
	"github.com/fairgate/fairgate/admission/roomstate/storetest"

	"github.com/fairgate/fairgate/internal/dynamotest"
)

// TestCostPerAdmission drives three nodes over ten seconds of injected
// time with a crowd of 1.2 times the target rate spread 60/30/10 (the
// cost package's load, small: `go run ./bench/roomstate-cost` runs it at
// the scale docs/SCALING.md reports). It checks the counts that do not
// depend on the schedule: one ledger write an admission, three requests a
// node-second, a budget write per block plus a bounded few per window,
// and no window over its limit or under it by more than the nodes can
// strand.
func TestCostPerAdmission(t *testing.T) {
	const nodes = 3
	for _, block := range []int64{1, 4} {
		t.Run(fmt.Sprintf("block%d", block), func(t *testing.T) {
			table := newStore(t, dynamotest.Client(t)).table
			open := func(option func(*dynamodb.Options)) (roomstate.Store, error) {
				return New(dynamotest.Client(t, option), table, 10*time.Second), nil
			}
			load := cost.Load{Rate: 20, Seconds: 10, Share: []float64{0.6, 0.3, 0.1}, Crowd: 1.2, Block: block, Start: storetest.T0}
			r, err := cost.Run(context.Background(), open, load)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range r.Strays(load) {
				t.Error(s)
			}
			if got := cost.Sum(r.Ledger); got != r.Admissions || r.Ledger["UpdateItem"] != r.Admissions {
				t.Errorf("ledger %v for %d admissions, want one UpdateItem each", r.Ledger, r.Admissions)
			}
			if want := map[string]int{"GetItem": nodes * load.Seconds, "PutItem": nodes*load.Seconds + 1, "Query": nodes * load.Seconds}; fmt.Sprint(r.Ticks) != fmt.Sprint(want) {
				t.Errorf("ticks %v, want %v (a control poll, a publish and a sum a node-second, and the room's creation)", r.Ticks, want)
			}
			// Per window: the writes of the blocks admitted, and per node at
			// most a write that finds a full block no longer fits, its
			// smaller retry, and a write that finds the window spent.
			if most := load.Seconds * (int(load.Rate)/int(block) + 1 + 3*nodes); cost.Sum(r.Budget) > most {
				t.Errorf("budget %v, want at most %d requests", r.Budget, most)
			}
			t.Logf("block %d: %d attempts, %d admissions; ledger %v; budget %v; ticks %v", block, r.Attempts, r.Admissions, r.Ledger, r.Budget, r.Ticks)
		})
	}
}
