package admission

import (
	"testing"
	"time"
)

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

func TestNewRoomValidates(t *testing.T) {
	bad := []func(*RoomConfig){
		func(c *RoomConfig) { c.Name = "" },
		func(c *RoomConfig) { c.State = "busy" },
		func(c *RoomConfig) { c.Rate = 0 },
		func(c *RoomConfig) { c.Tau = 0 },
		func(c *RoomConfig) { c.Difficulty = 40 },
		func(c *RoomConfig) { c.State = StateScheduled },
	}
	for i, mutate := range bad {
		cfg := RoomConfig{Name: "r", State: StateQueue, Rate: 1, Tau: time.Second}
		mutate(&cfg)
		if _, err := NewRoom(cfg, t0); err == nil {
			t.Errorf("case %d: invalid config accepted: %+v", i, cfg)
		}
	}
}
