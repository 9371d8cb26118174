package admission

import (
	"encoding/json"
	"math"
	"math/rand/v2"
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
		when, ok := c.when(t0, tt.target)
		if !ok || math.Abs(when.Sub(t0).Seconds()-tt.want) > 1e-6 {
			t.Errorf("When(%v) = %v, %v, want %vs", tt.target, when.Sub(t0), ok, tt.want)
		}
	}
	if _, ok := (Clock{Origin: t0}).Then(t0, 0).when(t0, 1); ok {
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

// TestCompactPastKeepsOriginsExact: readings added one a second at a
// speed that changes every time, compacted as publish does after each;
// the past never holds more than maxPast readings, reads exactly what the
// full record read at every origin it keeps, never runs backwards, and
// the readings not merged yet read exactly as before everywhere.
func TestCompactPastKeepsOriginsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var full, past []Clock
	c := Clock{Origin: t0, Value: 0, Segments: []Segment{{Start: t0, Speed: 0.02}}}
	for i := 1; i <= 700; i++ {
		now := t0.Add(time.Duration(i) * time.Second)
		full = append(full, c)
		past = compactPast(append(past, c), maxPast)
		c = c.From(now, 0.01+0.02*rng.Float64())
		if len(past) > maxPast {
			t.Fatalf("after %d readings the past keeps %d, more than %d", i, len(past), maxPast)
		}
	}
	exact, merged := View{Clock: c, Past: full}, View{Clock: c, Past: past}
	for _, p := range past {
		if a, b := merged.ClockAt(p.Origin), exact.ClockAt(p.Origin); math.Abs(a-b) > 1e-9 {
			t.Fatalf("at a kept origin %v the merged past reads %v, the full one %v", p.Origin.Sub(t0), a, b)
		}
	}
	prev, worst := -1.0, 0.0
	for ms := int64(0); ms <= 700_000; ms += 250 {
		at := t0.Add(time.Duration(ms) * time.Millisecond)
		s := merged.ClockAt(at)
		if s < prev-1e-12 {
			t.Fatalf("the merged past runs backwards at %v: %v after %v", at.Sub(t0), s, prev)
		}
		prev = s
		worst = math.Max(worst, math.Abs(s-exact.ClockAt(at)))
	}
	// The newer half is never merged: the recent past is exact.
	last := past[len(past)/2+1]
	for at := last.Origin; at.Before(c.Origin); at = at.Add(100 * time.Millisecond) {
		if a, b := merged.ClockAt(at), exact.ClockAt(at); a != b {
			t.Fatalf("the newest reading at %v reads %v, the full past %v", at.Sub(t0), a, b)
		}
	}
	// Bounded size: the stored JSON of the past.
	b, err := json.Marshal(past)
	if err != nil {
		t.Fatal(err)
	}
	full = full[max(0, len(full)-660):] // what 11 minutes of memory kept before
	fb, _ := json.Marshal(full)
	t.Logf("%d readings merged into %d: %d bytes of JSON instead of %d; worst deviation %.4f clock units (speeds 0.01-0.03/s)", 700, len(past), len(b), len(fb), worst)
	if len(b) > 10_000 {
		t.Fatalf("the past is %d bytes of JSON, over 10 KB", len(b))
	}
}
