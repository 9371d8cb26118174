package queue

import (
	"fmt"
	"math/rand/v2"
	"slices"
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
	for i := range 45 {
		due, ok := p.Pass(fmt.Sprint("place-", i), t0, t0)
		if ok {
			admitted++
			continue
		}
		dues = append(dues, due)
	}
	if admitted != 40 || len(dues) != 5 { // the burst, two seconds of the rate, and a stall's two more
		t.Fatalf("admitted %d at once, %d re-spaced; want 40 and 5", admitted, len(dues))
	}
	p.SetRate(10, 1, t0)
	for i, want := range dues {
		if got, _ := p.Pass(fmt.Sprint("place-", 40+i), t0, t0); !got.Equal(want) {
			t.Fatalf("the rate set again unchanged moved place %d from %v to %v", 40+i, want.Sub(t0), got.Sub(t0))
		}
	}
	cut := t0
	p.SetRate(1, 1, cut)
	prev := cut
	for i := range dues {
		got, ok := p.Pass(fmt.Sprint("place-", 40+i), t0, cut)
		if ok || got.Sub(prev) < 900*time.Millisecond {
			t.Fatalf("after the cut, place %d due %v after the one before it (admitted now: %v); want about a second", 40+i, got.Sub(prev), ok)
		}
		prev = got
	}
}

// TestPacerCreditsALateHolder: with the pacer's bucket spent, a holder
// presenting more than pacerSlack after its slot goes in on credit, down
// to the pacer owing a burst; a holder on time, or within the slack, is
// re-spaced; and what was lent is paid back by the holders after it.
func TestPacerCreditsALateHolder(t *testing.T) {
	const rate = 10 // a burst of 20, two seconds of the rate, in a bucket of 40
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
			for i := range 40 {
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

// TestPacerAbsorbsAStall: holders of slots given at the rate that a stall
// bunched (every holder due during it presenting at its end) pass
// together, whatever order they are served in and whether an attempt
// gives its token back, and the holders after them pass at their slots;
// a stall longer than the bucket holds re-spaces them, as do slots given
// faster than the rate however punctually they come.
func TestPacerAbsorbsAStall(t *testing.T) {
	const rate = 3 // a bucket of 12: a burst of 6, two seconds of the rate, and a stall's 6
	tests := []struct {
		name     string
		spacing  time.Duration // between the slots given
		stall    time.Duration // from holder 30's slot
		order    func([]int)   // the stall's holders, as served
		giveBack bool          // the first one served gives its token back
		respaced bool
	}{
		{"on time", time.Second / rate, 0, nil, false, false},
		{"a three-second stall, in slot order", time.Second / rate, 3 * time.Second, nil, false, false},
		{"a three-second stall, latest slot first", time.Second / rate, 3 * time.Second, func(ids []int) { slices.Reverse(ids) }, false, false},
		{"a three-second stall, shuffled", time.Second / rate, 3 * time.Second, func(ids []int) {
			r := rand.New(rand.NewPCG(1, 2))
			r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		}, false, false},
		{"a three-second stall, an attempt giving its token back", time.Second / rate, 3 * time.Second, nil, true, false},
		{"a five-second stall", time.Second / rate, 5 * time.Second, nil, false, true},
		{"slots at twice the rate, on time", time.Second / (2 * rate), 0, nil, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPacer(rate, 1, t0)
			slot := func(i int) time.Time { return t0.Add(time.Duration(i) * tt.spacing) }
			stallEnd := slot(30).Add(tt.stall)
			var stalled []int
			respaced := 0
			pass := func(i int, now time.Time) {
				if _, ok := p.Pass(fmt.Sprint("holder-", i), slot(i), now); !ok {
					respaced++
				}
			}
			for i := range 90 {
				if tt.stall > 0 && i >= 30 && slot(i).Before(stallEnd) {
					stalled = append(stalled, i)
					continue
				}
				if len(stalled) > 0 { // the stall ends: its holders first
					if tt.order != nil {
						tt.order(stalled)
					}
					for k, j := range stalled {
						pass(j, stallEnd)
						if k == 0 && tt.giveBack {
							p.GiveBack(stallEnd)
							pass(j, stallEnd)
						}
					}
					stalled = nil
				}
				pass(i, slot(i))
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
