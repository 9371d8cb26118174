package gateway

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/room"
)

func TestQueueOrderConfig(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		option string // the room.OptionError expected, "" for none
	}{
		{"default", Config{}, ""},
		{"fifo", Config{Config: room.Config{QueueOrder: "fifo"}}, ""},
		{"fifo with a window", Config{Config: room.Config{QueueOrder: "fifo", LuckWindow: Duration(2 * time.Second)}}, ""},
		{"unknown order", Config{Config: room.Config{QueueOrder: "lifo"}}, "queue_order"},
		{"window without fifo", Config{Config: room.Config{LuckWindow: Duration(2 * time.Second)}}, "luck_window"},
		{"negative window", Config{Config: room.Config{QueueOrder: "fifo", LuckWindow: Duration(-time.Second)}}, "luck_window"},
		{"fifo shared by nodes", Config{Config: room.Config{QueueOrder: "fifo", StateStore: &room.StateStore{Type: room.StoreDynamo}}}, ""},
		{"fifo on one machine's file", Config{Config: room.Config{QueueOrder: "fifo", StateStore: &room.StateStore{Type: room.StoreBolt, Path: "rooms.db"}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			var oe *room.OptionError
			switch {
			case tt.option == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.option != "" && (!errors.As(err, &oe) || oe.Option != tt.option):
				t.Fatalf("Validate = %v, want an error for %s", err, tt.option)
			}
		})
	}
}

// TestQueueOrderKeptOnReload: the places waiting hold keys of one rule; a
// reload to the other is refused, and a new luck window applies.
func TestQueueOrderKeptOnReload(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", QueueOrder: "fifo"}}, nil)
	sh := e.gw.Room()
	if _, err := New(Config{Config: room.Config{Room: "sale", Keys: testKeys, QueueOrder: "lottery"}}, sh, Options{Now: e.clock.Now}); err == nil || !strings.Contains(err.Error(), "queue_order") {
		t.Fatalf("changing the order on reload: %v, want refused", err)
	}
	gw3, err := New(Config{Config: room.Config{Room: "sale", Keys: testKeys, QueueOrder: "fifo", LuckWindow: Duration(time.Second)}}, sh, Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer gw3.Close()
	if err := gw3.ApplyConfig(); err != nil {
		t.Fatal(err)
	}
	if w := sh.Room.View(e.clock.Now()).Luck; w != time.Second {
		t.Fatalf("luck window after reload: %v, want 1s", w)
	}
}

// TestFIFOAdmitsInArrivalOrder: through the gateway, with a luck window far
// below the gap between arrivals, visitors queued in a fifo room are
// admitted in the order they arrived, at the room's rate.
func TestFIFOAdmitsInArrivalOrder(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", QueueOrder: "fifo", LuckWindow: Duration(time.Millisecond), Rate: 1, Burst: 1}}, nil)
	var vs []*waiter
	start := e.clock.Now()
	for step := range 400 {
		now := start.Add(time.Duration(step) * 100 * time.Millisecond)
		e.clock.Set(now)
		e.gw.Room().Tick(now)
		if step%3 == 0 && len(vs) < 8 { // 300 ms apart; each claims its rank at its first checkpoint
			vs = append(vs, e.arrive(now))
		}
		for _, v := range vs {
			e.step(v, now)
		}
	}
	for i, v := range vs {
		if v.admitted.IsZero() {
			t.Fatalf("visitor %d never admitted", i)
		}
		if i > 0 && v.admitted.Before(vs[i-1].admitted) {
			t.Errorf("visitor %d admitted at %v, before visitor %d at %v", i, v.admitted.Sub(start), i-1, vs[i-1].admitted.Sub(start))
		}
	}
	if span := vs[len(vs)-1].admitted.Sub(vs[0].admitted); span < 5*time.Second {
		t.Errorf("8 visitors admitted within %v at 1/s", span)
	}
}
