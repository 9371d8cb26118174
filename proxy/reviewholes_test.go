package proxy

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"
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
	for i := range tabs {
		tabs[i] = e.newTab()
		tks[i] = tabs[i].token()
	}
	// Each presents at its checkpoint, the earliest first (a crowd
	// presenting late at once is TestLateCrowdIsSpacedAtTheRate's).
	byCheckpoint := make([]int, n)
	for i := range byCheckpoint {
		byCheckpoint[i] = i
	}
	slices.SortStableFunc(byCheckpoint, func(a, b int) int { return int(tks[a].NextAttempt - tks[b].NextAttempt) })
	slot := make([]int64, n) // the slot first given, 0 if admitted at once
	waiting := []int{}
	for _, i := range byCheckpoint {
		e.clock.Set(time.UnixMilli(tks[i].NextAttempt))
		switch status, tk := tabs[i].admit(tks[i]); {
		case status == 200:
		case status == 429 && tk.Outcome == "busy":
			tks[i], slot[i] = tk, tk.NextAttempt
			waiting = append(waiting, i)
		default:
			t.Fatalf("visitor %d: %d %+v", i, status, tk)
		}
	}
	// The burst goes in at once, and the bucket refills while the
	// checkpoints pass: the rest hold slots.
	spread := time.UnixMilli(tks[byCheckpoint[n-1]].NextAttempt).Sub(time.UnixMilli(tks[byCheckpoint[0]].NextAttempt))
	if admitted, most := n-len(waiting), 10+int(spread.Seconds()*10)+1; admitted > most || len(waiting) < 100 {
		t.Fatalf("%d admitted at their checkpoints (spread over %v), %d slot holders; want at most %d admitted", admitted, spread, len(waiting), most)
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

// TestStartingASaleEarlyStrandsThePreQueue: a sale is scheduled an hour
// ahead; one login takes its place in the pre-queue in two identical rooms
// (the same keys, clock and login: the same draw and grid). In one its page
// follows every answer (it sleeps retry_after, as the page does), in the
// other it asks every second. After 20 minutes the operator starts the
// sale (state queue). The page wakes at most max_backoff apart while
// scheduled, the gate moves its checkpoint to the new grid, and both get in
// within two backoffs of the start — the one asking every second no sooner.
func TestStartingASaleEarlyStrandsThePreQueue(t *testing.T) {
	secret := []byte("site-login-secret-0123456789abcdef")
	world := func() *env {
		return newEnv(t, Config{Room: "sale", State: "queue", Tau: Duration(time.Millisecond), FixedSpeed: true,
			Rate: 100, Burst: 100, Identity: &Identity{
				Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(secret), Required: true,
			}}, nil)
	}
	e, h := world(), world() // the page's room, the hammerer's
	login := func(sub string) string { return "Bearer " + signLogin(t, secret, sub, e.clock.Now().Add(24*time.Hour)) }
	for trial := range 4 {
		start := e.clock.Now()
		h.clock.Set(start)
		scheduled, saleStart := "scheduled", start.Add(time.Hour).UTC().Format(time.RFC3339)
		for _, w := range []*env{e, h} {
			if err := w.gw.Room().Apply(RoomChange{State: &scheduled, SaleStart: &saleStart}, start); err != nil {
				t.Fatal(err)
			}
		}
		user := login(fmt.Sprint("user-", trial))
		honest, hammer := e.newTab("Authorization", user), h.newTab("Authorization", user)
		htk, mtk := honest.token(), hammer.token()
		if htk.RetryAfter > 30 {
			t.Fatalf("a pre-queue page told to sleep %vs: it would not see the start move", htk.RetryAfter)
		}
		wake := e.clock.Now().Add(time.Duration(htk.RetryAfter * float64(time.Second)))
		moved := start.Add(20*time.Minute + time.Duration(trial)*7*time.Second)
		var later *tab
		var ltk ticketJSON
		var honestIn, hammerIn, laterIn time.Time
		for step := 1; honestIn.IsZero() || hammerIn.IsZero() || laterIn.IsZero(); step++ {
			if step > 2*3600 {
				t.Fatalf("trial %d: not admitted in two hours (honest %v, hammerer %v, later %v)", trial, honestIn, hammerIn, laterIn)
			}
			now := start.Add(time.Duration(step) * time.Second)
			e.clock.Set(now)
			h.clock.Set(now)
			if now.Equal(moved) {
				e.setState("queue")
				h.setState("queue")
				later = e.newTab("Authorization", login(fmt.Sprint("later-", trial)))
				ltk = later.token()
			}
			// attempt presents *tk once: admitted, it records now in *in;
			// told to wait, *tk becomes the answer (returned, with true).
			attempt := func(who string, tb *tab, tk *ticketJSON, in *time.Time) (ticketJSON, bool) {
				status, back := tb.admit(*tk)
				switch status {
				case 200:
					*in = now
				case 429:
					*tk = back
				default:
					t.Fatalf("%s: %d", who, status)
				}
				return back, status == 429
			}
			if hammerIn.IsZero() {
				attempt("hammerer", hammer, &mtk, &hammerIn)
			}
			if honestIn.IsZero() && !now.Before(wake) {
				if back, waiting := attempt("honest", honest, &htk, &honestIn); waiting {
					if back.State == "scheduled" && back.RetryAfter > 30 {
						t.Fatalf("told to sleep %vs while scheduled", back.RetryAfter)
					}
					wake = now.Add(time.Duration(back.RetryAfter * float64(time.Second)))
				}
			}
			if later != nil && laterIn.IsZero() && !now.Before(time.UnixMilli(ltk.NextAttempt)) {
				attempt("later arrival", later, &ltk, &laterIn)
			}
		}
		t.Logf("trial %d: after the early start, honest in %v, hammerer %v, a later arrival %v", trial,
			honestIn.Sub(moved), hammerIn.Sub(moved), laterIn.Sub(moved))
		// The page learns of the move within max_backoff, and its
		// checkpoint is the first of the new grid after that.
		if limit := moved.Add(2*admission.DefaultPolicy.MaxBackoff + 2*time.Second); honestIn.After(limit) {
			t.Errorf("trial %d: the pre-queue page got in %v after the early start: stranded", trial, honestIn.Sub(moved))
		}
		if hammerIn.Before(honestIn) {
			t.Errorf("trial %d: asking every second got in %v before the page", trial, honestIn.Sub(hammerIn))
		}
		e.clock.Set(e.clock.Now().Add(time.Minute))
	}
}

// TestRefusedAdmissionRetriedAtOnce: the admission hook turns a visitor
// away (the seat service is full). Before, the version just refused,
// presented again at once, was judged again at once and called the hook
// again, up to one checkpoint spacing ahead of the page. Now the place is
// kept out until the checkpoint its answer names: every version presented
// before it is told to wait until then, the hook is not called, and at the
// checkpoint the place is admitted without taking a second admission.
func TestRefusedAdmissionRetriedAtOnce(t *testing.T) {
	var calls atomic.Int32
	hook := hookServer(t, func(*http.Request) bool { return calls.Add(1) == 1 }) // full, this once
	e := newEnv(t, Config{Room: "sale", State: "queue", Tau: Duration(time.Millisecond), FixedSpeed: true, Rate: 5, Burst: 5, Hook: &Hook{URL: hook}}, nil)
	tb := e.newTab()
	first := tb.token()
	e.clock.Set(time.UnixMilli(first.NextAttempt))
	status, back := tb.admit(first)
	if status != 429 || back.Outcome != "deferred" || calls.Load() != 1 {
		t.Fatalf("refused by the hook: %d %+v after %d hook calls", status, back, calls.Load())
	}
	due := time.UnixMilli(back.NextAttempt)
	if !due.After(e.clock.Now()) {
		t.Fatalf("refused answer names %v, not a later checkpoint", due.Sub(e.clock.Now()))
	}
	// Every version, at once and until just before the checkpoint.
	for _, at := range []time.Time{e.clock.Now(), e.clock.Now().Add(100 * time.Millisecond), due.Add(-time.Millisecond)} {
		e.clock.Set(at)
		for _, tk := range []ticketJSON{first, back} {
			status, again := tb.admit(tk)
			if status != 429 || again.NextAttempt != back.NextAttempt {
				t.Fatalf("refused place presented %v before its checkpoint: %d %+v", due.Sub(at), status, again)
			}
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the hook was called %d times before the refused place's checkpoint", n)
	}
	e.clock.Set(due)
	if status, _ := tb.admit(back); status != 200 || calls.Load() != 2 {
		t.Fatalf("at its checkpoint: %d after %d hook calls, want 200 after 2", status, calls.Load())
	}
}

// TestRefusedRepeatReleasesAUsedPlace: the admitted token presented again
// (its own pass comes back, Decision.Again) while the hook turns it away
// must not requeue the place: that would release a used place, and its
// slot would later sign a second pass beside the first.
func TestRefusedRepeatReleasesAUsedPlace(t *testing.T) {
	var calls atomic.Int32
	hook := hookServer(t, func(*http.Request) bool { return calls.Add(1) == 2 }) // the repeat, this once
	e := newEnv(t, Config{Room: "sale", State: "queue", Tau: Duration(time.Millisecond), FixedSpeed: true, Rate: 5, Burst: 5, Hook: &Hook{URL: hook}}, nil)
	tb := e.newTab()
	tk := tb.token()
	e.clock.Set(time.UnixMilli(tk.NextAttempt))
	admit := func() (int, string) {
		t.Helper()
		status, body := tb.postRaw("/_fairgate/admit", fmt.Sprintf(`{"nonce":%q,"token":%q}`, solveFor(t, tk), tk.Token))
		var a admitResponse
		_ = json.Unmarshal(body, &a)
		return status, a.Pass
	}
	status, first := admit()
	if status != 200 || first == "" {
		t.Fatalf("admission: %d", status)
	}
	if status, _ := admit(); status != 409 {
		t.Fatalf("the repeat the hook refused: %d, want 409 (the place stays used)", status)
	}
	for _, later := range []time.Duration{time.Second, 10 * time.Second, time.Minute} {
		e.clock.Set(time.UnixMilli(tk.NextAttempt).Add(later))
		if status, pass := admit(); status == 200 && pass != first {
			t.Fatalf("%v later: a second pass for one place", later)
		}
	}
}
