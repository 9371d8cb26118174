package gateway

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fairgate/fairgate/room"
)

var laneLoginSecret = []byte("site-login-secret-0123456789abcdef")

// laneEnv is a room with a VIP lane of a fifth of 10 admissions a second,
// open so that every attempt is eligible at once and only the buckets
// decide: the default lane admits 8 a second, the VIP lane 2.
func laneEnv(t *testing.T) *env {
	return newEnv(t, Config{
		Config: room.Config{Room: "sale", State: "open", Rate: 10, Lanes: []room.Lane{{Name: "vip", Share: 0.2, Claim: "tier=vip"}}},
		Identity: &Identity{Header: "Authorization", Algorithm: "HS256",
			Key: base64.StdEncoding.EncodeToString(laneLoginSecret)},
	}, nil)
}

func laneLogin(t *testing.T, e *env, sub string, claims jwt.MapClaims) string {
	t.Helper()
	c := jwt.MapClaims{"sub": sub, "exp": e.clock.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(laneLoginSecret)
	if err != nil {
		t.Fatal(err)
	}
	return "Bearer " + s
}

// post sends one request as a visitor without cookies: every visitor of
// these tests is its own browser.
func (e *env) post(path, body, login string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if login != "" {
		req.Header.Set("Authorization", login)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (e *env) laneTicket(login string) ticketJSON {
	e.t.Helper()
	status, body := e.post("/_fairgate/token", "", login)
	if status != http.StatusOK {
		e.t.Fatalf("token: %d %s", status, body)
	}
	var tk ticketJSON
	if err := json.Unmarshal(body, &tk); err != nil {
		e.t.Fatal(err)
	}
	return tk
}

// attempt is one admission attempt: 200 admitted, or 429 and how long to
// wait for the slot held.
func (e *env) attempt(tk ticketJSON, login string) (int, float64, []byte) {
	e.t.Helper()
	status, body := e.post("/_fairgate/admit", `{"token":"`+tk.Token+`","nonce":"`+solveFor(e.t, tk)+`"}`, login)
	var next ticketJSON
	_ = json.Unmarshal(body, &next)
	return status, next.RetryAfter, body
}

// TestLaneAdmitsAtItsRateWhileDefaultBacksUp: 40 default visitors swamp
// the default lane's 8 a second (the last of them holds a slot 4 seconds
// out), and VIPs arriving at the same moment are admitted at their own
// lane's 2 a second: two at once, then half a second apart.
func TestLaneAdmitsAtItsRateWhileDefaultBacksUp(t *testing.T) {
	e := laneEnv(t)
	var lastWait float64
	for i := range 40 {
		status, wait, body := e.attempt(e.laneTicket(""), "")
		switch {
		case i < 8 && status != http.StatusOK:
			t.Fatalf("default visitor %d: %d %s, want admitted from the burst", i, status, body)
		case i >= 8 && status != http.StatusTooManyRequests:
			t.Fatalf("default visitor %d: %d %s, want a slot later", i, status, body)
		}
		lastWait = wait
	}
	if lastWait < 3.5 {
		t.Fatalf("the default lane is not backed up: its last slot is %vs out", lastWait)
	}
	for i, want := range []float64{0, 0, 0.5, 1} {
		login := laneLogin(t, e, "vip-"+string(rune('a'+i)), jwt.MapClaims{"tier": "vip"})
		tk := e.laneTicket(login)
		if tk.Lane != "vip" {
			t.Fatalf("vip %d waits in lane %q", i, tk.Lane)
		}
		status, wait, body := e.attempt(tk, login)
		switch {
		case want == 0 && status != http.StatusOK:
			t.Fatalf("vip %d: %d %s, want admitted at once", i, status, body)
		case want > 0 && (status != http.StatusTooManyRequests || wait < want-0.05 || wait > want+0.05):
			t.Fatalf("vip %d: %d, slot in %vs, want %vs (the lane's 2 a second): %s", i, status, wait, want, body)
		}
	}
	// A default visitor arriving now still queues behind the 32 slots.
	if status, wait, _ := e.attempt(e.laneTicket(""), ""); status != http.StatusTooManyRequests || wait < lastWait {
		t.Fatalf("a default visitor after the VIPs: %d, slot in %vs, want after %vs", status, wait, lastWait)
	}
	st := e.gw.Room().Status(e.clock.Now())
	if len(st.Lanes) != 2 || st.Lanes[0].Admitted != 8 || st.Lanes[1].Lane != "vip" || st.Lanes[1].Admitted != 2 {
		t.Fatalf("admin lanes = %+v, want 8 admitted by default and 2 by vip", st.Lanes)
	}
	if v := testutil.ToFloat64(e.gw.metrics.laneAdmissions.WithLabelValues("vip")); v != 2 {
		t.Fatalf("fairgate_lane_admissions_total{lane=vip} = %v, want 2", v)
	}
	if n, err := testutil.GatherAndCount(e.reg, "fairgate_lane_target_rate", "fairgate_lane_waiting_estimate", "fairgate_lane_bucket_level"); err != nil || n != 6 {
		t.Fatalf("lane gauges: %d series, %v; want 3 for each of 2 lanes", n, err)
	}
}

// TestLaneShareIsNotLostWhenEmpty: while only the default lane has
// visitors it gets the whole rate; once VIPs wait, the shares are back.
func TestLaneShareIsNotLostWhenEmpty(t *testing.T) {
	e := laneEnv(t)
	sh := e.gw.Room()
	for range 20 {
		e.attempt(e.laneTicket(""), "")
	}
	sh.Tick(e.clock.Now())
	if l := sh.Status(e.clock.Now()).Lanes; l[0].Rate != 10 {
		t.Fatalf("default lane rate with the vip lane empty = %v, want the whole 10", l[0].Rate)
	}
	login := laneLogin(t, e, "vip", jwt.MapClaims{"tier": "vip"})
	e.attempt(e.laneTicket(login), login)
	e.clock.Add(time.Second) // the window counts whole seconds
	sh.Tick(e.clock.Now())
	if l := sh.Status(e.clock.Now()).Lanes; l[0].Rate != 8 || l[1].Rate != 2 {
		t.Fatalf("rates with both lanes busy = %v and %v, want 8 and 2", l[0].Rate, l[1].Rate)
	}
}

// TestLaneNotGrantedWithoutTheClaim: a login without the lane's claim
// waits in the default lane, whatever else it says, and a forged login
// claiming the lane is not a login.
func TestLaneNotGrantedWithoutTheClaim(t *testing.T) {
	e := laneEnv(t)
	for _, claims := range []jwt.MapClaims{nil, {"tier": "gold"}, {"tier": []string{"basic"}}, {"role": "vip"}} {
		if tk := e.laneTicket(laneLogin(t, e, "bob", claims)); tk.Lane != "" {
			t.Fatalf("login %v got lane %q", claims, tk.Lane)
		}
	}
	if tk := e.laneTicket(laneLogin(t, e, "carol", jwt.MapClaims{"tier": []string{"basic", "vip"}})); tk.Lane != "vip" {
		t.Fatalf("a login with vip among its tiers got lane %q", tk.Lane)
	}
	forged, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "bob", "tier": "vip",
		"exp": e.clock.Now().Add(time.Hour).Unix()}).SignedString([]byte("not-the-site-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if status, body := e.post("/_fairgate/token", "", "Bearer "+forged); status != http.StatusUnauthorized {
		t.Fatalf("forged vip login: %d %s", status, body)
	}
}

// TestLaneTokenRefusedWithoutTheLane: a VIP token presented with a login
// that no longer carries the claim (the same account, downgraded) is
// refused, as is the same token presented without any login.
func TestLaneTokenRefusedWithoutTheLane(t *testing.T) {
	e := laneEnv(t)
	vip := laneLogin(t, e, "alice", jwt.MapClaims{"tier": "vip"})
	plain := laneLogin(t, e, "alice", nil)
	tk := e.laneTicket(vip)
	status, _, body := e.attempt(tk, plain)
	if status != http.StatusForbidden || !strings.Contains(string(body), `"lane"`) {
		t.Fatalf("vip token with a plain login: %d %s, want 403 lane", status, body)
	}
	// Without any login (allowed here) the token is refused too: it
	// belongs to a login (403 identity, checked before the lane).
	if status, _, body := e.attempt(tk, ""); status != http.StatusForbidden {
		t.Fatalf("vip token without a login: %d %s, want 403", status, body)
	}
	if status, _, body := e.attempt(tk, vip); status != http.StatusOK {
		t.Fatalf("vip token with its vip login: %d %s", status, body)
	}
}

func TestLaneConfigErrors(t *testing.T) {
	id := &Identity{Header: "Authorization", Algorithm: "HS256", Key: "c2VjcmV0"}
	tests := []struct {
		name  string
		lanes []room.Lane
		id    *Identity
		want  string
	}{
		{"no identity", []room.Lane{{Name: "vip", Share: 0.2, Claim: "tier=vip"}}, nil, "lanes need identity"},
		{"zero share", []room.Lane{{Name: "vip", Share: 0, Claim: "tier=vip"}}, id, "share 0"},
		{"whole share", []room.Lane{{Name: "vip", Share: 1, Claim: "tier=vip"}}, id, "share 1"},
		{"shares sum to 1", []room.Lane{{Name: "a", Share: 0.5, Claim: "t=a"}, {Name: "b", Share: 0.5, Claim: "t=b"}}, id, "sum to 1"},
		{"duplicate name", []room.Lane{{Name: "a", Share: 0.1, Claim: "t=a"}, {Name: "a", Share: 0.1, Claim: "t=b"}}, id, "used twice"},
		{"bad name", []room.Lane{{Name: "v i p", Share: 0.1, Claim: "t=a"}}, id, "name"},
		{"default name", []room.Lane{{Name: "default", Share: 0.1, Claim: "t=a"}}, id, "default lane"},
		{"claim without =", []room.Lane{{Name: "vip", Share: 0.1, Claim: "tier"}}, id, "want key=value"},
		{"claim without value", []room.Lane{{Name: "vip", Share: 0.1, Claim: "tier="}}, id, "want key=value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Config{Config: room.Config{Lanes: tt.lanes}, Identity: tt.id}.settle()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

// TestLaneReloadKeepsPlaces: a reload that adds a lane keeps the default
// lane's room (and every place in it) and starts the new lane in the
// room's live state.
func TestLaneReloadKeepsPlaces(t *testing.T) {
	e := laneEnv(t)
	sh := e.gw.Room()
	def, vip := sh.Room, sh.LaneRoom("vip")
	if err := sh.Apply(room.RoomChange{State: ptr("paused")}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	cfg := e.gw.cfg.Config
	cfg.Lanes = append(cfg.Lanes, room.Lane{Name: "presale", Share: 0.1, Claim: "roles=presale"})
	gw2, err := New(cfg, sh, Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer gw2.Close()
	if err := gw2.ApplyConfig(); err != nil {
		t.Fatal(err)
	}
	if sh.Room != def || sh.LaneRoom("vip") != vip {
		t.Fatal("a reload adding a lane replaced the rooms of the kept lanes")
	}
	if st := sh.LaneRoom("presale").View(e.clock.Now()).State; st != "paused" || sh.LaneRoom("presale") == def {
		t.Fatalf("new lane: state %q, want the room's live paused", st)
	}
	if l := sh.Status(e.clock.Now()).Lanes; len(l) != 3 || math.Abs(l[0].Share-0.7) > 1e-9 {
		t.Fatalf("lanes after reload = %+v, want 3 with the default lane's share 0.7", l)
	}
}

func ptr[T any](v T) *T { return &v }

// TestLaneAdminAPI: the admin API shows each lane, and a change of state,
// rate or difficulty applies to every lane, the rate split by share.
func TestLaneAdminAPI(t *testing.T) {
	e := laneEnv(t)
	rooms := room.NewRooms()
	rooms.Put(e.gw.Room())
	admin := httptest.NewServer(adminHandler(rooms, "s3cret", e.clock.Now))
	defer admin.Close()
	req, _ := http.NewRequest("POST", admin.URL+"/rooms/sale", strings.NewReader(`{"state":"paused","rate":20,"difficulty":9}`))
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st room.RoomStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != 200 {
		t.Fatalf("change: %d %v", resp.StatusCode, err)
	}
	if st.Rate != 20 || len(st.Lanes) != 2 || st.Lanes[1].Lane != "vip" || math.Abs(st.Lanes[0].Rate-16) > 1e-9 || math.Abs(st.Lanes[1].Rate-4) > 1e-9 {
		t.Fatalf("status after the change = %+v, want rate 20 split 16 and 4", st)
	}
	v := e.gw.Room().LaneRoom("vip").View(e.clock.Now())
	if v.State != "paused" || v.Difficulty != 9 {
		t.Fatalf("vip lane: state %q difficulty %d, want paused and 9", v.State, v.Difficulty)
	}
}
