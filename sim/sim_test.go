package sim

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

// TestFairness runs a small sale through the gateway's HTTP handler and
// fails if any strategy gains on its honest twin, or any honest visitor's
// token expires. It is the scenario of `fairgate sim`, scaled down.
func TestFairness(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation skipped in -short mode")
	}
	cfg := DefaultConfig
	cfg.PreQueue, cfg.Arrivals = 600/raceScale, 600/raceScale
	cfg.PreQueueSpan, cfg.ArrivalSpan = time.Minute, time.Minute
	// Arrivals (10/s) outpace admissions, so the queue grows as in the
	// full scenario.
	cfg.Rate = 6.0 / raceScale
	cfg.Share = 0.04 * raceScale
	// A fixed clock pairs each visitor with its twin exactly (see FixedTau);
	// at tau 2m the eligible rate outgrows the bucket, so the busy answer
	// and its slots are exercised too.
	cfg.FixedTau = 2 * time.Minute
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
	if r.Expired != 0 {
		t.Errorf("%d tokens expired under honest visitors: places lost", r.Expired)
	}
	// 200 to 600 samples: rho's standard error is at most 1/sqrt(200) = 0.07.
	if math.Abs(r.PreQueueRho) > 0.2 {
		t.Errorf("pre-queue admission order follows arrival order: rho %.4f", r.PreQueueRho)
	}
	if r.ArrivalRho <= 0 {
		t.Errorf("later arrivals not admitted later: rho %.4f", r.ArrivalRho)
	}
	for _, p := range r.Strategies {
		if p.Visitors < 10 {
			t.Errorf("%v: only %d visitors", p.Kind, p.Visitors)
		}
		if p.Kind != AnonTokens && p.Gains() {
			t.Errorf("%v gains: %+v", p.Kind, p)
		}
		if p.Kind == LatePresenter && p.MaxLoss > 3*time.Minute {
			t.Errorf("a late presenter lost %v: more than its lateness", p.MaxLoss)
		}
	}
	var svg bytes.Buffer
	if err := r.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(svg.String(), "<svg") || strings.Count(svg.String(), "<circle") < 150 {
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
