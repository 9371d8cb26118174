package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairgate/fairgate/room"
)

func TestAdmissionHook(t *testing.T) {
	var mode atomic.Value
	var calls atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get(passHeader) == "" {
			t.Error("hook called without the pass")
		}
		switch mode.Load().(string) {
		case "ok":
			fmt.Fprint(w, `{"session":"s-42"}`)
		case "full":
			w.WriteHeader(http.StatusConflict)
		case "down":
			w.WriteHeader(http.StatusInternalServerError)
		case "slow":
			time.Sleep(300 * time.Millisecond)
		}
	}))
	defer hook.Close()

	for _, tt := range []struct {
		mode, policy string
		admitted     bool
		session      string
	}{
		{"ok", "closed", true, "s-42"},
		{"full", "closed", false, ""},
		{"full", "open", false, ""}, // 409 is an answer, not a failure: never admits
		{"down", "closed", false, ""},
		{"down", "open", true, ""},
		{"slow", "closed", false, ""},
	} {
		t.Run(tt.mode+"/"+tt.policy, func(t *testing.T) {
			mode.Store(tt.mode)
			e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "open"}, Hook: &Hook{URL: hook.URL, OnFailure: tt.policy, Timeout: Duration(100 * time.Millisecond)}}, nil)
			tk := e.ticket()
			resp, body := e.do("POST", "/_fairgate/admit", `{"nonce":"`+solveFor(t, tk)+`"}`)
			if tt.admitted != (resp.StatusCode == 200) {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if !tt.admitted {
				var back ticketJSON
				_ = json.Unmarshal(body, &back)
				if resp.StatusCode != 429 || back.Token == "" {
					t.Fatalf("turned away: %d %s", resp.StatusCode, body)
				}
				// The same token may try again: it was released, not spent.
				mode.Store("ok")
				e.clock.Set(time.UnixMilli(back.NextAttempt))
				resp, body = e.do("POST", "/_fairgate/admit", `{"nonce":"`+solveFor(t, back)+`"}`)
				if resp.StatusCode != 200 {
					t.Fatalf("retry after the hook recovered: %d %s", resp.StatusCode, body)
				}
				return
			}
			var a admitResponse
			_ = json.Unmarshal(body, &a)
			claims, err := e.gw.door.VerifyPass(a.Pass, e.clock.Now())
			if err != nil || claims.Ses != tt.session {
				t.Fatalf("pass %+v %v, want session %q", claims, err, tt.session)
			}
		})
	}
}

// TestRefusedPlaceWaitsForItsCheckpoint: the admission hook turns a visitor
// away (the seat service is full). The place is kept out until the
// checkpoint its answer names: every version presented before it is told to
// wait until then, the hook is not called, and at the checkpoint the place
// is admitted without taking a second admission.
func TestRefusedPlaceWaitsForItsCheckpoint(t *testing.T) {
	var calls atomic.Int32
	hook := hookServer(t, func(*http.Request) bool { return calls.Add(1) == 1 }) // full, this once
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue", Tau: Duration(time.Millisecond), FixedSpeed: true, Rate: 5, Burst: 5}, Hook: &Hook{URL: hook}}, nil)
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

// TestRefusedRepeatKeepsThePlaceUsed: the admitted token presented again
// (its own pass comes back, Decision.Again) while the hook turns it away
// must not requeue the place: that would release a used place, and its
// slot would later sign a second pass beside the first.
func TestRefusedRepeatKeepsThePlaceUsed(t *testing.T) {
	var calls atomic.Int32
	hook := hookServer(t, func(*http.Request) bool { return calls.Add(1) == 2 }) // the repeat, this once
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue", Tau: Duration(time.Millisecond), FixedSpeed: true, Rate: 5, Burst: 5}, Hook: &Hook{URL: hook}}, nil)
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
