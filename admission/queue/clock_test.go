package queue

import (
	"math"
	"testing"
	"time"
)

func TestClockAt(t *testing.T) {
	sec := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Second))) }
	// Frozen until 10s, speed 0.1 until 20s, paused until 30s, speed 0.5 after.
	c := Clock{Origin: t0}.Then(sec(10), 0.1).Then(sec(20), 0).Then(sec(30), 0.5)
	tests := []struct {
		at, want float64
	}{
		{-5, 0}, {0, 0}, {10, 0}, {15, 0.5}, {20, 1}, {25, 1}, {30, 1}, {32, 2},
	}
	for _, tt := range tests {
		if got := c.At(sec(tt.at)); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("At(%vs) = %v, want %v", tt.at, got, tt.want)
		}
	}
	for _, tt := range []struct{ target, want float64 }{{0, 0}, {0.5, 15}, {1, 20}, {2, 32}} {
		when, ok := c.When(t0, tt.target)
		if !ok || math.Abs(when.Sub(t0).Seconds()-tt.want) > 1e-6 {
			t.Errorf("When(%v) = %v, %v, want %vs", tt.target, when.Sub(t0), ok, tt.want)
		}
	}
	if _, ok := (Clock{Origin: t0}).Then(t0, 0).When(t0, 1); ok {
		t.Error("a frozen clock reached 1")
	}
	if got := c.SpeedAt(sec(25)); got != 0 {
		t.Errorf("SpeedAt(25s) = %v", got)
	}
}

// TestClockFromNeverReorders: changing speed keeps the past and only changes
// how fast the clock runs from now on.
func TestClockFromNeverReorders(t *testing.T) {
	c := Clock{Origin: t0}.Then(t0, 0.2)
	mid := t0.Add(10 * time.Second)
	d := c.From(mid, 1)
	if d.At(mid) != c.At(mid) {
		t.Fatalf("From moved the clock: %v != %v", d.At(mid), c.At(mid))
	}
	if got := d.At(mid.Add(time.Second)); math.Abs(got-3) > 1e-9 {
		t.Fatalf("after the change: %v, want 3", got)
	}
	if len(d.Segments) != 1 {
		t.Fatalf("From kept %d segments", len(d.Segments))
	}
	// Deterministic: the same control state gives the same reading.
	if d.At(mid.Add(7*time.Second)) != d.From(mid, 1).At(mid.Add(7*time.Second)) {
		t.Fatal("equal clocks disagree")
	}
}

// TestClockPlanKeepsEveryReadingBeforeTheChange: a change planned ahead
// leaves the clock as it was up to the moment it takes effect, the
// changes planned before it included, and From is the plan made now.
func TestClockPlanKeepsEveryReadingBeforeTheChange(t *testing.T) {
	sec := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Second))) }
	// 0.2 a second, a change to 0.5 already planned at 12 s.
	c := Clock{Origin: t0}.Then(t0, 0.2).Then(sec(12), 0.5)
	tests := []struct {
		name         string
		now, at      float64
		speed        float64
		readings     []float64 // seconds at which the plan reads as c
		after, value float64   // a reading after the change
	}{
		{"ahead of a planned change", 10, 14, 1, []float64{0, 10, 11, 12, 13, 14}, 15, c.At(sec(14)) + 1},
		{"before a planned change", 10, 11, 1, []float64{10, 10.5, 11}, 13, c.At(sec(11)) + 2},
		{"now: From", 10, 10, 1, []float64{10}, 11, c.At(sec(10)) + 1},
		{"at before now: now", 10, 5, 0, []float64{10}, 20, c.At(sec(10))},
		{"now before the origin", -3, 2, 0.1, []float64{0, 2}, 4, c.At(sec(2)) + 0.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := c.Plan(sec(tt.now), sec(tt.at), tt.speed)
			for _, s := range tt.readings {
				if got, want := p.At(sec(s)), c.At(sec(s)); math.Abs(got-want) > 1e-9 && !sec(s).Before(p.Origin) {
					t.Errorf("At(%vs) = %v, want %v as before the plan", s, got, want)
				}
			}
			if got := p.At(sec(tt.after)); math.Abs(got-tt.value) > 1e-9 {
				t.Errorf("At(%vs) = %v, want %v", tt.after, got, tt.value)
			}
			if got := p.SpeedAt(sec(tt.after)); got != tt.speed {
				t.Errorf("SpeedAt(%vs) = %v, want %v", tt.after, got, tt.speed)
			}
		})
	}
	if got, want := c.Plan(sec(10), sec(10), 1), c.From(sec(10), 1); got.At(sec(30)) != want.At(sec(30)) || len(got.Segments) != len(want.Segments) {
		t.Errorf("Plan(now, now) = %+v, want From's %+v", got, want)
	}
}
