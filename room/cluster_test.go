package room

import (
	"math"
	"testing"
)

// TestDemandShare: the ticking node's share of the admissions, from which
// the count's lag follows, is its demand over every node's, within [0, 1].
func TestDemandShare(t *testing.T) {
	for _, tc := range []struct {
		mine, all, want float64
	}{
		{6, 10, 0.6},
		{0, 10, 0},
		{10, 10, 1},
		{12, 10, 1}, // published before this node's latest demand
		{3, 0, 0},
		{-1, 10, 0},
	} {
		if got := demandShare(tc.mine, tc.all); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("demandShare(%v, %v) = %v, want %v", tc.mine, tc.all, got, tc.want)
		}
	}
}
