package admission

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
)

// TestRoomPastBounded: a room whose controller moves the speed at every
// tick for twice its memory keeps at most maxPast readings.
func TestRoomPastBounded(t *testing.T) {
	r := testRoom(t, func(c *RoomConfig) { c.Memory = 5 * time.Minute; c.Adaptive = true })
	for i := 1; i <= 600; i++ {
		now := t0.Add(time.Duration(i) * time.Second)
		r.TickWith(now, float64(1000+500*(i%2)), float64(50+40*(i%3)))
		if n := len(r.View(now).Past); n > maxPast {
			t.Fatalf("tick %d: %d readings kept, more than %d", i, n, maxPast)
		}
	}
	now := t0.Add(600 * time.Second)
	if n := len(r.View(now).Past); n < maxPast/2 {
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

// reserveDues reserves n admissions at now and returns how many are due at
// once.
func reserveDues(r *Room, n int, now time.Time) int {
	atOnce := 0
	for range n {
		if due, _ := r.reserveAdmission(now, now); !due.After(now) {
			atOnce++
		}
	}
	return atOnce
}

// TestAdoptOpensTheBucketAsSetStateDoes: a node that adopts a stored
// control state (another node's admin change, a restore after a failed
// save) treats its bucket as the node that set the state does
// (queue.Bucket.OpenAt): a queue opening carries one admission, an open room
// drops nothing (the adopting node had 5 of 5 due at a queue's opening,
// and 3 of 5 at once in an open room).
func TestAdoptOpensTheBucketAsSetStateDoes(t *testing.T) {
	cfg := func(c *RoomConfig) { c.State = StateOpen; c.Rate = 10; c.Burst = 10 }
	q := t0.Add(time.Hour) // both buckets full by then

	t.Run("open to queue", func(t *testing.T) {
		a, b := testRoom(t, cfg), testRoom(t, cfg)
		if err := a.SetState(StateQueue, time.Time{}, q); err != nil {
			t.Fatal(err)
		}
		if err := b.Adopt(a.Export()); err != nil { // b learns it from the store
			t.Fatal(err)
		}
		na, nb := reserveDues(a, 5, q), reserveDues(b, 5, q)
		if na != 1 {
			t.Fatalf("the node that queued: %d of 5 due at the opening, want 1", na)
		}
		if nb != na {
			t.Errorf("the node that adopted the queue: %d of 5 due at the opening, want %d as the node that set it", nb, na)
		}
	})

	t.Run("queue to open", func(t *testing.T) {
		a, b := testRoom(t, cfg), testRoom(t, cfg)
		for _, r := range []*Room{a, b} {
			if err := r.SetState(StateQueue, time.Time{}, q); err != nil {
				t.Fatal(err)
			}
		}
		open := q.Add(100 * time.Millisecond)
		if err := a.SetState(StateOpen, time.Time{}, open); err != nil {
			t.Fatal(err)
		}
		if err := b.Adopt(a.Export()); err != nil {
			t.Fatal(err)
		}
		at := open.Add(100 * time.Millisecond)
		na, nb := reserveDues(a, 5, at), reserveDues(b, 5, at)
		if na != 5 {
			t.Fatalf("the node that opened: %d of 5 due at once, want 5 (an open room drops nothing)", na)
		}
		if nb != na {
			t.Errorf("the node that adopted the open room: %d of 5 due at once, want %d as the node that set it", nb, na)
		}
	})
}

// TestCompactPastKeepsOriginsExact: readings added one a second at a
// speed that changes every time, compacted as publish does after each;
// the past never holds more than maxPast readings, reads exactly what the
// full record read at every origin it keeps, never runs backwards, and
// the readings not merged yet read exactly as before everywhere.
func TestCompactPastKeepsOriginsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var full, past []queue.Clock
	c := queue.Clock{Origin: t0, Value: 0, Segments: []queue.Segment{{Start: t0, Speed: 0.02}}}
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

// TestStateIsTheViews: State(now) is View(now).State in every state,
// a scheduled room before, at and after its sale start.
func TestStateIsTheViews(t *testing.T) {
	start := t0.Add(time.Hour)
	for _, s := range []State{StateOpen, StateQueue, StateScheduled, StatePaused, StateClosed} {
		r := testRoom(t, func(c *RoomConfig) {
			c.State = s
			if s == StateScheduled {
				c.SaleStart = start
			}
		})
		for _, now := range []time.Time{t0, start.Add(-time.Nanosecond), start, start.Add(time.Minute)} {
			if got, want := r.State(now), r.View(now).State; got != want {
				t.Errorf("%s room at %v: State %q, View's %q", s, now.Sub(t0), got, want)
			}
		}
	}
}
