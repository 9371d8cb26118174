package admission

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestWindowRate(t *testing.T) {
	w := newRateWindow(10 * time.Second)
	for i := range 10 {
		w.add(t0.Add(time.Duration(i)*time.Second), 5)
	}
	// The second in progress is not counted.
	if got := w.rate(t0.Add(9 * time.Second)); got != 4.5 {
		t.Fatalf("Rate = %v, want 4.5", got)
	}
	if got := w.rate(t0.Add(10 * time.Second)); got != 5 {
		t.Fatalf("Rate = %v, want 5", got)
	}
	if got := w.rate(t0.Add(time.Minute)); got != 0 {
		t.Fatalf("stale seconds counted: %v", got)
	}
}

func TestWindowRecentRate(t *testing.T) {
	w := newRateWindow(10 * time.Second)
	// 1 a second for 7 s, then 10 a second for 3 s.
	for i := range 10 {
		x := 1.0
		if i >= 7 {
			x = 10
		}
		w.add(t0.Add(time.Duration(i)*time.Second), x)
	}
	now := t0.Add(10 * time.Second)
	for _, c := range []struct {
		span time.Duration
		want float64
	}{
		{3 * time.Second, 10},
		{5 * time.Second, (2 + 30) / 5.0},
		{0, 10},                        // at least a second
		{time.Minute, (7 + 30) / 10.0}, // at most the window: rate
		{1500 * time.Millisecond, 10},
	} {
		if got := w.recentRate(now, c.span); got != c.want {
			t.Errorf("recentRate(%v) = %v, want %v", c.span, got, c.want)
		}
	}
	if got, want := w.recentRate(now, time.Minute), w.rate(now); got != want {
		t.Errorf("recentRate over the window %v, Rate %v", got, want)
	}
}

// TestPresence: a place presented over and over counts once; the count is
// the last complete span's (or the current one's, when larger); a span
// with nobody forgets everyone; keys splits the places at a clock reading;
// an admitted place is forgotten at once.
func TestPresence(t *testing.T) {
	seen := func() *presence { // a place hammering every 50 ms, and two quiet ones
		p := newPresence(10 * time.Second)
		for i := range 100 {
			p.seeKey(t0.Add(time.Duration(i)*50*time.Millisecond), "hammer", 5)
		}
		p.seeKey(t0.Add(time.Second), "a", 1)
		p.seeKey(t0.Add(2*time.Second), "b", 9)
		return p
	}
	for _, tc := range []struct {
		at   time.Duration
		want float64
	}{
		{5 * time.Second, 3},  // the current span
		{12 * time.Second, 3}, // the last complete span
		{25 * time.Second, 0}, // a whole span with nobody
	} {
		if got := seen().count(t0.Add(tc.at)); got != tc.want {
			t.Errorf("Count at %v = %v, want %v", tc.at, got, tc.want)
		}
	}
	p := seen()
	split := p.keysFrom(t0.Add(5*time.Second), math.Inf(-1), 5, 0, time.Time{})
	if split.passed != 2 || split.unfound != 2 || len(split.ahead) != 1 || split.ahead[0] != 9 {
		t.Fatalf("Keys at 5 = %d passed (%d unfound), ahead %v; want 2 passed (a, hammer) and unfound, ahead [9]", split.passed, split.unfound, split.ahead)
	}
	p.markFound("a")
	if split := p.keysFrom(t0.Add(5*time.Second), math.Inf(-1), 5, 0, time.Time{}); split.passed != 2 || split.unfound != 1 {
		t.Fatalf("Keys at 5 after a was found = %d passed, %d unfound; want 2 and 1 (hammer)", split.passed, split.unfound)
	}
	p.setDue("hammer", t0.Add(time.Minute)) // told a moment far past its key
	if split := p.keysFrom(t0.Add(5*time.Second), 5, 5, 0, t0); split.passed != 1 || split.unfound != 0 {
		t.Fatalf("Keys at 5 read from 5, hammer due in a minute = %d passed, %d unfound; want 1 (hammer, told to come) and 0 (its key passed before 5)", split.passed, split.unfound)
	}
	p.forget("hammer")
	if got := p.count(t0.Add(5 * time.Second)); got != 2 {
		t.Fatalf("Count after Forget = %v, want 2", got)
	}
}

// TestPresencePreQueueKeyFollowsItsSize: a fifo pre-queue place's key is
// its draw times the pre-queue's size when read, however small the
// pre-queue was when the place was last seen.
func TestPresencePreQueueKeyFollowsItsSize(t *testing.T) {
	p := newPresence(time.Minute)
	p.seePreQueue(t0, "early", 100, 0.5) // seen when the pre-queue held 10
	p.seeKey(t0, "later", 130)
	for _, tt := range []struct {
		preQueue float64
		want     []float64
	}{
		{10, []float64{105, 130}},
		{100, []float64{130, 150}},
	} {
		split := p.keysFrom(t0, math.Inf(-1), 100, tt.preQueue, time.Time{})
		if split.passed != 0 || !slices.Equal(split.ahead, tt.want) {
			t.Errorf("pre-queue of %v: passed %d, ahead %v; want 0 and %v", tt.preQueue, split.passed, split.ahead, tt.want)
		}
	}
}
