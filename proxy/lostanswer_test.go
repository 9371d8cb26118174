package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/roomstate"
)

// landsThenTimesOut is a real store whose place writes, while lose is
// set, are applied and then answered with a timeout: DynamoDB slow, or
// stopped as the write was in flight.
type landsThenTimesOut struct {
	roomstate.Store
	lose atomic.Bool
}

func (s *landsThenTimesOut) HoldPlace(ctx context.Context, room, id string, p admission.Place, until, now time.Time) (admission.Place, bool, error) {
	got, won, err := s.Store.HoldPlace(ctx, room, id, p, until, now)
	if err == nil && s.lose.Load() {
		return admission.Place{}, false, context.DeadlineExceeded
	}
	return got, won, err
}

func (s *landsThenTimesOut) UsePlace(ctx context.Context, room, id string, p admission.Place, now time.Time) (bool, error) {
	ok, err := s.Store.UsePlace(ctx, room, id, p, now)
	if err == nil && s.lose.Load() {
		return false, context.DeadlineExceeded
	}
	return ok, err
}

// TestClusterAdmissionWhoseAnswerWasLost: a ledger write that times out
// but lands answers 503; the same token's retry is admitted with the same
// pass (it used the place), while an earlier version of the place's token
// still gets 409 token_used. Both ways a place is used: held outright
// (admitted from the bucket) and a reserved slot used.
func TestClusterAdmissionWhoseAnswerWasLost(t *testing.T) {
	for _, way := range []string{"hold", "use"} {
		t.Run(way, func(t *testing.T) {
			store := &landsThenTimesOut{Store: storeKinds(t)["bolt"](t)}
			clock := newFakeClock()
			cfg := Config{Room: "lost", State: "paused", Rate: 1, Keys: testKeys, Difficulty: intp(0),
				StateStore: &StateStore{Type: StoreBolt, Path: "unused", CallTimeout: testCallTimeout, Node: "a"}}
			n := newNode(t, cfg, store, "a", clock)
			e := newEnvOn(t, n, clock)
			attempt := func(tk ticketJSON) (int, []byte) {
				t.Helper()
				clock.Set(time.UnixMilli(tk.NextAttempt))
				return e.post("/_fairgate/admit", `{"token":"`+tk.Token+`","nonce":"`+solveFor(t, tk)+`"}`, "")
			}
			next := func(body []byte) ticketJSON {
				t.Helper()
				var tk ticketJSON
				if err := json.Unmarshal(body, &tk); err != nil || tk.Token == "" {
					t.Fatalf("no next token in %s (%v)", body, err)
				}
				return tk
			}
			// v0 waits while the room is paused and comes back as v1.
			v0 := e.ticket()
			status, body := attempt(v0)
			if status != http.StatusTooManyRequests {
				t.Fatalf("attempt while paused: %d %s", status, body)
			}
			v1 := next(body)
			if err := n.sh.Apply(RoomChange{State: ptr("open")}, clock.Now()); err != nil {
				t.Fatal(err)
			}
			if way == "use" {
				// Another visitor takes the burst: v1 gets a slot a second
				// out (a reserved place), and its slot token v2.
				other := &env{t: t, clock: clock, gw: n.gw, srv: e.srv, client: &http.Client{Jar: newClockJar(clock.Now)}}
				first := other.ticket()
				clock.Set(time.UnixMilli(max(first.NextAttempt, v1.NextAttempt)))
				if status, body := attempt(first); status != http.StatusOK {
					t.Fatalf("first visitor: %d %s", status, body)
				}
				status, body := attempt(v1)
				if status != http.StatusTooManyRequests {
					t.Fatalf("a slot: %d %s", status, body)
				}
				v0, v1 = v1, next(body)
			}
			store.lose.Store(true)
			status, body = attempt(v1)
			if status != http.StatusServiceUnavailable {
				t.Fatalf("a write that landed and timed out: %d %s, want 503", status, body)
			}
			store.lose.Store(false)
			clock.Add(storeCool) // the node asks the store again
			var passes []string
			for range 2 {
				status, body := e.post("/_fairgate/admit", `{"token":"`+v1.Token+`","nonce":"`+solveFor(t, v1)+`"}`, "")
				var a admitResponse
				if err := json.Unmarshal(body, &a); status != http.StatusOK || err != nil || a.Pass == "" {
					t.Fatalf("the same token's retry: %d %s, want its pass", status, body)
				}
				passes = append(passes, a.Pass)
			}
			if passes[0] != passes[1] {
				t.Fatal("two retries of the same token got two passes")
			}
			pc, err := n.gw.gate.VerifyPass("lost", passes[0], clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			wc, err := n.gw.gate.Codec().ParseWait(v1.Token, "lost", clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			place, err := store.LookupPlace(t.Context(), "lost", wc.Place(), clock.Now())
			if err != nil || place.State != admission.PlaceUsed || place.Pass != pc.ID || place.At.Unix() != pc.IssuedAt {
				t.Fatalf("the pass %s (iat %d) is not the one the ledger recorded: %+v, %v", pc.ID, pc.IssuedAt, place, err)
			}
			// Any other version of the place's token: used.
			status, body = e.post("/_fairgate/admit", `{"token":"`+v0.Token+`","nonce":"`+solveFor(t, v0)+`"}`, "")
			if status != http.StatusConflict {
				t.Fatalf("an earlier version of the token: %d %s, want 409", status, body)
			}
			// Once the pass has expired, the token gets nothing more.
			clock.Add(time.Duration(pc.ExpiresAt-pc.IssuedAt) * time.Second)
			if status, body := e.post("/_fairgate/admit", `{"token":"`+v1.Token+`","nonce":"`+solveFor(t, v1)+`"}`, ""); status == http.StatusOK {
				t.Fatalf("the token after its pass expired: %d %s", status, body)
			}
		})
	}
}
