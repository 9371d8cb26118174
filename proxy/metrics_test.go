package proxy

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fairgate/fairgate/admission"
)

func TestMetricsRegistered(t *testing.T) {
	e := newEnv(t, Config{Room: "sale"}, nil)
	e.ticket()
	n, err := testutil.GatherAndCount(e.reg, "fairgate_tokens_issued_total", "fairgate_clock_speed", "fairgate_bucket_level", "fairgate_room_state")
	if err != nil || n < 8 {
		t.Fatalf("metrics: %d series, %v", n, err)
	}
	// A reload registers the same room again without error and keeps counting.
	gw2, err := New(Config{Room: "sale", Keys: testKeys}, e.gw.Room(), Options{Now: e.clock.Now, Registerer: e.reg})
	if err != nil {
		t.Fatalf("second gateway for the room: %v", err)
	}
	defer gw2.Close()
	if v := testutil.ToFloat64(gw2.metrics.issued); v != 1 {
		t.Fatalf("issued after reload: %v", v)
	}
}

// TestAttemptsCountedByOutcome: the counters resolved once per outcome
// count into the labelled series, across the gateways of one room.
func TestAttemptsCountedByOutcome(t *testing.T) {
	e := newEnv(t, Config{Room: "sale"}, nil)
	gw2, err := New(Config{Room: "sale", Keys: testKeys}, e.gw.Room(), Options{Now: e.clock.Now, Registerer: e.reg})
	if err != nil {
		t.Fatal(err)
	}
	defer gw2.Close()
	e.gw.metrics.attempt(admission.OutcomeWait)
	gw2.metrics.attempt(admission.OutcomeWait)
	e.gw.metrics.attempt(admission.OutcomeEarly)
	for outcome, want := range map[string]float64{"wait": 2, "early": 1, "admit": 0} {
		if got := testutil.ToFloat64(e.gw.metrics.attempts.WithLabelValues(outcome)); got != want {
			t.Errorf("attempts{outcome=%q} = %v, want %v", outcome, got, want)
		}
	}
}
