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
		due, ok := p.pass(fmt.Sprint("place-", i), t0)
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
		if got, _ := p.pass(fmt.Sprint("place-", 20+i), t0); !got.Equal(want) {
			t.Fatalf("the rate set again unchanged moved place %d from %v to %v", 20+i, want.Sub(t0), got.Sub(t0))
		}
	}
	cut := t0
	p.setRate(1, 1, cut)
	prev := cut
	for i := range dues {
		got, ok := p.pass(fmt.Sprint("place-", 20+i), cut)
		if ok || got.Sub(prev) < 900*time.Millisecond {
			t.Fatalf("after the cut, place %d due %v after the one before it (admitted now: %v); want about a second", 20+i, got.Sub(prev), ok)
		}
		prev = got
	}
}
