package admission

import (
	"fmt"
	"testing"
	"time"
)

// TestPacerRespacesOnARateChange: places re-spaced at 10/s before a cut
// to 1/s are re-spaced at the new rate, in the same order; a rate set again
// unchanged (a cluster node's share, every tick) moves nobody.
func TestPacerRespacesOnARateChange(t *testing.T) {
	p := newPacer(10, 1, t0)
	admitted := 0
	var dues []time.Time
	for i := range 25 {
		due, ok := p.pass(fmt.Sprint("place-", i), t0, t0)
		if ok {
			admitted++
			continue
		}
		dues = append(dues, due)
	}
	if admitted != 20 || len(dues) != 5 { // the burst: two seconds of the rate
		t.Fatalf("admitted %d at once, %d re-spaced; want 20 and 5", admitted, len(dues))
	}
	p.setRate(10, 1, t0)
	for i, want := range dues {
		if got, _ := p.pass(fmt.Sprint("place-", 20+i), t0, t0); !got.Equal(want) {
			t.Fatalf("the rate set again unchanged moved place %d from %v to %v", 20+i, want.Sub(t0), got.Sub(t0))
		}
	}
	cut := t0
	p.setRate(1, 1, cut)
	prev := cut
	for i := range dues {
		got, ok := p.pass(fmt.Sprint("place-", 20+i), t0, cut)
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
		{"within the slack", pacerSlack, 5, 0},
		{"a minute late", time.Minute, 1, 1},
		{"a late crowd: one burst on credit", time.Minute, 30, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPacer(rate, 1, t0)
			for i := range 20 {
				if _, ok := p.pass(fmt.Sprint("burst-", i), t0, t0); !ok {
					t.Fatalf("burst holder %d re-spaced", i)
				}
			}
			admitted := 0
			var last time.Time
			for i := range tt.holders {
				due, ok := p.pass(fmt.Sprint("holder-", i), t0.Add(-tt.late), t0)
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
			due, ok := p.pass("on-time-after", t0, t0)
			if want := t0.Add(time.Duration(tt.holders+1) * time.Second / rate); ok || !due.Equal(want) {
				t.Errorf("an on-time holder after them: due %v (admitted %v), want re-spaced to %v", due.Sub(t0), ok, want.Sub(t0))
			}
		})
	}
}
