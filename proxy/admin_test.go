package proxy

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAdminAPI(t *testing.T) {
	e := newEnv(t, Config{Room: "sale"}, nil)
	rooms := NewRooms()
	rooms.Put(e.gw.Room())
	admin := httptest.NewServer(AdminHandler(rooms, "s3cret", e.clock.Now))
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
