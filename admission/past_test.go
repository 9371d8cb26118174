package admission

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestCompactPastKeepsOriginsExact: readings added one a second at a
// speed that changes every time, compacted as publish does after each;
// the past never holds more than MaxPast readings, reads exactly what the
// full record read at every origin it keeps, never runs backwards, and
// the readings not merged yet read exactly as before everywhere.
func TestCompactPastKeepsOriginsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var full, past []Clock
	c := Clock{Origin: t0, Value: 0, Segments: []Segment{{Start: t0, Speed: 0.02}}}
	for i := 1; i <= 700; i++ {
		now := t0.Add(time.Duration(i) * time.Second)
		full = append(full, c)
		past = compactPast(append(past, c), MaxPast)
		c = c.From(now, 0.01+0.02*rng.Float64())
		if len(past) > MaxPast {
			t.Fatalf("after %d readings the past keeps %d, more than %d", i, len(past), MaxPast)
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

// TestRoomPastBounded: a room whose controller moves the speed at every
// tick for twice its memory keeps at most MaxPast readings.
func TestRoomPastBounded(t *testing.T) {
	r := testRoom(t, func(c *RoomConfig) { c.Memory = 5 * time.Minute; c.Adaptive = true })
	for i := 1; i <= 600; i++ {
		now := t0.Add(time.Duration(i) * time.Second)
		r.TickWith(now, float64(1000+500*(i%2)), float64(50+40*(i%3)))
		if n := len(r.View(now).Past); n > MaxPast {
			t.Fatalf("tick %d: %d readings kept, more than %d", i, n, MaxPast)
		}
	}
	now := t0.Add(600 * time.Second)
	if n := len(r.View(now).Past); n < MaxPast/2 {
		t.Fatalf("only %d readings: the speed did not move enough for the test to mean anything", n)
	}
}
