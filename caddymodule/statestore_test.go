package caddymodule

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/fairgate/fairgate/room"
)

// storeStatus is what these tests read of a room's admin API figures.
type storeStatus struct {
	State      string              `json:"state"`
	ClockState json.RawMessage     `json:"clock_state"`
	Cluster    *room.ClusterStatus `json:"cluster"`
}

// readStoreStatus reads a room's figures (at its admin API url) when
// said; the room must answer and be on a state store.
func readStoreStatus(c call, url, when string) storeStatus {
	c.t.Helper()
	code, _, body := c.do("GET", url, "")
	var st storeStatus
	if err := json.Unmarshal([]byte(body), &st); err != nil || code != 200 || st.Cluster == nil {
		c.t.Fatalf("%s: room: %d %s", when, code, body)
	}
	return st
}

// TestStateStoreKeepsTheRoom runs a room on a bolt state store in a temp
// dir: a reload keeps its clock and ledger, and so does taking the room out
// of the config and bringing it back (its shared state is destroyed and the
// store closed, as in a restart of Caddy): the clock resumes where it was,
// not at zero, and a token admitted before is refused after.
func TestStateStoreKeepsTheRoom(t *testing.T) {
	t.Setenv("FAIRGATE_IT_KEYS", testKeysJSON)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "origin") }))
	defer origin.Close()
	path := filepath.Join(t.TempDir(), "rooms.db")
	opts := "state open\n\t\tdifficulty 4\n\t\ttau 1m\n\t\tfixed_speed\n\t\tstate_store bolt {\n\t\t\tpath " + path + "\n\t\t}"
	tester := newTester(t)
	tester.InitServer(reloadConfig(origin.URL, opts, ""), "caddyfile")
	c := call{t: t, client: tester.Client}
	site := "http://localhost:HTTP_PORT"
	room := "http://localhost:ADMIN_PORT/waiting_room/rooms/reload"

	tk := token(t, c, site)
	nonce := solve(t, tk)
	code, _, first := c.do("POST", site+"/_fairgate/admit", `{"nonce":"`+nonce+`","token":"`+tk.Token+`"}`)
	if code != 200 {
		t.Fatalf("admit: %d %s", code, first)
	}
	if code, _, body := c.do("POST", room, `{"state":"queue"}`); code != 200 {
		t.Fatalf("queue: %d %s", code, body)
	}
	read := func(when string) storeStatus {
		t.Helper()
		st := readStoreStatus(c, room, when)
		if st.Cluster.Store != "bolt" {
			t.Fatalf("%s: room on store %q, want bolt", when, st.Cluster.Store)
		}
		return st
	}
	before := read("before")
	if before.State != "queue" {
		t.Fatalf("state %s", before.State)
	}

	tester.InitServer(reloadConfig(origin.URL, opts, "header X-Reloaded yes"), "caddyfile")
	if after := read("after a reload"); after.State != "queue" || string(after.ClockState) != string(before.ClockState) {
		t.Fatalf("a reload changed the room: %+v, was %+v", after, before)
	}

	// The room leaves the config: its shared state goes, the store closes.
	if code, body := load(t, `{
	admin localhost:ADMIN_PORT
	http_port HTTP_PORT
	https_port HTTPS_PORT
	grace_period 1ns
}
http://localhost:HTTP_PORT {
	respond "no room"
}
`); code != 200 {
		t.Fatalf("config without the room: %d %s", code, body)
	}
	if code, _, _ := c.do("GET", room, ""); code != 404 {
		t.Fatalf("the room is still listed: %d", code)
	}
	// And comes back: the stored clock and ledger, not a new room.
	tester.InitServer(reloadConfig(origin.URL, opts, ""), "caddyfile")
	back := read("back")
	if back.State != "queue" || string(back.ClockState) != string(before.ClockState) {
		t.Fatalf("the room came back as %+v, was %+v", back, before)
	}
	code, _, body := c.do("POST", room, `{"state":"open"}`)
	if code != 200 {
		t.Fatalf("open: %d %s", code, body)
	}
	// Its own admission answered again (the same pass), not a new one.
	if code, _, body := c.do("POST", site+"/_fairgate/admit", `{"nonce":"`+nonce+`","token":"`+tk.Token+`"}`); code != 200 || passOf(t, body) != passOf(t, first) {
		t.Fatalf("the token admitted before came back: %d %s, want its first pass again", code, body)
	}
}

// TestReloadAppliesStateStoreSettings: a reload that changes only how the
// room uses its store (on_unavailable, node) takes effect, and the room
// keeps its stored state: the settings take effect without a Caddy restart.
func TestReloadAppliesStateStoreSettings(t *testing.T) {
	t.Setenv("FAIRGATE_IT_KEYS", testKeysJSON)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "origin") }))
	defer origin.Close()
	path := filepath.Join(t.TempDir(), "rooms.db")
	opts := func(store string) string {
		return "state queue\n\t\tdifficulty 4\n\t\tstate_store bolt {\n\t\t\tpath " + path + "\n" + store + "\t\t}"
	}
	tester := newTester(t)
	c := call{t: t, client: tester.Client}
	room := "http://localhost:ADMIN_PORT/waiting_room/rooms/reload"
	read := func(when string) storeStatus { return readStoreStatus(c, room, when) }
	tester.InitServer(reloadConfig(origin.URL, opts("\t\t\tnode n1\n"), ""), "caddyfile")
	if code, _, body := c.do("POST", room, `{"state":"paused"}`); code != 200 {
		t.Fatalf("pause: %d %s", code, body)
	}
	before := read("before")
	if before.Cluster.OnUnavailable != "refuse" || before.Cluster.Node != "n1" {
		t.Fatalf("before the reload: %+v", *before.Cluster)
	}
	tester.InitServer(reloadConfig(origin.URL, opts("\t\t\tnode n2\n\t\t\ton_unavailable local\n"), ""), "caddyfile")
	after := read("after")
	if after.Cluster.OnUnavailable != "local" || after.Cluster.Node != "n2" {
		t.Fatalf("a reload to on_unavailable local, node n2 left the room at %+v", *after.Cluster)
	}
	if after.State != "paused" {
		t.Fatalf("the reload lost the stored state: %s, was paused", after.State)
	}
}
