package caddymodule

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
)

// recorded receives the events the test handler sees.
var recorded = make(chan string, 64)

// recorder is the events handler `fairgate_test_record`: it records each
// event's name and data.
type recorder struct{}

func (recorder) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "events.handlers.fairgate_test_record", New: func() caddy.Module { return new(recorder) }}
}

func (recorder) UnmarshalCaddyfile(d *caddyfile.Dispenser) error { d.Next(); return nil }

func (recorder) Handle(_ context.Context, e caddy.Event) error {
	select {
	case recorded <- fmt.Sprintf("%s %v", e.Name(), e.Data):
	default:
	}
	return nil
}

func init() { caddy.RegisterModule(recorder{}) }

var _ caddyevents.Handler = recorder{}

// TestEvents: state changes (admin API and config) and admissions go through
// Caddy's events app.
func TestEvents(t *testing.T) {
	t.Setenv("FAIRGATE_IT_KEYS", testKeysJSON)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "origin") }))
	defer origin.Close()
	config := func(state string) string {
		return testCaddyfile(`	events {
		on waiting_room_state_changed fairgate_test_record
		on waiting_room_admitted fairgate_test_record
	}
`, fmt.Sprintf(`	waiting_room events {
		keys_from {env.FAIRGATE_IT_KEYS}
		difficulty 4
		state %s
	}
	reverse_proxy %s
`, state, strings.TrimPrefix(origin.URL, "http://")))
	}
	tester := newTester(t)
	tester.InitServer(config("queue"), "caddyfile")
	c := call{t: t, client: tester.Client}
	drain := func() {
		for {
			select {
			case <-recorded:
			default:
				return
			}
		}
	}
	expect := func(want string) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case got := <-recorded:
				if strings.Contains(got, want) {
					return
				}
			case <-deadline:
				t.Fatalf("no event with %q", want)
			}
		}
	}
	drain()
	c.do("POST", "http://localhost:ADMIN_PORT/waiting_room/rooms/events", `{"state":"open"}`)
	expect("waiting_room_state_changed map[by:admin_api from:queue reason: room:events to:open]")
	tk := token(t, c, "http://localhost:HTTP_PORT")
	if code, _, body := c.do("POST", "http://localhost:HTTP_PORT/_fairgate/admit", `{"nonce":"`+solve(t, tk)+`","token":"`+tk.Token+`"}`); code != 200 {
		t.Fatalf("admit: %d %s", code, body)
	}
	expect("waiting_room_admitted map[room:events waited_seconds:")
	if code, body := load(t, config("paused")); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	expect("waiting_room_state_changed map[by:config from:open reason: room:events to:paused]")
}
