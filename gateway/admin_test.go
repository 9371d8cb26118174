package gateway

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/room"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestAdminAPI(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale"}}, nil)
	rooms := room.NewRooms()
	rooms.Put(e.gw.Room())
	admin := httptest.NewServer(adminHandler(rooms, "s3cret", e.clock.Now))
	defer admin.Close()
	call := func(method, path, body, token string) (int, string) {
		req, _ := http.NewRequest(method, admin.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, "")
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		return resp.StatusCode, string(buf[:n])
	}
	if code, _ := call("GET", "/rooms", "", ""); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := call("GET", "/rooms", "", "wrong"); code != 401 {
		t.Fatalf("wrong token: %d", code)
	}
	code, body := call("GET", "/rooms", "", "s3cret")
	if code != 200 || !strings.Contains(body, `"room":"sale"`) || !strings.Contains(body, `"clock_speed"`) {
		t.Fatalf("list: %d %s", code, body)
	}
	code, body = call("POST", "/rooms/sale", `{"state":"paused","rate":3,"difficulty":10}`, "s3cret")
	if code != 200 || !strings.Contains(body, `"state":"paused"`) || !strings.Contains(body, `"rate":3`) || !strings.Contains(body, `"difficulty":10`) {
		t.Fatalf("change: %d %s", code, body)
	}
	// A live change is what the GET shows, burst included.
	if code, body := call("POST", "/rooms/sale", `{"burst":7}`, "s3cret"); code != 200 || !strings.Contains(body, `"burst":7`) {
		t.Fatalf("burst change: %d %s", code, body)
	}
	if code, body := call("GET", "/rooms/sale", "", "s3cret"); code != 200 || !strings.Contains(body, `"burst":7`) || !strings.Contains(body, `"rate":3`) {
		t.Fatalf("GET after the change: %d %s", code, body)
	}
	if code, body := call("POST", "/rooms/sale", `{"bursts":7}`, "s3cret"); code != 400 || !strings.Contains(body, `unknown field`) {
		t.Fatalf("unknown field: %d %s", code, body)
	}
	for _, bad := range []string{`{"state":"busy"}`, `{"rate":-1}`, `{"difficulty":99}`, `{"state":"closed","reason":"bored"}`, `{"sale_start":"soon"}`, `{`} {
		if code, body := call("POST", "/rooms/sale", bad, "s3cret"); code != 400 {
			t.Errorf("%s: %d %s", bad, code, body)
		}
	}
	if got := e.gw.Room().Status(e.clock.Now()); got.State != "paused" || got.Difficulty != 10 {
		t.Fatalf("a bad change changed something: %+v", got)
	}
	if code, _ := call("GET", "/rooms/nope", "", "s3cret"); code != 404 {
		t.Fatalf("unknown room: %d", code)
	}
	if tk := e.ticket(); tk.Difficulty != 10 {
		t.Fatalf("new tokens use difficulty %d", tk.Difficulty)
	}
}

// TestPublicStatusAgreesWithAdmin: the public status shows the room's
// figures as the admin API does, with priority lanes too (whose default
// lane runs at a part of the room's rate), before and after a live change.
func TestPublicStatusAgreesWithAdmin(t *testing.T) {
	login := &Identity{Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(laneLoginSecret)}
	for _, tt := range []struct {
		name  string
		lanes []room.Lane
	}{
		{"no lanes", nil},
		{"a lane", []room.Lane{{Name: "vip", Share: 0.3, Claim: "tier=vip"}}},
		{"two lanes", []room.Lane{{Name: "vip", Share: 0.3, Claim: "tier=vip"}, {Name: "presale", Share: 0.2, Claim: "roles=presale"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{Config: room.Config{Room: "sale", Rate: 0.5, Lanes: tt.lanes}, Identity: login}, nil)
			rooms := room.NewRooms()
			rooms.Put(e.gw.Room())
			admin := AdminAPI(rooms, e.clock.Now)
			agree := func(when string, want float64) {
				t.Helper()
				rec := httptest.NewRecorder()
				admin.ServeHTTP(rec, httptest.NewRequest("GET", "/rooms/sale", nil))
				var a room.RoomStatus
				if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
					t.Fatal(err)
				}
				resp, body := e.do("GET", "/_fairgate/status", "")
				var p statusJSON
				if err := json.Unmarshal(body, &p); err != nil || resp.StatusCode != 200 {
					t.Fatalf("status: %d %s", resp.StatusCode, body)
				}
				if p.Rate != want || a.Rate != want || p.State != a.State || p.Waiting != math.Round(a.Waiting) ||
					(p.EstimateSeconds == nil) != (a.EstimateSeconds == nil) ||
					(p.EstimateSeconds != nil && *p.EstimateSeconds != *a.EstimateSeconds) {
					t.Fatalf("%s: public %s, admin %s, want rate %v", when, body, rec.Body, want)
				}
			}
			agree("as configured", 0.5)
			req := httptest.NewRequest("POST", "/rooms/sale", strings.NewReader(`{"rate":4}`))
			rec := httptest.NewRecorder()
			admin.ServeHTTP(rec, req)
			if rec.Code != 200 {
				t.Fatalf("rate change: %d %s", rec.Code, rec.Body)
			}
			agree("after a live change", 4)
		})
	}
}

// TestAdminSetsTau: tau changes live through the admin API as through a
// reload: every lane's clock cruises at 1/tau from now, a bad tau changes
// nothing, and a reload that leaves tau as it was keeps the live value.
func TestAdminSetsTau(t *testing.T) {
	login := &Identity{Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(laneLoginSecret)}
	for _, tt := range []struct {
		name  string
		fixed bool
		lanes []room.Lane
	}{
		{"fixed speed", true, nil},
		{"controller", false, nil},
		{"fixed speed, lanes", true, []room.Lane{{Name: "vip", Share: 0.3, Claim: "tier=vip"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Config: room.Config{Room: "sale", Keys: testKeys, Tau: Duration(time.Minute), FixedSpeed: tt.fixed, Lanes: tt.lanes}, Identity: login}
			e := newEnv(t, cfg, nil)
			sh := e.gw.Room()
			rooms := room.NewRooms()
			rooms.Put(sh)
			admin := AdminAPI(rooms, e.clock.Now)
			post := func(body string) (int, string) {
				rec := httptest.NewRecorder()
				admin.ServeHTTP(rec, httptest.NewRequest("POST", "/rooms/sale", strings.NewReader(body)))
				return rec.Code, rec.Body.String()
			}
			speeds := func(want float64) {
				t.Helper()
				now := e.clock.Now()
				if got := sh.Status(now).ClockSpeed; got != want {
					t.Fatalf("clock speed %v, want %v", got, want)
				}
				sh.EachLane(func(name string, r *admission.Room) {
					if got := r.View(now).Cruise; got != want {
						t.Fatalf("lane %q cruises at %v, want %v", name, got, want)
					}
				})
			}
			for _, bad := range []string{`{"tau":"0s"}`, `{"tau":"-5s"}`, `{"tau":"soon"}`, `{"tau":"30s","rate":-1}`} {
				if code, body := post(bad); code != 400 {
					t.Errorf("%s: %d %s", bad, code, body)
				}
			}
			speeds(1.0 / 60)
			if code, body := post(`{"tau":"30s"}`); code != 200 || !strings.Contains(body, fmt.Sprintf(`"clock_speed":%v`, 1.0/30)) {
				t.Fatalf("tau change: %d %s", code, body)
			}
			speeds(1.0 / 30)
			gw2, err := New(cfg, sh, Options{Now: e.clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			defer gw2.Close()
			if err := gw2.ApplyConfig(); err != nil {
				t.Fatal(err)
			}
			speeds(1.0 / 30)
		})
	}
}

// TestClusterAdminTauReachesEveryNode: a tau set through one node's admin
// API is every node's clock speed, in every lane, after their next poll.
func TestClusterAdminTauReachesEveryNode(t *testing.T) {
	store := storeKinds(t)["bolt"](t)
	clock := newFakeClock()
	cfg := Config{
		Config:   room.Config{Room: "tau", State: "queue", Rate: 10, Tau: Duration(time.Minute), FixedSpeed: true, Lanes: []room.Lane{{Name: "vip", Share: 0.3, Claim: "tier=vip"}}},
		Identity: &Identity{Cookie: "login", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(laneLoginSecret)},
	}
	nodes := newNodes(t, cfg, store, clock, 2)
	tau := Duration(30 * time.Second)
	if err := nodes[0].sh.Apply(room.RoomChange{Tau: &tau}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Second)
	pollAll(t, nodes, clock.Now())
	for i, n := range nodes {
		n.sh.EachLane(func(name string, r *admission.Room) {
			if got := r.View(clock.Now()).Cruise; got != 1.0/30 {
				t.Fatalf("node %d lane %q cruises at %v, want 1/30", i, name, got)
			}
		})
	}
}
