package gateway

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fairgate/fairgate/room"
)

// TestOneLoginHoldsOnePlace: every token one login takes in a room is one
// place, in either order and in a priority lane: one slot and one pass
// (one pass id), which every tab gets, however many tabs present.
func TestOneLoginHoldsOnePlace(t *testing.T) {
	tests := []struct {
		name  string
		order string
		claim jwt.MapClaims // the login's claims: a lane's, or none
	}{
		{"lottery", "", nil},
		{"fifo", "fifo", nil},
		{"priority lane", "", jwt.MapClaims{"tier": "vip"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A slow room: each tab's own place would wait for a slot of its own.
			e := newEnv(t, Config{
				Config: room.Config{Room: "sale", State: "queue", QueueOrder: tt.order, Rate: 1, Burst: 1, Lanes: []room.Lane{{Name: "vip", Share: 0.2, Claim: "tier=vip"}}},
				Identity: &Identity{Header: "Authorization", Algorithm: "HS256",
					Key: base64.StdEncoding.EncodeToString(laneLoginSecret)},
			}, nil)
			login := laneLogin(t, e, "fan", tt.claim)
			tabs := make([]ticketJSON, 5)
			for i := range tabs {
				tabs[i] = e.laneTicket(login)
			}
			passes, slots := map[string]bool{}, map[int64]bool{}
			for range 200 {
				for i := range tabs {
					if tabs[i].Token == "" || e.clock.Now().Before(time.UnixMilli(tabs[i].NextAttempt)) {
						continue
					}
					status, _, body := e.attempt(tabs[i], login)
					switch status {
					case http.StatusOK:
						var a admitResponse
						if err := json.Unmarshal(body, &a); err != nil {
							t.Fatal(err)
						}
						pc, err := e.gw.door.VerifyPass(a.Pass, e.clock.Now())
						if err != nil {
							t.Fatal(err)
						}
						passes[pc.ID] = true
						tabs[i].Token = ""
					case http.StatusTooManyRequests:
						var next ticketJSON
						if err := json.Unmarshal(body, &next); err != nil {
							t.Fatal(err)
						}
						if next.Outcome == "busy" {
							slots[next.NextAttempt] = true
						}
						tabs[i] = next
					default:
						t.Fatalf("tab %d: %d %s", i, status, body)
					}
				}
				e.clock.Add(100 * time.Millisecond)
				e.gw.Room().Tick(e.clock.Now())
			}
			for i, tk := range tabs {
				if tk.Token != "" {
					t.Errorf("tab %d never got in", i)
				}
			}
			if len(passes) != 1 {
				t.Errorf("one login with 5 tabs got %d passes, want 1", len(passes))
			}
			if len(slots) > 1 {
				t.Errorf("one login with 5 tabs held %d slots, want at most 1", len(slots))
			}
		})
	}
}

// TestOneLoginHoldsOnePassWhileTheHookDecides: one login, one pass. A tab
// of the login is admitted (the room is open) and its admission goes to
// the hook; while the
// hook decides (and then turns it away: the place goes back to waiting
// with its slot), another tab of the same login presents. The login ends
// up with one pass id, however the two answers interleave.
func TestOneLoginHoldsOnePassWhileTheHookDecides(t *testing.T) {
	calls := make(chan struct{}, 8)
	release := make(chan struct{})
	var n atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			// The first admission: the seat service is slow, then full.
			calls <- struct{}{}
			<-release
			w.WriteHeader(http.StatusConflict)
			return
		}
		fmt.Fprint(w, `{"session":"s"}`)
	}))
	t.Cleanup(hook.Close)
	e := newEnv(t, Config{
		Config: room.Config{Room: "sale", State: "open", Rate: 5, Burst: 5},
		Hook:   &Hook{URL: hook.URL, Timeout: Duration(10 * time.Second)},
		Identity: &Identity{Header: "Authorization", Algorithm: "HS256",
			Key: base64.StdEncoding.EncodeToString(laneLoginSecret)},
	}, nil)
	login := laneLogin(t, e, "fan", nil)
	tab1, tab2 := e.laneTicket(login), e.laneTicket(login)
	passes := map[string]bool{}
	admitted := func(body []byte) {
		t.Helper()
		var a admitResponse
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatal(err)
		}
		pc, err := e.gw.door.VerifyPass(a.Pass, e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		passes[pc.ID] = true
	}
	nonce1 := solveFor(t, tab1)
	first := make(chan []byte, 1)
	firstStatus := make(chan int, 1)
	go func() {
		status, body := e.post("/_fairgate/admit", `{"token":"`+tab1.Token+`","nonce":"`+nonce1+`"}`, login)
		firstStatus <- status
		first <- body
	}()
	select { // tab 1 is admitted, and the hook is deciding
	case <-calls:
	case status := <-firstStatus:
		t.Fatalf("tab 1 answered %d %s without calling the hook", status, <-first)
	}
	status2, _, body2 := e.attempt(tab2, login)
	close(release)
	status1, body1 := <-firstStatus, <-first
	t.Logf("tab 1: %d %s; tab 2 meanwhile: %d %s", status1, body1, status2, body2)
	if status2 == http.StatusOK {
		admitted(body2)
	}
	if status1 == http.StatusOK {
		admitted(body1)
	} else if status1 == http.StatusTooManyRequests {
		// Turned away: tab 1 waits for its slot and comes in.
		if err := json.Unmarshal(body1, &tab1); err != nil {
			t.Fatal(err)
		}
		for range 600 {
			if e.clock.Now().Before(time.UnixMilli(tab1.NextAttempt)) {
				e.clock.Add(100 * time.Millisecond)
				e.gw.Room().Tick(e.clock.Now())
				continue
			}
			status, _, body := e.attempt(tab1, login)
			if status == http.StatusOK {
				admitted(body)
				break
			}
			if status != http.StatusTooManyRequests {
				t.Logf("tab 1 after its slot: %d %s", status, body)
				break
			}
			if err := json.Unmarshal(body, &tab1); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(passes) > 1 {
		t.Errorf("one login got %d passes (ids %v), want 1", len(passes), passes)
	}
}
