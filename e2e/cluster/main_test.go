package main

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
)

// t0 is any instant: the driver's arithmetic does not depend on the date.
var t0 = time.Unix(1_700_000_000, 0).UTC()

func TestFormulaMatchesTheClock(t *testing.T) {
	c := queue.Clock{Origin: t0, Value: 3}.Then(t0.Add(2*time.Second), 0.5).Then(t0.Add(10*time.Second), 2)
	for _, d := range []time.Duration{-time.Second, 0, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 11500 * time.Millisecond} {
		at := t0.Add(d)
		if got, want := formula(c, at), c.At(at); math.Abs(got-want) > 1e-12 {
			t.Errorf("formula at %s = %v, queue.Clock.At = %v", d, got, want)
		}
	}
}

func status1(c queue.Clock, now time.Time, reported float64) status {
	return status{Clock: reported, ClockSpeed: c.SpeedAt(now), Now: now.Format(time.RFC3339Nano), ClockState: c}
}

func TestClockAgreement(t *testing.T) {
	base := queue.Clock{Origin: t0, Value: 10, Segments: []queue.Segment{{Start: t0, Speed: 1}}}
	rebased := base.From(t0.Add(3*time.Second), 1) // the same line, another origin
	other := queue.Clock{Origin: t0, Value: 10.5, Segments: []queue.Segment{{Start: t0, Speed: 1}}}
	n1, n2 := t0.Add(4*time.Second), t0.Add(4*time.Second+300*time.Millisecond)
	tests := []struct {
		name      string
		sts       []status
		same      bool
		worstOver time.Duration
	}{
		{"one clock", []status{status1(base, n1, base.At(n1)), status1(base, n2, base.At(n2))}, true, 0},
		{"re-based at another origin", []status{status1(base, n1, base.At(n1)), status1(rebased, n2, rebased.At(n2))}, true, 0},
		{"reading 2 ms off", []status{status1(base, n1, base.At(n1)), status1(base, n2, base.At(n2)+0.002)}, true, time.Millisecond},
		{"another clock", []status{status1(base, n1, base.At(n1)), status1(other, n2, other.At(n2))}, false, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			worst, same, detail := clockAgreement(tt.sts)
			if same != tt.same {
				t.Errorf("same = %v, want %v (%s)", same, tt.same, detail)
			}
			if tt.worstOver == 0 && worst > time.Microsecond || tt.worstOver > 0 && worst <= tt.worstOver {
				t.Errorf("worst = %s, want %s (%s)", worst, map[bool]string{true: "over " + tt.worstOver.String(), false: "about 0"}[tt.worstOver > 0], detail)
			}
		})
	}
}

func TestAdmissionsCountByDecisionSecond(t *testing.T) {
	c := &crowd{nodes: make([]*node, 2)}
	// Decided in second 0 but answered in second 2; decided in 1; a 429.
	c.answers = []answer{
		{at: t0.Add(2500 * time.Millisecond), node: 0, status: http.StatusOK, decided: t0.Unix()},
		{at: t0.Add(1200 * time.Millisecond), node: 1, status: http.StatusOK, decided: t0.Unix() + 1},
		{at: t0.Add(1300 * time.Millisecond), node: 1, status: http.StatusTooManyRequests},
	}
	tests := []struct {
		from, to time.Time
		want     int
	}{
		{t0, t0.Add(time.Second), 1},
		{t0, t0.Add(2 * time.Second), 2},
		{t0.Add(time.Second), t0.Add(3 * time.Second), 1},
		{t0.Add(500 * time.Millisecond), t0.Add(2 * time.Second), 1}, // second 0 only partly in: left out
		{t0.Add(2 * time.Second), t0.Add(3 * time.Second), 0},
	}
	for _, tt := range tests {
		if got, _ := c.admissions(tt.from, tt.to); got != tt.want {
			t.Errorf("admissions(%s, %s) = %d, want %d", tt.from.Sub(t0), tt.to.Sub(t0), got, tt.want)
		}
	}
}

func TestStoreHealth(t *testing.T) {
	before := map[string]float64{
		`fairgate_state_store_call_seconds_sum{op="hold_place",room="r"}`:   1,
		`fairgate_state_store_call_seconds_count{op="hold_place",room="r"}`: 10,
	}
	after := map[string]float64{
		`fairgate_state_store_call_seconds_sum{op="hold_place",room="r"}`:       2,
		`fairgate_state_store_call_seconds_count{op="hold_place",room="r"}`:     20,
		`fairgate_state_store_call_seconds_sum{op="reserve_budget",room="r"}`:   3,
		`fairgate_state_store_call_seconds_count{op="reserve_budget",room="r"}`: 10,
		`fairgate_state_store_call_seconds_sum{op="lookup_place",room="r"}`:     100,
		`fairgate_state_store_call_seconds_count{op="lookup_place",room="r"}`:   1,
		`fairgate_state_store_errors_total{op="hold_place",room="r"}`:           2,
	}
	errs, mean := storeHealth(before, after)
	// Writes: (2-1) + 3 seconds over (20-10) + 10 calls; look-ups left out.
	if errs != 2 || mean != 200*time.Millisecond {
		t.Errorf("storeHealth = %v errors, %s mean; want 2, 200ms", errs, mean)
	}
}
