package gateway

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/room"
)

// slowStore is a real store that takes delay of the test's clock to answer
// a place's lookup or hold: a store under load, as at a sale's start.
type slowStore struct {
	roomstate.Store
	clock *fakeClock
	delay time.Duration
}

func (s *slowStore) HoldPlace(ctx context.Context, room, id string, p queue.Place, until, now time.Time) (queue.Place, bool, error) {
	s.clock.Add(s.delay)
	return s.Store.HoldPlace(ctx, room, id, p, until, now)
}

func (s *slowStore) LookupPlace(ctx context.Context, room, id string, now time.Time) (queue.Place, error) {
	s.clock.Add(s.delay)
	return s.Store.LookupPlace(ctx, room, id, now)
}

// TestWaitAnswerCountsFromWhenItIsSent: the page waits Retry-After (less
// half its round trip, at most a cap) from the answer, so a wait that
// counted from the attempt's arrival would send every page late by the
// time the decision waited on the store. Each waiting answer must name
// its next attempt as the time from when it is sent.
func TestWaitAnswerCountsFromWhenItIsSent(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			clock := newFakeClock()
			store := &slowStore{Store: open(t), clock: clock}
			cfg := Config{Config: room.Config{Room: "sale", Rate: 0.2, Burst: 1, Tau: Duration(time.Second), FixedSpeed: true, State: "queue"}}
			e := newEnvOn(t, newNode(t, cfg, store, "a", clock), clock)
			store.delay = time.Second
			var waiters []*waiter
			for range 6 {
				waiters = append(waiters, e.arrive(clock.Now()))
			}
			answers := map[string]int{}
			for range 60 {
				clock.Add(time.Second)
				for _, w := range waiters {
					if !w.admitted.IsZero() || clock.Now().Before(time.UnixMilli(w.tk.NextAttempt)) {
						continue
					}
					asked := clock.Now()
					body, _ := json.Marshal(map[string]string{"token": w.tk.Token, "nonce": w.nonce})
					resp, b := e.do("POST", "/_fairgate/admit", string(body))
					sent := clock.Now()
					switch resp.StatusCode {
					case http.StatusOK:
						w.admitted = sent
						continue
					case http.StatusTooManyRequests:
					default:
						t.Fatalf("admit: %d %s", resp.StatusCode, b)
					}
					if err := json.Unmarshal(b, &w.tk); err != nil {
						t.Fatal(err)
					}
					answers[w.tk.Outcome]++
					want := math.Max(0, time.UnixMilli(w.tk.NextAttempt).Sub(sent).Seconds())
					if math.Abs(w.tk.RetryAfter-want) > 0.002 {
						t.Fatalf("%s answer sent %v after the attempt: retry_after %.3f s, want %.3f (its next attempt less the moment it was sent)",
							w.tk.Outcome, sent.Sub(asked), w.tk.RetryAfter, want)
					}
				}
			}
			if answers["busy"] == 0 {
				t.Fatalf("answers %v: no slot was given ahead, the test checks no busy answer", answers)
			}
		})
	}
}
