package gateway

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fairgate/fairgate/gateway/pages"
	"github.com/fairgate/fairgate/room"
)

// TestAPIRoutes: each endpoint answers its methods, every other method a
// JSON 405 naming them in Allow, and an unknown path a JSON 404, under the
// configured prefix only.
func TestAPIRoutes(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale"}, Prefix: "/queue/v1"}, nil)
	asset := "/queue/v1/assets/" + pages.AssetVersion() + "/waiting.js"
	for _, tc := range []struct {
		method, path string
		status       int
		allow, code  string
	}{
		{"POST", "/queue/v1/token", 200, "", ""},
		{"GET", "/queue/v1/token", 405, "POST", "method"},
		{"PUT", "/queue/v1/admit", 405, "POST", "method"},
		{"POST", "/queue/v1/admit", 400, "", "malformed"}, // an empty body
		{"GET", "/queue/v1/status", 200, "", ""},
		{"HEAD", "/queue/v1/status", 200, "", ""},
		{"DELETE", "/queue/v1/status", 405, "GET, HEAD", "method"},
		{"GET", asset, 200, "", ""},
		{"HEAD", asset, 200, "", ""},
		{"POST", asset, 405, "GET, HEAD", "method"},
		{"GET", "/queue/v1/assets/" + pages.AssetVersion() + "/waiting.html", 404, "", "not_found"},
		{"GET", "/queue/v1/nope", 404, "", "not_found"},
		{"POST", "/queue/v1/token/extra", 404, "", "not_found"},
		{"POST", "/_fairgate/token", 200, "", "waiting page"}, // not an endpoint here: the site, held
	} {
		resp, body := e.do(tc.method, tc.path, "")
		if resp.StatusCode != tc.status || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d, Allow %q; want %d, %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), tc.status, tc.allow)
			continue
		}
		if tc.code == "" || tc.method == "HEAD" || tc.code == "waiting page" {
			continue
		}
		var got struct{ Error errorBody }
		if err := json.Unmarshal(body, &got); err != nil || got.Error.Code != tc.code {
			t.Errorf("%s %s: body %s, want error code %q", tc.method, tc.path, body, tc.code)
		}
	}
}

// TestPrefixRule: a prefix is a plain path; anything a route pattern would
// read otherwise is refused with the option named.
func TestPrefixRule(t *testing.T) {
	for p, ok := range map[string]bool{
		"/_fairgate": true, "/queue/v1": true, "/a-b.c~d_e": true,
		"":          true, // the default
		"_fairgate": false, "/_fairgate/": false, "/a//b": false, "/a/../b": false, "/.": false,
		"/{x}": false, "/a b": false, "/a%20b": false, "/": false, "/ü": false,
	} {
		_, err := Config{Config: room.Config{Room: "sale", Keys: testKeys}, Prefix: p}.settle()
		if (err == nil) != ok {
			t.Errorf("prefix %q: %v", p, err)
		}
	}
}

// TestAdminRoutes: the admin API's routes under any mount point, its JSON
// 405s with Allow and its 404s.
func TestAdminRoutes(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale"}}, nil)
	rooms := room.NewRooms()
	rooms.Put(e.gw.Room())
	api := AdminAPI(rooms, e.clock.Now) // one mux serves every request
	for _, mount := range []string{"", "/waiting_room"} {
		for _, tc := range []struct {
			method, path, body string
			status             int
			allow, code        string
		}{
			{"GET", "/rooms", "", 200, "", ""},
			{"GET", "/rooms/", "", 200, "", ""},
			{"POST", "/rooms", "{}", 405, "GET, HEAD", "method"},
			{"GET", "/rooms/sale", "", 200, "", ""},
			{"PATCH", "/rooms/sale", `{"rate":7}`, 200, "", ""},
			{"POST", "/rooms/sale", `{"rate":"x"}`, 400, "", "malformed"},
			{"POST", "/rooms/sale", `{"rate":-1}`, 400, "", "invalid"},
			{"DELETE", "/rooms/sale", "", 405, "GET, HEAD, PATCH, POST", "method"},
			{"GET", "/rooms/nope", "", 404, "", "not_found"},
			{"POST", "/rooms/nope", "{}", 404, "", "not_found"},
			{"GET", "/rooms/sale/x", "", 404, "", "not_found"},
			{"GET", "/other", "", 404, "", "not_found"},
		} {
			w := httptest.NewRecorder()
			api.ServeHTTP(w, httptest.NewRequest(tc.method, mount+tc.path, strings.NewReader(tc.body)))
			if w.Code != tc.status || w.Header().Get("Allow") != tc.allow {
				t.Errorf("%s %s%s: %d, Allow %q; want %d, %q (%s)", tc.method, mount, tc.path, w.Code, w.Header().Get("Allow"), tc.status, tc.allow, w.Body)
				continue
			}
			var got struct{ Error errorBody }
			if tc.code != "" && (json.Unmarshal(w.Body.Bytes(), &got) != nil || got.Error.Code != tc.code) {
				t.Errorf("%s %s%s: body %s, want error code %q", tc.method, mount, tc.path, w.Body, tc.code)
			}
		}
	}
	if rate := e.gw.Room().Status(e.clock.Now()).Rate; rate != 7 {
		t.Errorf("rate %v after the PATCHes, want 7", rate)
	}
}
