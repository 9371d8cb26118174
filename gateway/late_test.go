package gateway

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fairgate/fairgate/room"
)

// presenter is one visitor of playLate: its tab, the token it holds, when it
// presents next, and what happened to it.
type presenter struct {
	tab       *tab
	tk        ticketJSON
	due       time.Time // its first checkpoint
	at        time.Time // when it presents next
	attempts  int
	first     time.Time // its first presentation
	firstSlot time.Time // the slot its first presentation was given (first, if admitted then)
	admitted  time.Time
}

// playLate takes n tokens at one moment in a room at 10/s, burst 1, where
// everyone is eligible at their first checkpoint, and plays the visitors
// through the gateway in time order: each presents when present says (given
// everyone, the attempt number and the moment it is due: its checkpoint,
// then each nxt it is told), until admitted.
func playLate(t *testing.T, n int, present func(ps []*presenter, i, attempt int, due time.Time) time.Time) []*presenter {
	t.Helper()
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue", Tau: Duration(time.Millisecond), FixedSpeed: true, Rate: 10, Burst: 1}}, nil)
	ps := make([]*presenter, n)
	for i := range ps {
		tb := e.newTab()
		tk := tb.token()
		ps[i] = &presenter{tab: tb, tk: tk, due: time.UnixMilli(tk.NextAttempt)}
	}
	for i, p := range ps {
		p.at = present(ps, i, 0, p.due)
	}
	for step := 0; ; step++ {
		if step > 50*n {
			t.Fatalf("not everyone admitted after %d attempts", step)
		}
		next := -1
		for i, p := range ps {
			if p.admitted.IsZero() && (next < 0 || p.at.Before(ps[next].at)) {
				next = i
			}
		}
		if next < 0 {
			return ps
		}
		p := ps[next]
		e.clock.Set(p.at)
		status, tk := p.tab.admit(p.tk)
		if p.attempts == 0 {
			p.first, p.firstSlot = p.at, p.at
			if status == 429 && tk.Outcome == "busy" {
				p.firstSlot = time.UnixMilli(tk.NextAttempt)
			}
		}
		p.attempts++
		switch status {
		case 200:
			p.admitted = p.at
		case 429:
			p.tk = tk
			p.at = present(ps, next, p.attempts, time.UnixMilli(tk.NextAttempt))
		default:
			t.Fatalf("visitor %d: %d %+v", next, status, tk)
		}
	}
}

// TestLatePresenterLosesItsLateness: 150 visitors, eligible at their first
// checkpoints, present on time; the bucket (10/s) binds and hands out slots
// up to 15 s ahead. One of them presents its first attempt late. It does not
// queue behind the slots given while it was late: it takes the slot it would
// have had (the one given to the first visitor who presented after its
// checkpoint), or is admitted at once if that has passed: it loses its
// lateness at most, and never gains.
func TestLatePresenterLosesItsLateness(t *testing.T) {
	for _, lateness := range []time.Duration{3 * time.Second, 8 * time.Second, time.Minute} {
		t.Run(lateness.String(), func(t *testing.T) {
			x := -1 // the late one: the 120th by checkpoint
			ps := playLate(t, 150, func(ps []*presenter, i, attempt int, due time.Time) time.Time {
				if x < 0 {
					byDue := make([]int, len(ps))
					for k := range byDue {
						byDue[k] = k
					}
					slices.SortStableFunc(byDue, func(a, b int) int { return ps[a].due.Compare(ps[b].due) })
					x = byDue[120]
				}
				if i == x && attempt == 0 {
					return due.Add(lateness)
				}
				return due
			})
			late := ps[x]
			// The slot it would have had: the one given to the first
			// visitor who presented at or after its checkpoint.
			var after *presenter
			for i, p := range ps {
				if i != x && !p.first.Before(late.due) && (after == nil || p.first.Before(after.first)) {
					after = p
				}
			}
			if after == nil || !after.firstSlot.After(late.due.Add(time.Second)) {
				t.Fatalf("the bucket did not bind after the late one's checkpoint: %+v", after)
			}
			want := after.firstSlot
			if arrived := late.due.Add(lateness); arrived.After(want) {
				want = arrived
			}
			latest := time.Duration(0)
			for _, p := range ps {
				latest = max(latest, p.admitted.Sub(late.due))
			}
			t.Logf("late by %v: admitted %v after its checkpoint (the slot it would have had: %v; the last visitor: %v)",
				lateness, late.admitted.Sub(late.due), after.firstSlot.Sub(late.due), latest)
			if late.admitted.Before(after.firstSlot) {
				t.Errorf("presenting late gained: admitted %v after its checkpoint, before the slot it would have had (%v)",
					late.admitted.Sub(late.due), after.firstSlot.Sub(late.due))
			}
			if late.admitted.After(want.Add(time.Millisecond)) {
				t.Errorf("late by %v, admitted %v after its checkpoint: lost more than its lateness (want %v)",
					lateness, late.admitted.Sub(late.due), want.Sub(late.due))
			}
		})
	}
}

// TestLateCrowdIsSpacedAtTheRate: 200 visitors, eligible at their first
// checkpoints, all present a minute late at the same moment (a network
// outage, a laptop lid). Each takes the slot it would have had, which has
// passed, so each is due at once: they pass the pacer like slot holders
// presenting late, and are admitted at the room's rate (10/s) after the
// bursts of the bucket (1) and the pacer (its bucket: four seconds of the
// rate), not all at once beside the bucket.
func TestLateCrowdIsSpacedAtTheRate(t *testing.T) {
	const n, rate, bursts = 200, 10, 1 + 4*10 // the pacer's burst and a stall's two seconds more
	var crowd time.Time
	ps := playLate(t, n, func(ps []*presenter, i, attempt int, due time.Time) time.Time {
		if crowd.IsZero() {
			for _, p := range ps {
				crowd = maxTime(crowd, p.due)
			}
			crowd = crowd.Add(time.Minute)
		}
		if attempt == 0 {
			return crowd
		}
		return due
	})
	admitted := make([]time.Duration, 0, n)
	for _, p := range ps {
		admitted = append(admitted, p.admitted.Sub(crowd))
	}
	slices.Sort(admitted)
	t.Logf("admitted at the crowd's moment: %d; the last %v after it", countAtMost(admitted, 0), admitted[n-1])
	// In every span from the crowd's moment, at most the bursts and the
	// rate over the span.
	for k, at := range admitted {
		if allowed := bursts + int(at.Seconds()*rate) + 1; k+1 > allowed {
			t.Fatalf("%d admitted within %v of the crowd: more than the bursts and the rate allow (%d)", k+1, at, allowed)
		}
	}
	if want := time.Duration(float64(n-bursts) / rate * float64(time.Second)); admitted[n-1] < want-time.Second {
		t.Errorf("the last of the crowd admitted %v after it: faster than the rate (%v)", admitted[n-1], want)
	}
}

func countAtMost(sorted []time.Duration, d time.Duration) int {
	n := 0
	for n < len(sorted) && sorted[n] <= d {
		n++
	}
	return n
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// TestRespacedSlotsFollowARateCut: 80 visitors present a minute late at one
// moment (rate 10/s): 41 go in, the pacer re-spaces the rest at 10/s. The
// rate is then cut to 1/s. The re-spaced slots follow the cut: at most 9
// (the new rate's five and the pacer's bucket at it) come in within 5 s of
// it.
func TestRespacedSlotsFollowARateCut(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue", Tau: Duration(time.Millisecond), FixedSpeed: true, Rate: 10, Burst: 1}}, nil)
	const n = 80
	tabs, tks := make([]*tab, n), make([]ticketJSON, n)
	var late time.Time
	for i := range tabs {
		tabs[i] = e.newTab()
		tks[i] = tabs[i].token()
		late = maxTime(late, time.UnixMilli(tks[i].NextAttempt))
	}
	late = late.Add(time.Minute)
	e.clock.Set(late)
	var waiting []int
	for i := range tabs {
		switch status, tk := tabs[i].admit(tks[i]); {
		case status == 200:
		case status == 429 && tk.Outcome == "busy":
			tks[i] = tk
			waiting = append(waiting, i)
		default:
			t.Fatalf("visitor %d: %d %+v", i, status, tk)
		}
	}
	if len(waiting) < n-42 {
		t.Fatalf("%d re-spaced, want about %d", len(waiting), n-41)
	}
	rate, burst := 1.0, 1.0
	if err := e.gw.Room().Apply(room.RoomChange{Rate: &rate, Burst: &burst}, late); err != nil {
		t.Fatal(err)
	}
	inFirst5s := 0
	for step := 0; len(waiting) > 0; step++ {
		if step > 10*n {
			t.Fatalf("%d never admitted", len(waiting))
		}
		slices.SortStableFunc(waiting, func(a, b int) int { return int(tks[a].NextAttempt - tks[b].NextAttempt) })
		i := waiting[0]
		e.clock.Set(time.UnixMilli(tks[i].NextAttempt))
		switch status, tk := tabs[i].admit(tks[i]); status {
		case 200:
			waiting = waiting[1:]
			if e.clock.Now().Sub(late) <= 5*time.Second {
				inFirst5s++
			}
		case 429:
			tks[i] = tk
		default:
			t.Fatalf("visitor %d: %d %+v", i, status, tk)
		}
	}
	t.Logf("re-spaced slots admitted in the 5 s after the cut: %d", inFirst5s)
	if inFirst5s > 5+4 {
		t.Errorf("%d admitted in the 5 s after cutting the rate to 1/s: the re-spaced slots kept the old spacing", inFirst5s)
	}
}

// TestLateSlotHolderTakesItsTurnOnCredit: a slot holder presenting its
// slot 10 s late, just after a late crowd drained the pacer, is admitted
// on credit while the pacer's debt stays within its burst (two seconds of
// the rate, beyond its bucket of four), and re-spaced beyond it:
// re-spaced by half a second, a page whose timers fire once a minute
// would come back a minute later.
func TestLateSlotHolderTakesItsTurnOnCredit(t *testing.T) {
	tests := []struct {
		crowd    int
		admitted bool
	}{
		{45, true},  // 41 of the crowd in at once, the pacer 0.4 s in debt
		{80, false}, // the pacer 3.9 s in debt: more than its burst
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("crowd of %d", tt.crowd), func(t *testing.T) {
			e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue", Tau: Duration(time.Millisecond), FixedSpeed: true, Rate: 10, Burst: 1}}, nil)
			tabs, tks := make([]*tab, tt.crowd+2), make([]ticketJSON, tt.crowd+2)
			var last time.Time
			for i := range tabs {
				tabs[i] = e.newTab()
				tks[i] = tabs[i].token()
				last = maxTime(last, time.UnixMilli(tks[i].NextAttempt))
			}
			// The two with the earliest checkpoints: the first takes the
			// bucket's one admission, the second (the holder) a slot.
			order := make([]int, len(tabs))
			for i := range order {
				order[i] = i
			}
			slices.SortStableFunc(order, func(a, b int) int { return int(tks[a].NextAttempt - tks[b].NextAttempt) })
			first, holder := order[0], order[1]
			e.clock.Set(time.UnixMilli(tks[holder].NextAttempt))
			if status, tk := tabs[first].admit(tks[first]); status != 200 {
				t.Fatalf("the first: %d %+v, want admitted", status, tk)
			}
			status, slot := tabs[holder].admit(tks[holder])
			if status != 429 || slot.Outcome != "busy" {
				t.Fatalf("the holder: %d %+v, want a slot", status, slot)
			}
			// The crowd presents late together, well after everyone's
			// checkpoint; then the holder presents its slot.
			late := last.Add(10 * time.Second)
			e.clock.Set(late)
			in := 0
			for _, i := range order[2:] {
				switch status, tk := tabs[i].admit(tks[i]); {
				case status == 200:
					in++
				case status != 429 || tk.Outcome != "busy":
					t.Fatalf("visitor %d: %d %+v", i, status, tk)
				}
			}
			status, tk := tabs[holder].admit(slot)
			t.Logf("crowd of %d: %d in at once; the holder, %v after its slot: %d %s",
				tt.crowd, in, late.Sub(time.UnixMilli(slot.NextAttempt)), status, tk.Outcome)
			if got := status == 200; got != tt.admitted {
				t.Errorf("the holder presenting %v late: admitted %v, want %v", late.Sub(time.UnixMilli(slot.NextAttempt)), got, tt.admitted)
			}
			if !tt.admitted && (tk.Outcome != "busy" || !time.UnixMilli(tk.NextAttempt).After(late.Add(2*time.Second))) {
				t.Errorf("beyond the pacer's burst: %s, next in %v, want busy, re-spaced past the burst", tk.Outcome, time.UnixMilli(tk.NextAttempt).Sub(late))
			}
		})
	}
}
