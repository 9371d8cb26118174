package proxy

import (
	"slices"
	"testing"
	"time"
)

// The regression tests of the review holes docs/FAIRNESS.md listed under
// "Known limits", each named after the hole, through the gateway's HTTP
// handler with the injected clock.

// TestSlotsOutliveARateChange: 130 eligible visitors at 10/s (burst 10):
// ten go in, the rest hold slots over the next 12 s. The rate is cut to
// 1/s (burst 1). Before, the slots given still came due at the old
// spacing: 50 more admitted in the next 5 s. Now the new rate binds at
// once, and the slot holders go in the order of their slots.
func TestSlotsOutliveARateChange(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", State: "queue", Tau: Duration(time.Millisecond), FixedSpeed: true, Rate: 10, Burst: 10}, nil)
	const n = 130
	tabs, tks := make([]*tab, n), make([]ticketJSON, n)
	latest := int64(0)
	for i := range tabs {
		tabs[i] = e.newTab()
		tks[i] = tabs[i].token()
		latest = max(latest, tks[i].NextAttempt)
	}
	e.clock.Set(time.UnixMilli(latest))
	slot := make([]int64, n) // the slot first given, 0 if admitted at once
	waiting := []int{}
	for i := range tabs {
		switch status, tk := tabs[i].admit(tks[i]); {
		case status == 200:
		case status == 429 && tk.Outcome == "busy":
			tks[i], slot[i] = tk, tk.NextAttempt
			waiting = append(waiting, i)
		default:
			t.Fatalf("visitor %d: %d %+v", i, status, tk)
		}
	}
	if len(waiting) < n-11 {
		t.Fatalf("%d slot holders, want about %d", len(waiting), n-10)
	}
	cut := e.clock.Now()
	rate, burst := 1.0, 1.0
	if err := e.gw.Room().Apply(RoomChange{Rate: &rate, Burst: &burst}, cut); err != nil {
		t.Fatal(err)
	}
	// Every holder presents at its nxt, the earliest first.
	var order []int // admitted, in order
	inFirst5s := 0
	for step := 0; len(waiting) > 0; step++ {
		if step > 10*n {
			t.Fatalf("%d slot holders never admitted", len(waiting))
		}
		slices.SortStableFunc(waiting, func(a, b int) int { return int(tks[a].NextAttempt - tks[b].NextAttempt) })
		i := waiting[0]
		e.clock.Set(time.UnixMilli(tks[i].NextAttempt))
		switch status, tk := tabs[i].admit(tks[i]); {
		case status == 200:
			order = append(order, i)
			waiting = waiting[1:]
			if e.clock.Now().Sub(cut) <= 5*time.Second {
				inFirst5s++
			}
		case status == 429:
			tks[i] = tk
		default:
			t.Fatalf("slot holder %d: %d %+v", i, status, tk)
		}
	}
	t.Logf("admitted in the 5 s after the cut: %d; the last %v after it", inFirst5s, e.clock.Now().Sub(cut))
	if inFirst5s > 5+2 {
		t.Errorf("%d admitted in the 5 s after cutting the rate to 1/s: the old slots outlived the change", inFirst5s)
	}
	for k := 1; k < len(order); k++ {
		if slot[order[k]] < slot[order[k-1]] {
			t.Fatalf("visitor %d (slot %d) admitted after %d (slot %d): the order was jumped", order[k], slot[order[k]], order[k-1], slot[order[k-1]])
		}
	}
}
