package caddymodule

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// validateConfig validates a config as `caddy validate` does: adapted
// (when it is a Caddyfile), provisioned, never started.
func validateConfig(t *testing.T, config string, caddyfile bool) error {
	t.Helper()
	raw := []byte(config)
	if caddyfile {
		var err error
		if raw, err = adaptText(config); err != nil {
			return err
		}
	}
	var cfg caddy.Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	return caddy.Validate(&cfg)
}

// waitingRoom is a waiting_room directive with keys and the given options.
func waitingRoom(args, options string) string {
	return "\twaiting_room " + args + " {\n\t\tkeys_from {env.FAIRGATE_IT_KEYS}\n\t\t" + options + "\n\t}\n"
}

// TestValidateAgreesWithRun: every check a config can fail runs when the
// config is provisioned, so `caddy validate` refuses what `caddy run` and
// `caddy reload` refuse, with the same message, and passes what they run.
func TestValidateAgreesWithRun(t *testing.T) {
	t.Setenv("FAIRGATE_IT_KEYS", testKeysJSON)
	file := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	site := func(body string) string { return testCaddyfile("", body+"\trespond ok\n") }
	tester := newTester(t)
	tester.InitServer(site(""), "caddyfile")

	for _, tc := range []struct {
		name    string
		config  string
		refused []string // parts of the error; none: the config runs
	}{
		{
			name:    "room inside handle, prefix outside it",
			config:  site("\thandle /a/* {\n" + waitingRoom("inside", "") + "\t}\n"),
			refused: []string{"waiting room inside: its endpoints under prefix /_fairgate are not routed to it"},
		},
		{
			name:    "two rooms, one prefix",
			config:  site(waitingRoom("/a/* one", "") + waitingRoom("/b/* two", "")),
			refused: []string{"waiting rooms one and two both serve their endpoints under prefix /_fairgate", "give one of them its own prefix: set room two's prefix to a path its route covers (e.g. `prefix /b/_fairgate`)"},
		},
		{
			name:   "two rooms, own prefixes",
			config: site(waitingRoom("/a/* one", "prefix /a/_fairgate") + waitingRoom("/b/* two", "prefix /b/_fairgate")),
		},
		{
			name: "two rooms on two sites of one server",
			config: testCaddyfile("", waitingRoom("one", "")+"\trespond ok\n") +
				"http://127.0.0.1:HTTP_PORT {\n" + waitingRoom("two", "") + "\trespond ok\n}\n",
		},
		{
			name:    "one room, two settings",
			config:  site(waitingRoom("/a/* same", "rate 5") + waitingRoom("/b/* same", "rate 20")),
			refused: []string{`room "same" is configured twice with different settings (rate 5 and 20)`},
		},
		{
			name:    "bolt file under a file",
			config:  site(waitingRoom("bolt", "state_store bolt {\n\t\t\tpath "+file+"/rooms.db\n\t\t}")),
			refused: []string{"waiting room bolt: state_store: path " + file + "/rooms.db: " + file + " is a file, where a directory must be"},
		},
		{
			name:    "bolt file is a directory",
			config:  site(waitingRoom("bolt", "state_store bolt {\n\t\t\tpath "+dir+"\n\t\t}")),
			refused: []string{"waiting room bolt: state_store: path " + dir + " is a directory"},
		},
		{
			name:   "bolt file in directories still to make",
			config: site(waitingRoom("bolt", "state_store bolt {\n\t\t\tpath "+dir+"/x/y/rooms.db\n\t\t}")),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			verr := validateConfig(t, withPorts(tc.config), true)
			code, body := load(t, tc.config)
			if len(tc.refused) == 0 {
				if verr != nil || code != 200 {
					t.Fatalf("a good config: validate says %v; Caddy's load answered %d %s", verr, code, body)
				}
				return
			}
			if verr == nil || code == 200 {
				t.Fatalf("validate says %v; Caddy's load answered %d %s: both must refuse", verr, code, body)
			}
			for _, want := range tc.refused {
				if !strings.Contains(verr.Error(), want) || !strings.Contains(strings.ReplaceAll(body, `\"`, `"`), want) {
					t.Fatalf("want %q\nvalidate: %v\nload: %s", want, verr, body)
				}
			}
		})
	}
}

// TestRateZeroRefused: a rate of 0 is refused, naming the option, in the
// Caddyfile (at its line) and in JSON (where it would read as unset).
func TestRateZeroRefused(t *testing.T) {
	_, err := adaptText("http://localhost {\n\twaiting_room sale {\n\t\trate 0\n\t}\n}\n")
	if err == nil || !strings.Contains(err.Error(), "rate 0: must be a positive number") || !strings.Contains(err.Error(), "Caddyfile:3") {
		t.Fatalf("Caddyfile rate 0: %v", err)
	}
	for _, tc := range []struct {
		rate    string
		refused bool
	}{{`"rate":0,`, true}, {`"rate":0.5,`, false}, {"", false}} {
		config := `{"admin":{"disabled":true},"apps":{"http":{"servers":{"s":{"listen":["localhost:0"],"routes":[{"handle":[
			{"handler":"waiting_room","room":"json",` + tc.rate + `"state_store":{"type":"memory"},"keys_from":"{env.FAIRGATE_IT_KEYS}"}]}]}}}}}`
		t.Setenv("FAIRGATE_IT_KEYS", testKeysJSON)
		err := validateConfig(t, config, false)
		if refused := err != nil; refused != tc.refused || (refused && !strings.Contains(err.Error(), "waiting room json: rate 0: must be a positive number")) {
			t.Errorf("JSON %q: %v", tc.rate, err)
		}
	}
}

// TestNoKeysWarnedOncePerRoom: a room without keys is warned about once
// per config load, however many handlers it has.
func TestNoKeysWarnedOncePerRoom(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	config := "{\n\tadmin off\n\tlog {\n\t\toutput file " + logFile + "\n\t\tformat json\n\t}\n}\n" +
		"http://localhost:0 {\n\twaiting_room /a/* nokeys {\n\t\tstate_store memory\n\t}\n\twaiting_room /b/* other {\n\t\tprefix /b/_q\n\t\tstate_store memory\n\t}\n\trespond ok\n}\n"
	if err := validateConfig(t, config, true); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"nokeys", "other"} {
		n := 0
		for line := range strings.Lines(string(raw)) {
			if strings.Contains(line, "NO KEYS CONFIGURED") && strings.Contains(line, `"room":"`+r+`"`) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("room %s: %d NO KEYS warnings in one validation, want 1:\n%s", r, n, raw)
		}
	}
}
