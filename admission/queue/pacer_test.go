package queue

import (
	"fmt"
	"testing"
	"time"
)

// TestPacerRespacesOnARateChange: places re-spaced at 10/s before a cut
// to 1/s are re-spaced at the new rate, in the same order; a rate set again
// unchanged (a cluster node's share, every tick) moves nobody.
func TestPacerRespacesOnARateChange(t *testing.T) {
	p := NewPacer(10, 1, t0)
	admitted := 0
	var dues []time.Time
	for i := range 25 {
		due, ok := p.Pass(fmt.Sprint("place-", i), t0, t0)
		if ok {
			admitted++
			continue
		}
		dues = append(dues, due)
	}
	if admitted != 20 || len(dues) != 5 { // the burst: two seconds of the rate
		t.Fatalf("admitted %d at once, %d re-spaced; want 20 and 5", admitted, len(dues))
	}
	p.SetRate(10, 1, t0)
	for i, want := range dues {
		if got, _ := p.Pass(fmt.Sprint("place-", 20+i), t0, t0); !got.Equal(want) {
			t.Fatalf("the rate set again unchanged moved place %d from %v to %v", 20+i, want.Sub(t0), got.Sub(t0))
		}
	}
	cut := t0
	p.SetRate(1, 1, cut)
	prev := cut
	for i := range dues {
		got, ok := p.Pass(fmt.Sprint("place-", 20+i), t0, cut)
		if ok || got.Sub(prev) < 900*time.Millisecond {
			t.Fatalf("after the cut, place %d due %v after the one before it (admitted now: %v); want about a second", 20+i, got.Sub(prev), ok)
		}
		prev = got
	}
}

// TestPacerCreditsALateHolder: with the pacer's burst spent, a holder
// presenting more than pacerSlack after its slot goes in on credit, down
// to the pacer owing a burst; a holder on time, or within the slack, is
// re-spaced; and what was lent is paid back by the holders after it.
func TestPacerCreditsALateHolder(t *testing.T) {
	const rate = 10 // a burst of 20: two seconds of the rate
	tests := []struct {
		name     string
		late     time.Duration // how long after its slot each holder presents
		holders  int           // presenting after the burst is spent
		admitted int
	}{
		{"on time", 0, 5, 0},
		{"within the slack", PacerSlack, 5, 0},
		{"a minute late", time.Minute, 1, 1},
		{"a late crowd: one burst on credit", time.Minute, 30, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPacer(rate, 1, t0)
			for i := range 20 {
				if _, ok := p.Pass(fmt.Sprint("burst-", i), t0, t0); !ok {
					t.Fatalf("burst holder %d re-spaced", i)
				}
			}
			admitted := 0
			var last time.Time
			for i := range tt.holders {
				due, ok := p.Pass(fmt.Sprint("holder-", i), t0.Add(-tt.late), t0)
				if ok {
					admitted++
					continue
				}
				last = due
			}
			if admitted != tt.admitted {
				t.Errorf("%d of %d admitted, want %d", admitted, tt.holders, tt.admitted)
			}
			// Every holder past the burst is paid for at the rate: the
			// last re-spaced one is due when the pacer has refilled them.
			if want := t0.Add(time.Duration(tt.holders) * time.Second / rate); !last.IsZero() && !last.Equal(want) {
				t.Errorf("last holder due %v after the burst, want %v", last.Sub(t0), want.Sub(t0))
			}
			due, ok := p.Pass("on-time-after", t0, t0)
			if want := t0.Add(time.Duration(tt.holders+1) * time.Second / rate); ok || !due.Equal(want) {
				t.Errorf("an on-time holder after them: due %v (admitted %v), want re-spaced to %v", due.Sub(t0), ok, want.Sub(t0))
			}
		})
	}
}

// TestPacerCountsSlotsAtTheirOwnTime: holders of slots given at the rate
// pass however their arrivals bunch within the pacer's reach (a node or
// its visitors stalled for up to the slack plus the burst, every holder
// of the stall presenting at its end); beyond it, and for slots given
// faster than the rate however punctually they come, holders are
// re-spaced.
func TestPacerCountsSlotsAtTheirOwnTime(t *testing.T) {
	const rate = 3 // a burst of 6: two seconds of the rate
	tests := []struct {
		name      string
		spacing   time.Duration // between the slots given
		stallFrom int           // the first holder caught by the stall
		stall     time.Duration // its holders present at its end
		respaced  bool
	}{
		{"on time", time.Second / rate, 0, 0, false},
		{"a three-second stall", time.Second / rate, 30, 3 * time.Second, false},
		{"a ten-second stall", time.Second / rate, 30, 10 * time.Second, true},
		{"slots at twice the rate, on time", time.Second / (2 * rate), 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPacer(rate, 1, t0)
			stallEnd := t0.Add(time.Duration(tt.stallFrom)*tt.spacing + tt.stall)
			respaced := 0
			for i := range 90 {
				slot := t0.Add(time.Duration(i) * tt.spacing)
				now := slot
				if tt.stall > 0 && i >= tt.stallFrom && slot.Before(stallEnd) {
					now = stallEnd
				}
				if _, ok := p.Pass(fmt.Sprint("holder-", i), slot, now); !ok {
					respaced++
				}
			}
			if got := respaced > 0; got != tt.respaced {
				t.Fatalf("%d of 90 holders re-spaced; want some: %v", respaced, tt.respaced)
			}
		})
	}
}

// TestPacerTakesOneTokenPerAttempt: an attempt that passes takes a token
// and one whose admission did not go through gives it back; a place
// admitted with a re-spaced slot still to come gives back that slot's.
func TestPacerTakesOneTokenPerAttempt(t *testing.T) {
	p := NewPacer(1, 1, t0)
	level := p.Level(t0)
	if _, ok := p.Pass("a", t0, t0); !ok {
		t.Fatal("the first attempt did not pass")
	}
	if got := p.Level(t0); got != level-1 {
		t.Fatalf("an attempt that passed left the pacer at %.3f, want %.3f", got, level-1)
	}
	p.GiveBack(t0)
	if got := p.Level(t0); got != level {
		t.Fatalf("after the attempt gave its token back: %.3f, want %.3f", got, level)
	}
	if _, ok := p.Pass("a", t0, t0); !ok {
		t.Fatal("the place did not pass after its attempt gave the token back")
	}
	for i := 0; ; i++ { // the rest of the burst
		if _, ok := p.Pass(fmt.Sprint("other-", i), t0, t0); !ok {
			break
		}
	}
	spent := p.Level(t0)
	if due, ok := p.Pass("b", t0, t0); ok || !due.After(t0) {
		t.Fatalf("a place with the pacer spent: passed %v, due %v; want re-spaced", ok, due)
	}
	p.Admitted("b", t0) // another version of b was admitted meanwhile
	if got := p.Level(t0); got != spent {
		t.Fatalf("after b's re-spaced slot went back: %.3f, want %.3f", got, spent)
	}
}
