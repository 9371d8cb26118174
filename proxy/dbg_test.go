package proxy

import (
	"testing"
	"time"
)

func TestDbgOrder(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", QueueOrder: "fifo", LuckWindow: Duration(time.Millisecond), Rate: 1, Burst: 1}, nil)
	var vs []*waiter
	start := e.clock.Now()
	for step := range 400 {
		now := start.Add(time.Duration(step) * 100 * time.Millisecond)
		e.clock.Set(now)
		e.gw.Room().Tick(now)
		if step%3 == 0 && len(vs) < 8 {
			vs = append(vs, e.arrive(now))
		}
		for i, v := range vs {
			before := v.tk.NextAttempt
			e.step(v, now)
			if v.tk.NextAttempt != before || v.admitted.Equal(now) {
				t.Logf("%v v%d %s next %v in %v", now.Sub(start), i, v.tk.Outcome, time.UnixMilli(v.tk.NextAttempt).Sub(start), !v.admitted.IsZero())
			}
		}
	}
}
