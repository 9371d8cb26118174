package admission

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestLotteryClockPassesKeys: a lottery room with the adaptive clock sets
// its speed to pass, in the next second, as many of the keys it knows as
// the places passed and not admitted fall short of a spacing and a second
// of admissions; none while they exceed it; the controller when it knows
// no key ahead. The wait estimate reads the places ahead at the rate.
func TestLotteryClockPassesKeys(t *testing.T) {
	const rate = 10.0
	tests := []struct {
		name   string
		passed int     // places already eligible, not admitted
		want   float64 // keys to pass in the next second
	}{
		{"short of the lead", 0, 0}, // filled in below: the whole lead
		{"half the lead", 15, 0},
		{"over the lead", 100, 0},
	}
	at := t0.Add(10 * time.Second)
	// The grid's spacing 10 s after it opened: 2 s + a tenth of 10 s.
	lead := rate * (1 + 3)
	tests[0].want, tests[1].want = math.Round(lead), math.Round(lead-15)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room := testRoom(t, func(c *RoomConfig) { c.Rate, c.Adaptive = rate, true })
			s := room.View(at).Clock.At(at)
			for i := range tt.passed {
				room.ObservePresent(at, fmt.Sprint("passed", i), s-float64(i+1)/1000)
			}
			for i := range 1000 { // keys ahead, 0.01 apart
				room.ObservePresent(at, fmt.Sprint("ahead", i), s+float64(i+1)/100)
			}
			room.Tick(at)
			got := room.View(at).Cruise
			want := room.controller.MinSpeed
			if tt.want >= 1 {
				want = tt.want / 100
			}
			if math.Abs(got-want) > 1e-6 {
				t.Fatalf("speed %v, want %v (to pass %v keys in a second)", got, want, tt.want)
			}
			// The estimate: the places ahead at the rate, however the
			// clock races or stops.
			if d, ok := room.View(at).EstimateWait(at); !ok || (d-100*time.Second).Abs() > time.Millisecond {
				t.Fatalf("estimate %v %v, want 1000 places ahead at 10/s: 100s", d, ok)
			}
		})
	}
	t.Run("no key ahead", func(t *testing.T) {
		room := testRoom(t, func(c *RoomConfig) { c.Rate, c.Adaptive = rate, true })
		before := room.View(at).Cruise
		room.Tick(at)
		if got := room.View(at).Cruise; got != before {
			t.Fatalf("speed moved from %v to %v with nothing seen", before, got)
		}
	})
}

// TestLotteryClockPassesTheLeadAtTheStart: the last tick before a sale
// start plans the clock to pass the lead in the sale's first moments, not
// over its first second, and to stand after it until the next tick, so
// the first keys' places are eligible at their first checkpoints.
func TestLotteryClockPassesTheLeadAtTheStart(t *testing.T) {
	const rate = 10.0
	start := t0.Add(time.Minute)
	room := testRoom(t, func(c *RoomConfig) {
		c.Rate, c.Adaptive, c.State, c.SaleStart = rate, true, StateScheduled, start
	})
	for i := range 1000 { // pre-queue keys, 0.01 apart
		room.ObservePresent(start.Add(-time.Second), fmt.Sprint("place", i), float64(i+1)/100)
	}
	tick := start.Add(-400 * time.Millisecond)
	room.Tick(tick)
	v := room.View(tick)
	// The grid's spacing at its origin: 2 s; the lead a spacing and a
	// second of admissions.
	lead := rate * (1 + 2)
	tests := []struct {
		at   time.Duration // after the start
		want float64       // keys passed
	}{
		{-time.Millisecond, 0},
		{lotteryStartRamp, lead},
		{900 * time.Millisecond, lead},
	}
	for _, tt := range tests {
		got := v.Clock.At(start.Add(tt.at)) * 100
		if math.Abs(got-tt.want) > 0.5 {
			t.Errorf("%v after the start the clock passed %.1f keys, want %v", tt.at, got, tt.want)
		}
	}
}

// TestLotteryClockAfterTheStartRampReportsItStands: after the start ramp a
// scheduled lottery clock stands until a tick. A cluster ticks only when
// NextCruise's speed moved from the speed now, so the speed now must be
// the standing clock's, not the planned cruise: else a tick that plans the
// same cruise (the keys ahead lie far, and both are MaxSpeed; or no key
// and no visitor) is skipped, and the clock stands for good.
func TestLotteryClockAfterTheStartRampReportsItStands(t *testing.T) {
	const rate = 10.0
	start := t0.Add(time.Minute)
	tests := []struct {
		name string
		keys []float64
	}{
		{"the keys ahead lie far", []float64{0.5, 3, 5}},
		{"no key", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room := testRoom(t, func(c *RoomConfig) {
				c.Rate, c.Adaptive, c.State, c.SaleStart = rate, true, StateScheduled, start
			})
			for i, k := range tt.keys {
				room.ObservePresent(start.Add(-time.Second), fmt.Sprint("place", i), k)
			}
			pop := float64(len(tt.keys))
			room.TickWith(start.Add(-400*time.Millisecond), pop, 0)
			now := start.Add(time.Second)
			next, cur := room.NextCruise(now, pop, 0)
			if speed := room.View(now).Clock.SpeedAt(now); cur != speed {
				t.Errorf("NextCruise: next %v, now %v; the clock runs at %v", next, cur, speed)
			}
		})
	}
}

// TestLotteryClockWithFewKeysHere: on a node holding few of a shared
// room's places, or none, the clock passes what the lead lacks where the
// room's keys are expected (expectedPassing): a key of this node stands
// for many places, and waiting for it would stall the places at the
// other nodes. With keys enough here, or with every place here (a node
// alone on its store), or before the start, it keeps its own rules.
func TestLotteryClockWithFewKeysHere(t *testing.T) {
	const rate = 10.0
	at := t0.Add(10 * time.Second)
	// The grid's spacing 10 s after it opened: 2 s + a tenth of 10 s; a
	// second more of lead where nodes publish their passed places.
	lead := rate * (1 + 3 + 1)
	tests := []struct {
		name       string
		start      time.Duration // sale start after at; 0: not scheduled
		passed     int           // this node's places passed, just presented
		ahead      int           // this node's keys ahead, 0.01 apart
		population float64       // the room's, every node's
		want       float64       // speed; -1: the controller's
	}{
		{"no key here, places elsewhere", 0, 0, 0, 100, -math.Log1p(-lead / 100)},
		{"one key here for a hundred places", 0, 0, 1, 100, -math.Log1p(-lead / 100)},
		{"keys enough here", 0, 0, 50, 100, lead / 2 / 100},
		{"every place here, none ahead", 0, 10, 0, 10, -1},
		{"before the start", 500 * time.Millisecond, 0, 0, 100, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room := testRoom(t, func(c *RoomConfig) {
				c.Rate, c.Adaptive = rate, true
				if tt.start > 0 {
					c.State, c.SaleStart = StateScheduled, at.Add(tt.start)
				}
			})
			s := room.View(at).Clock.At(at)
			for i := range tt.passed {
				room.ObservePresent(at, fmt.Sprint("passed", i), s-float64(i+1)/1000)
			}
			for i := range tt.ahead {
				room.ObservePresent(at, fmt.Sprint("ahead", i), s+float64(i+1)/100)
			}
			before := room.View(at).Cruise
			room.NoteRoomPassed(0, 0, at) // the nodes' sum: none passed
			room.TickWith(at, tt.population, 0)
			got := room.View(at).Cruise
			want := tt.want
			if want < 0 {
				want = room.controller.Next(before, rate, tt.population, 0)
			}
			if math.Abs(got-want) > 1e-6*want {
				t.Fatalf("speed %v, want %v", got, want)
			}
		})
	}
}
