package roomstate_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/boltstore"
)

// openBolt is a bolt store in the test's temporary folder, with the default
// call timeout, closed with the test.
func openBolt(t *testing.T) *boltstore.Store {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "room.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// reserveNow is b's slot for a place found at now at a steady rate,
// failing the test on an error.
func reserveNow(t *testing.T, b *roomstate.Budget, now time.Time, rate float64) time.Time {
	t.Helper()
	slot, err := b.Reserve(t.Context(), now, now, roomstate.Steady(rate))
	if err != nil {
		t.Fatal(err)
	}
	return slot
}

// twoNodes is two nodes' budgets of one room on one bolt store, reserving
// an admission at a time in 1 s windows.
func twoNodes(t *testing.T) [2]*roomstate.Budget {
	t.Helper()
	st := openBolt(t)
	var nodes [2]*roomstate.Budget
	for i := range nodes {
		b, err := roomstate.NewBudget(st, "room", 1, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = b
	}
	return nodes
}
