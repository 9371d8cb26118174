package caddymodule

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

var update = flag.Bool("update", false, "rewrite the golden JSON of the adapt tests")

// TestAdapt: each testdata/adapt/*.caddyfile adapts, with no warnings, to
// the JSON beside it. Run with -update to accept a change.
func TestAdapt(t *testing.T) {
	files, err := filepath.Glob("testdata/adapt/*.caddyfile")
	if err != nil || len(files) == 0 {
		t.Fatalf("no adapt tests: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			got := adapt(t, file)
			golden := strings.TrimSuffix(file, ".caddyfile") + ".json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("adapted JSON differs from %s:\n%s", golden, got)
			}
		})
	}
}

func adapt(t *testing.T, file string) []byte {
	t.Helper()
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	adapter := caddyfile.Adapter{ServerType: httpcaddyfile.ServerType{}}
	out, warnings, err := adapter.Adapt(body, map[string]any{"filename": file})
	if err != nil {
		t.Fatalf("adapting %s: %v", file, err)
	}
	if len(warnings) > 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out, "", "\t"); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// TestAdaptOrder: waiting_room runs before basic_auth and reverse_proxy
// however the Caddyfile lists them.
func TestAdaptOrder(t *testing.T) {
	out := string(adapt(t, "testdata/adapt/order.caddyfile"))
	wr := strings.Index(out, `"handler": "waiting_room"`)
	auth := strings.Index(out, `"handler": "authentication"`)
	rp := strings.Index(out, `"handler": "reverse_proxy"`)
	if wr < 0 || auth < 0 || rp < 0 || wr > auth || wr > rp {
		t.Fatalf("order: waiting_room at %d, basic_auth at %d, reverse_proxy at %d", wr, auth, rp)
	}
}

func TestCaddyfileErrors(t *testing.T) {
	for _, input := range []string{
		"waiting_room a b",
		"waiting_room {\n nope\n}",
		"waiting_room {\n rate\n}",
		"waiting_room {\n rate fast\n}",
		"waiting_room {\n difficulty 1 2\n}",
		"waiting_room {\n tau soon\n}",
		"waiting_room {\n backoff 1s\n}",
		"waiting_room {\n sessions\n}",
		"waiting_room {\n keys {\n key k1\n }\n}",
		"waiting_room {\n bypass {\n path\n }\n}",
		"waiting_room {\n bypass {\n nope x\n }\n}",
		"waiting_room {\n identity {\n nope\n }\n}",
		"waiting_room {\n admission_hook\n}",
		"waiting_room {\n cache\n}",
		"waiting_room {\n fixed_speed yes\n}",
		"waiting_room {\n waiting_page\n}",
		"waiting_room {\n language de fr\n}",
		"waiting_room {\n state_store\n}",
		"waiting_room {\n state_store bolt {\n nope x\n }\n}",
		"waiting_room {\n state_store bolt {\n poll soon\n }\n}",
	} {
		h := new(Handler)
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err == nil {
			t.Errorf("accepted %q", input)
		}
	}
}

// TestCaddyfileMistakes: each mistake is refused at adapt time with a
// message naming the option, with file and line.
func TestCaddyfileMistakes(t *testing.T) {
	for _, tc := range []struct{ name, block, want, at string }{
		{"state typo", "state queu", `state: unknown room state "queu"`, "at Caddyfile:3"},
		{"difficulty range", "difficulty 99", "difficulty 99: must be 0 to", "at Caddyfile:3"},
		{"hook without scheme", "admission_hook ftp//nope", `admission_hook: url "ftp//nope"`, "at Caddyfile:3"},
		{"hook ftp", "admission_hook ftp://x/y", `admission_hook: url "ftp://x/y": want an absolute http:// or https:// URL`, "at Caddyfile:3"},
		{"hook on_failure", "admission_hook http://x/y {\n on_failure maybe\n }", `on_failure: "maybe"`, "at Caddyfile:5"},
		{"backoff order", "backoff 30s 2s", "backoff: min_backoff 30s is longer than max_backoff 2s", "at Caddyfile:3"},
		{"repeated option", "rate 5\n rate 6", `waiting_room option "rate" given twice`, "at Caddyfile:4"},
		{"second cache block", "cache /a/*\n cache /b/*", `waiting_room option "cache" given twice`, "at Caddyfile:4"},
		{"repeated hook timeout", "admission_hook http://x/y {\n timeout 1s\n timeout 2s\n }", `option "timeout" given twice`, "at Caddyfile:5"},
		{"scheduled without start", "state scheduled", "a scheduled room needs sale_start", "at Caddyfile:"},
		{"bad duration", "tau soon", `duration "soon"`, "at Caddyfile:3"},
		{"state store type", "state_store redis", `state_store: type "redis": want memory, bolt or dynamodb`, "at Caddyfile:3"},
		{"state store answer", "state_store dynamodb {\n on_unavailable maybe\n }", `on_unavailable "maybe"`, "at Caddyfile:"},
		{"bolt with a table", "state_store bolt {\n table t\n }", "table, region and endpoint are for dynamodb", "at Caddyfile:"},
		{"rate 0", "rate 0", "rate 0: must be a positive number of admissions per second", "at Caddyfile:3"},
		{"bad user_agent regexp", "bypass {\n user_agent (\n }", "bypass: user_agents: ", "at Caddyfile:"},
		{"cache path without slash", "cache static/*", `cache: path "static/*" must start with /`, "at Caddyfile:3"},
		{"capacity 0", "capacity 0", "capacity 0: must be a positive number of active visitors", "at Caddyfile:3"},
		{"capacity with sessions", "sessions 500\n capacity 400", "capacity and sessions both size the room", "at Caddyfile:"},
		{"active_window alone", "active_window 5m", "active_window: only applies with capacity", "at Caddyfile:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := adaptText("http://localhost {\n\twaiting_room sale {\n\t\t" + tc.block + "\n\t}\n}\n")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.at) {
				t.Fatalf("got %v, want %q %s", err, tc.want, tc.at)
			}
		})
	}
	out, err := adaptText("http://localhost {\n\twaiting_room sale {\n\t\tactive_window 5m\n\t\tcapacity 400\n\t\trate 20\n\t}\n}\n")
	if err != nil || !strings.Contains(string(out), `"capacity":400`) || !strings.Contains(string(out), `"active_window":"5m0s"`) {
		t.Fatalf("capacity: %v %s", err, out)
	}
	// Caddy's durations: days work.
	out, err = adaptText("http://localhost {\n\twaiting_room sale {\n\t\ttoken_ttl 1d\n\t}\n}\n")
	if err != nil || !strings.Contains(string(out), `"token_ttl":"24h0m0s"`) {
		t.Fatalf("token_ttl 1d: %v %s", err, out)
	}
}

// TestCaddyfileMatcher: a matcher on the directive gives the room's
// endpoints a route of their own.
func TestCaddyfileMatcher(t *testing.T) {
	out, err := adaptText("http://localhost {\n\twaiting_room /a/* roomA {\n\t\tprefix /_queue\n\t}\n\trespond ok\n}\n")
	if err != nil || !strings.Contains(string(out), `"path":["/_queue/*"]`) || !strings.Contains(string(out), `"path":["/a/*"]`) {
		t.Fatalf("matcher: %v %s", err, out)
	}
}

func adaptText(body string) ([]byte, error) {
	adapter := caddyfile.Adapter{ServerType: httpcaddyfile.ServerType{}}
	out, _, err := adapter.Adapt([]byte(body), map[string]any{"filename": "Caddyfile"})
	return out, err
}
