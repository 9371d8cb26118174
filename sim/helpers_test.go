package sim

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// testSale is DefaultConfig scaled down for a test (and by raceScale under
// the race detector): preQueue visitors arriving over preQueueSpan before
// the start, arrivals over arrivalSpan after it, rate admissions a second.
// A simulation is too long for -short mode: the test is skipped there.
func testSale(t *testing.T, preQueue, arrivals int, preQueueSpan, arrivalSpan time.Duration, rate float64) Config {
	t.Helper()
	if testing.Short() {
		t.Skip("simulation skipped in -short mode")
	}
	cfg := DefaultConfig
	cfg.PreQueue, cfg.Arrivals = preQueue/raceScale, arrivals/raceScale
	cfg.PreQueueSpan, cfg.ArrivalSpan = preQueueSpan, arrivalSpan
	cfg.Rate = rate / raceScale
	return cfg
}

// runAll runs cfg's sale with every strategy and returns the report and
// its table.
func runAll(t *testing.T, cfg Config) (Report, string) {
	t.Helper()
	r, err := RunAll(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	return r, table.String()
}

// checkEveryoneAdmitted fails the test if a visitor was never admitted or
// an honest visitor's token expired (a place lost).
func checkEveryoneAdmitted(t *testing.T, r Report) {
	t.Helper()
	if r.Unadmitted != 0 {
		t.Errorf("%d visitors never admitted", r.Unadmitted)
	}
	if r.Expired != 0 {
		t.Errorf("%d tokens expired under honest visitors: places lost", r.Expired)
	}
}

// simulateHonest runs cfg's sale with honest visitors only and stops the
// test if one was never admitted.
func simulateHonest(t *testing.T, cfg Config) *Run {
	t.Helper()
	run, err := Simulate(context.Background(), cfg, Honest)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range run.Visitors {
		if !v.Done {
			t.Fatalf("visitor %d (lane %q) never admitted", v.ID, v.Lane)
		}
	}
	return run
}
