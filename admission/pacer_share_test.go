package admission

import (
	"fmt"
	"testing"
	"time"
)

// TestANodeAloneHoldsSlotsToItsShareAfterACut: a cluster node whose store
// is down admits under on_unavailable local with its own bucket as the
// only cap ("the cluster may admit up to the sum of the shares",
// docs/SCALING.md). Its bucket gave slots at its share of the old rate;
// the rate is cut: the holders it still has are spaced at its share of
// the new rate, as every other node's are, not each at the room's whole
// new rate (two nodes so would admit twice the rate cut to).
func TestANodeAloneHoldsSlotsToItsShareAfterACut(t *testing.T) {
	const share = 0.5
	room := testRoom(t, func(c *RoomConfig) { c.Rate = 20; c.Burst = 20 })
	room.SetBucketRate(20*share, 20*share, t0) // one of two nodes
	type holder struct {
		place    string
		slot, at time.Time
	}
	var holders []holder
	for i := range 100 {
		slot, _ := room.ReserveAdmission(t0, t0)
		holders = append(holders, holder{fmt.Sprint("place-", i), slot, slot})
	}
	const rate, burst = 4.0, 4.0
	if err := room.SetRate(rate, burst, t0); err != nil {
		t.Fatal(err)
	}
	room.SetBucketRate(rate*share, burst*share, t0)
	// Each holder presents at its slot, and at its re-spaced slot until
	// the pacer passes it.
	end := t0.Add(10 * time.Second)
	admitted := 0
	for len(holders) > 0 {
		next := 0
		for i, h := range holders {
			if h.at.Before(holders[next].at) {
				next = i
			}
		}
		h := holders[next]
		if !h.at.Before(end) {
			break
		}
		due, ok := room.PaceSlot(h.place, h.slot, h.at)
		if !ok {
			holders[next].at = due
			continue
		}
		room.ObserveAdmitted(h.place, h.at)
		admitted++
		holders = append(holders[:next], holders[next+1:]...)
	}
	// The share of the new rate over 10 s, and a pacer's burst of it.
	if most := int(rate*share*10 + pacerBurst(rate*share, burst*share)); admitted > most {
		t.Errorf("the node admitted %d slot holders in the 10 s after the cut, want at most %d (its share of %v/s)", admitted, most, rate)
	}
}

// TestPacerRunsAtTheRoomRateWhileABudgetBinds: a node's pacer re-spaces
// slot holders at the room's rate while a shared budget caps every node
// (a slot may be presented at any node), and at the node's share when
// nothing but its own bucket caps it: alone, or with a budget that admits
// when its store fails.
func TestPacerRunsAtTheRoomRateWhileABudgetBinds(t *testing.T) {
	for _, tt := range []struct {
		name   string
		budget Quota
		want   float64
	}{
		{"a binding budget", &budgetUntil{}, 20},
		{"a budget that admits on failure", &budgetUntil{local: true}, 5},
		{"no budget", nil, 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			room := testRoom(t, func(c *RoomConfig) { c.Rate = 20; c.Burst = 20 })
			room.SetQuota(tt.budget)
			room.SetBucketRate(5, 5, t0)
			if got := room.pacer.rate; got != tt.want {
				t.Errorf("pacer at %v/s, want %v/s", got, tt.want)
			}
		})
	}
}
