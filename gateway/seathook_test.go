package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/room"
	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/boltstore"
	"github.com/fairgate/fairgate/seats/httpapi"
	"github.com/fairgate/fairgate/seats/storetest"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// countingStore is a seat store that counts the sessions it created.
type countingStore struct {
	seats.Store
	created atomic.Int32
}

func (s *countingStore) CreateSession(ctx context.Context, sess seats.Session, now time.Time, key *seats.Idempotency) error {
	err := s.Store.CreateSession(ctx, sess, now, key)
	if err == nil {
		s.created.Add(1)
	}
	return err
}

// seatService runs the seat service (its HTTP API on a bolt store in a
// temporary directory) on now, with event "ev", verifying the passes of
// room with the test keys. It returns the admission hook's URL.
func seatService(t *testing.T, room string, now func() time.Time) (string, *countingStore) {
	t.Helper()
	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "seats.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bolt.Close() })
	store := &countingStore{Store: bolt}
	svc := seats.NewService(store, now)
	if _, err := svc.CreateEvent(context.Background(), storetest.Event("ev")); err != nil {
		t.Fatal(err)
	}
	ring, err := testKeys.Load(tokens.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(svc, httpapi.Config{Codec: tokens.NewCodec(ring, time.Second), Room: room, DefaultEvent: "ev"}))
	t.Cleanup(srv.Close)
	return srv.URL + "/api/sessions", store
}

// TestLostAnswerWithSeatServiceHook: the answer to an admission whose
// hook opened a seat session is lost; the same token presented again gets
// the same pass with the same session, and the seat service holds one
// session for it.
func TestLostAnswerWithSeatServiceHook(t *testing.T) {
	for _, policy := range []string{"closed", "open"} {
		t.Run(policy, func(t *testing.T) {
			var e *env // the seat service runs on the gateway's clock
			hook, store := seatService(t, "sale", func() time.Time { return e.clock.Now() })
			e = newEnv(t, Config{Config: room.Config{Room: "sale", State: "open"}, Hook: &Hook{URL: hook, OnFailure: policy}}, nil)
			tb := e.newTab()
			tk := tb.token()
			body := fmt.Sprintf(`{"nonce":%q,"token":%q}`, solveFor(t, tk), tk.Token)
			admit := func() (int, admitResponse, *tokens.PassClaims) {
				t.Helper()
				status, raw := tb.postRaw("/_fairgate/admit", body)
				var a admitResponse
				if err := json.Unmarshal(raw, &a); err != nil || status != 200 {
					return status, a, nil
				}
				pc, err := e.gw.door.Codec().ParsePass(a.Pass, "sale", e.clock.Now())
				if err != nil {
					t.Fatalf("the pass given does not verify: %v", err)
				}
				return status, a, pc
			}
			status, first, fp := admit()
			if status != 200 || first.Session == "" || fp.Ses != first.Session {
				t.Fatalf("admission: %d %+v", status, first)
			}
			// The first answer is dropped: the visitor asks again.
			status, again, ap := admit()
			if status != 200 {
				t.Fatalf("the lost answer asked again: %d, want 200 with the same pass", status)
			}
			if ap.ID != fp.ID || again.Session != first.Session || ap.Ses != first.Session || again.Pass != first.Pass {
				t.Fatalf("asked again: pass %s session %s, first pass %s session %s", ap.ID, again.Session, fp.ID, first.Session)
			}
			if n := store.created.Load(); n != 1 {
				t.Fatalf("the seat service opened %d sessions for one admission", n)
			}
		})
	}
}
