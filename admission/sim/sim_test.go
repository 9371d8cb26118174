package sim

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

// TestFairness runs a small sale and checks every claim the simulation makes
// about the real gate. It is the same scenario as `fairgate sim`, scaled down.
func TestFairness(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation skipped in -short mode")
	}
	cfg := DefaultConfig
	cfg.PreQueue, cfg.Arrivals = 4000, 4000
	cfg.PreQueueSpan, cfg.ArrivalSpan = 2*time.Minute, 2*time.Minute
	// Arrivals (33/s) outpace admissions, so the queue grows as in the
	// full scenario.
	cfg.Rate = 25
	cfg.PollerShare, cfg.CheaterShare = 0.1, 0.1
	r, err := RunAll(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	if r.Unadmitted != 0 {
		t.Errorf("%d visitors never admitted", r.Unadmitted)
	}
	// 4000 samples: rho's standard error is about 1/sqrt(4000) = 0.016.
	if math.Abs(r.PreQueueRho) > 0.05 {
		t.Errorf("pre-queue admission order follows arrival order: rho %.4f", r.PreQueueRho)
	}
	if r.ArrivalRho <= 0.2 {
		t.Errorf("later arrivals not admitted later: rho %.4f", r.ArrivalRho)
	}
	// The curve is memoryless (docs/DESIGN.md, "Ordering"): a wait follows the queue after the
	// arrival, not the arrival order, so no decile may wait more than about
	// the longest time the queue took to drain.
	for d, w := range r.WaitByDecile {
		if w <= 0 || w > r.Baseline.Duration {
			t.Errorf("decile %d waits %v in a sale of %v", d+1, w, r.Baseline.Duration)
		}
	}
	if math.Abs(r.Poller.Change) > 0.01 || r.Poller.Polls < 10 {
		t.Errorf("refreshing changed the median by %.2f%% (%.1f refreshes each)", 100*r.Poller.Change, r.Poller.Polls)
	}
	if r.Cheater.Change <= 0 {
		t.Errorf("ignoring nxt gained %.2f%%", -100*r.Cheater.Change)
	}
	if len(r.Multi) < 2 || r.Multi[1].Median >= r.Multi[0].Median || r.Multi[1].Hashes != 2*r.Multi[0].Hashes {
		t.Errorf("multi-token table wrong: %+v", r.Multi)
	}
	var svg bytes.Buffer
	if err := r.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(svg.String(), "<svg") || strings.Count(svg.String(), "<circle") < 1000 {
		t.Errorf("plot is empty")
	}
}

func TestSpearman(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5}
	tests := []struct {
		y    []float64
		want float64
	}{
		{[]float64{10, 20, 30, 40, 50}, 1},
		{[]float64{5, 4, 3, 2, 1}, -1},
		{[]float64{1, 1, 2, 2, 3}, 0.9486832980505138},
	}
	for _, tt := range tests {
		if got := Spearman(x, tt.y); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Spearman(%v) = %v, want %v", tt.y, got, tt.want)
		}
	}
}
