package proxy

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
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
			e := newEnv(t, Config{Room: "sale", State: "queue", QueueOrder: tt.order, Rate: 1, Burst: 1,
				Lanes: []Lane{{Name: "vip", Share: 0.2, Claim: "tier=vip"}},
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
						pc, err := e.gw.gate.VerifyPass("sale", a.Pass, e.clock.Now())
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
