package caddymodule

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/fairgate/fairgate/internal/testhttp"
)

// load posts a Caddyfile to the admin API's /load, as `caddy reload` does,
// and returns Caddy's answer.
func load(t *testing.T, caddyfile string, header ...string) (int, string) {
	t.Helper()
	return adminCall(t, "POST", "/load", caddyfile, append([]string{"Content-Type", "text/caddyfile"}, header...)...)
}

// adminCall sends one request to the admin API on a connection of its
// own, as `caddy reload` makes: a load, even one Caddy rejects, may
// replace the admin server, closing the idle connections of the one
// before. The one before may still be closing when the next call
// connects: a connection it drops unanswered is tried again, a few times
// (loading the same config twice changes nothing, a GET nothing at all).
func adminCall(t *testing.T, method, path, body string, header ...string) (int, string) {
	t.Helper()
	const tries = 5
	for try := 1; ; try++ {
		req := testhttp.NewRequest(t, method, withPorts("http://localhost:ADMIN_PORT"+path), withPorts(body))
		req.Close = true
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if try < tries && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)) {
				continue
			}
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("reading the answer to %s %s: %v", method, path, err)
		}
		return resp.StatusCode, string(b)
	}
}

// reloadConfig is a site with room "reload": options go into its block,
// extra after it in the site.
func reloadConfig(origin, options, extra string) string {
	return testCaddyfile("\tmetrics\n", fmt.Sprintf(`	waiting_room reload {
		keys_from {env.FAIRGATE_IT_KEYS}
		%s
	}
	%s
	reverse_proxy %s
`, options, extra, strings.TrimPrefix(origin, "http://")))
}

// roomFigures is what an operator sees of room "reload": the admin API's
// settings and the room's gauges in /metrics.
func roomFigures(t *testing.T) string {
	t.Helper()
	code, room := adminCall(t, "GET", "/waiting_room/rooms/reload", "")
	if code != 200 {
		return fmt.Sprintf("no room (%d %s)", code, room)
	}
	settings := regexp.MustCompile(`"(state|rate|burst|difficulty|clock_speed)":[^,}]*`).FindAllString(room, -1)
	_, metrics := adminCall(t, "GET", "/metrics", "")
	gauges := regexp.MustCompile(`(?m)^fairgate_(target_rate|room_state|clock_speed)\{room="reload"[^}]*\} [1-9][0-9.e+-]*$`).FindAllString(metrics, -1)
	return strings.Join(settings, " ") + " | " + strings.Join(gauges, " ")
}

// TestRejectedReloadChangesNothing: a config Caddy rejects — a bad bypass
// regexp in the room, a bad module elsewhere, an app that cannot start —
// leaves the room, the admin API and the metrics exactly as they were, and
// the good reload after it applies.
func TestRejectedReloadChangesNothing(t *testing.T) {
	t.Setenv("FAIRGATE_IT_KEYS", testKeysJSON)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "origin")
	}))
	defer origin.Close()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()

	tester := newTester(t)
	tester.InitServer(reloadConfig(origin.URL, "state queue\n rate 5\n tau 1m\n difficulty 4", ""), "caddyfile")
	c := call{t: t, client: tester.Client}
	before := roomFigures(t)
	if !strings.Contains(before, `"state":"queue"`) || !strings.Contains(before, `"rate":5`) || !strings.Contains(before, `state="queue"} 1`) {
		t.Fatalf("room before: %s", before)
	}
	waiting := func(when string) {
		t.Helper()
		if code, _, _ := c.do("GET", "http://localhost:HTTP_PORT/shop", "", "Accept", "application/json"); code != 429 {
			t.Fatalf("%s: a visitor without a pass got %d, not the waiting room", when, code)
		}
	}
	waiting("before")

	changed := "state open\n rate 50\n burst 70\n difficulty 8\n tau 5s\n fixed_speed"
	for _, bad := range []struct{ name, options, extra string }{
		{"missing waiting page", changed + "\n waiting_page /nonexistent/fairgate-page.html", ""},
		{"bad module elsewhere", changed, "@bad path_regexp [\n\trespond @bad 404"},
		{"app that cannot start", changed, "}\nhttp://127.0.0.1:" + strings.Split(taken.Addr().String(), ":")[1] + " {\n\tbind 127.0.0.1\n\trespond ok"},
		{"same room, other settings", changed, "}\nhttp://localhost:9081 {\n\twaiting_room reload {\n\t\tstate paused\n\t}\n\trespond ok"},
	} {
		code, body := load(t, reloadConfig(origin.URL, bad.options, bad.extra))
		if code == 200 || strings.Contains(body, "adapting config") {
			t.Fatalf("%s: Caddy answered %d %s, not a rejection while loading", bad.name, code, body)
		}
		if bad.name == "same room, other settings" && !strings.Contains(body, `room \"reload\" is configured twice with different settings`) {
			t.Fatalf("%s: %s", bad.name, body)
		}
		if after := roomFigures(t); after != before {
			t.Fatalf("%s (Caddy said %d %s): the room changed:\nbefore %s\nafter  %s", bad.name, code, body, before, after)
		}
		waiting("after " + bad.name)
	}

	// The same change in a good config takes effect.
	if code, body := load(t, reloadConfig(origin.URL, changed, "")); code != 200 {
		t.Fatalf("good reload: %d %s", code, body)
	}
	after := roomFigures(t)
	for _, want := range []string{`"state":"open"`, `"rate":50`, `"burst":70`, `"difficulty":8`, `state="open"} 1`, `fairgate_target_rate{room="reload"} 50`} {
		if !strings.Contains(after, want) {
			t.Errorf("after the good reload, want %s in %s", want, after)
		}
	}
	open := func(code int, _ http.Header, body string) bool { return code == 200 && body == "origin" }
	if code, body := c.doAfterLoad("GET", "http://localhost:HTTP_PORT/shop", "", open); !open(code, nil, body) {
		t.Fatalf("open room after the good reload: %d %s", code, body)
	}
	// tau 5s with fixed_speed: a queue's clock runs at 1/5 s.
	if code, body := adminCall(t, "POST", "/waiting_room/rooms/reload", `{"state":"queue"}`); code != 200 || !strings.Contains(body, `"clock_speed":0.2,`) {
		t.Fatalf("clock after tau 5s, fixed_speed: %d %s", code, body)
	}
}

// TestMatcherKeepsEndpointsReachable: with a matcher on the directive, or
// the directive inside a handle or route block, the waiting page's calls to
// the room's endpoints reach the room, or the config is refused with a
// message naming prefix.
func TestMatcherKeepsEndpointsReachable(t *testing.T) {
	t.Setenv("FAIRGATE_IT_KEYS", testKeysJSON)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "origin")
	}))
	defer origin.Close()
	upstream := strings.TrimPrefix(origin.URL, "http://")
	// Each config marks its answers, so a check can tell its answer from
	// the config before's: for a moment after a load, Caddy may still
	// serve a new connection on the servers it is stopping.
	loads := 0
	site := func(body string) string {
		loads++
		return testCaddyfile("", fmt.Sprintf("header X-Test-Config %d\n", loads)+strings.ReplaceAll(body, "ORIGIN", upstream)+"\n")
	}
	room := func(matcher, prefix string) string {
		opts := "keys_from {env.FAIRGATE_IT_KEYS}\n\t\tdifficulty 4"
		if prefix != "" {
			opts += "\n\t\tprefix " + prefix
		}
		return fmt.Sprintf("waiting_room %s matched {\n\t\t%s\n\t}", matcher, opts)
	}
	tester := newTester(t)
	tester.InitServer(site("\trespond ok"), "caddyfile")

	for _, tc := range []struct {
		name    string
		body    string
		refused string // part of Caddy's answer when the config must be refused
		token   string // where the page's token call goes when it runs
	}{
		{name: "matcher on the directive", body: room("/a/*", "") + "\nreverse_proxy ORIGIN", token: "/_fairgate/token"},
		{name: "matcher on the directive, own prefix", body: room("/a/*", "/q") + "\nreverse_proxy ORIGIN", token: "/q/token"},
		{
			name:    "inside handle",
			body:    "handle /a/* {\n" + room("", "") + "\nreverse_proxy ORIGIN\n}\nhandle {\nreverse_proxy ORIGIN\n}",
			refused: "waiting room matched: its endpoints under prefix /_fairgate are not routed to it: the waiting page's POST /_fairgate/token would go elsewhere and strand every visitor; set room matched's prefix to a path its route covers (e.g. `prefix /a/_fairgate`)",
		},
		{name: "inside handle, prefix under its path", body: "handle /a/* {\n" + room("", "/a/_fairgate") + "\nreverse_proxy ORIGIN\n}\nhandle {\nreverse_proxy ORIGIN\n}", token: "/a/_fairgate/token"},
		{name: "inside handle, prefix routed to it", body: "handle /_fairgate/* {\n" + room("", "") + "\n}\nhandle /a/* {\n" + room("", "") + "\nreverse_proxy ORIGIN\n}\nhandle {\nreverse_proxy ORIGIN\n}", token: "/_fairgate/token"},
		{name: "inside route", body: "route /a/* {\n" + room("", "") + "\nreverse_proxy ORIGIN\n}\nreverse_proxy ORIGIN", refused: "its endpoints under prefix /_fairgate are not routed to it"},
		{name: "inside route, prefix under its path", body: "route /a/* {\n" + room("", "/a/_fairgate") + "\nreverse_proxy ORIGIN\n}\nreverse_proxy ORIGIN", token: "/a/_fairgate/token"},
		{
			name:    "inside handle_path",
			body:    "handle_path /a/* {\n" + room("", "/a/_fairgate") + "\nreverse_proxy ORIGIN\n}\nhandle {\nreverse_proxy ORIGIN\n}",
			refused: "the route strips its path prefix (handle_path, uri strip_prefix) before the room, so no prefix can reach it: use handle",
		},
		// A matcher the check cannot decide (it depends on the visitor's
		// request) could let the page's call through: not refused.
		{name: "inside handle with a header matcher", body: "@app header X-App 1\nhandle @app {\n" + room("", "") + "\nreverse_proxy ORIGIN\n}\nhandle {\nreverse_proxy ORIGIN\n}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := load(t, site(tc.body))
			if tc.refused != "" {
				if code == 200 || !strings.Contains(body, tc.refused) {
					t.Fatalf("want the config refused with %q; Caddy answered %d %s", tc.refused, code, body)
				}
				return
			}
			if code != 200 {
				t.Fatalf("config refused: %d %s", code, body)
			}
			if tc.token == "" {
				return
			}
			c := call{t: t, client: tester.Client}
			loaded := strconv.Itoa(loads)
			ours := func(_ int, h http.Header, _ string) bool { return h.Get("X-Test-Config") == loaded }
			if code, body := c.doAfterLoad("GET", "http://localhost:HTTP_PORT/a/shop", "", ours, "Accept", "application/json"); code != 429 || !strings.Contains(body, "waiting_room") {
				t.Fatalf("matched path: %d %s", code, body)
			}
			if code, body := c.doAfterLoad("GET", "http://localhost:HTTP_PORT/b", "", ours); code != 200 || body != "origin" {
				t.Fatalf("unmatched path: %d %s", code, body)
			}
			if code, body := c.doAfterLoad("POST", "http://localhost:HTTP_PORT"+tc.token, "", ours); code != 200 || !strings.Contains(body, `"challenge"`) {
				t.Fatalf("the room's token endpoint %s: %d %s", tc.token, code, body)
			}
		})
	}
}

// TestKeysFromUnset: keys_from naming an unset variable says so.
func TestKeysFromUnset(t *testing.T) {
	h := &Handler{KeysFrom: "{env.FAIRGATE_SURELY_UNSET}"}
	_, err := h.resolvedConfig()
	if err == nil || !strings.Contains(err.Error(), "keys_from {env.FAIRGATE_SURELY_UNSET} is empty: is the environment variable set?") {
		t.Fatalf("got %v", err)
	}
}

// TestCaddyConventions: the client address is Caddy's (its trusted_proxies),
// the return URL is the request as it arrived (before rewrite), and the hook
// URL takes request placeholders.
func TestCaddyConventions(t *testing.T) {
	t.Setenv("FAIRGATE_IT_KEYS", testKeysJSON)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "origin "+r.URL.Path)
	}))
	defer origin.Close()
	hookCalls := make(chan string, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hookCalls <- r.URL.RequestURI()
		fmt.Fprint(w, `{"session":"s1"}`)
	}))
	defer hook.Close()
	tester := newTester(t)
	tester.InitServer(testCaddyfile(`	servers {
		trusted_proxies static 127.0.0.1/32
	}
`, fmt.Sprintf(`	rewrite /old /new
	waiting_room conventions {
		keys_from {env.FAIRGATE_IT_KEYS}
		difficulty 4
		token_ttl 1d
		bypass {
			cidr 203.0.113.7/32
		}
		admission_hook %s/hook?host={http.request.host}
	}
	reverse_proxy %s
`, hook.URL, strings.TrimPrefix(origin.URL, "http://"))), "caddyfile")
	c := call{t: t, client: tester.Client}
	site := "http://localhost:HTTP_PORT"

	if code, _, body := c.do("GET", site+"/old", "", "Accept", "text/html"); code != 200 || !strings.Contains(body, `data-return="/old"`) {
		t.Fatalf("waiting page after rewrite /old /new: %d, want data-return=\"/old\"", code)
	}
	if code, _, body := c.do("GET", site+"/x", "", "X-Forwarded-For", "203.0.113.7"); code != 200 || body != "origin /x" {
		t.Fatalf("bypass by the client address Caddy trusts: %d %s", code, body)
	}
	if code, _, _ := c.do("GET", site+"/x", "", "X-Forwarded-For", "198.51.100.1", "Accept", "application/json"); code != 429 {
		t.Fatalf("another client address: %d", code)
	}

	c.do("POST", "http://localhost:ADMIN_PORT/waiting_room/rooms/conventions", `{"state":"open"}`)
	tk := token(t, c, site)
	code, _, body := c.do("POST", site+"/_fairgate/admit", `{"nonce":"`+solve(t, tk)+`","token":"`+tk.Token+`"}`)
	if code != 200 || !strings.Contains(body, `"session":"s1"`) {
		t.Fatalf("admit: %d %s", code, body)
	}
	if got := <-hookCalls; got != "/hook?host=localhost" {
		t.Fatalf("hook called at %s", got)
	}
	// Admin API: unknown fields are named.
	if code, _, body := c.do("POST", "http://localhost:ADMIN_PORT/waiting_room/rooms/conventions", `{"rates":5}`); code != 400 || !strings.Contains(body, `unknown field \"rates\"`) {
		t.Fatalf("unknown admin field: %d %s", code, body)
	}
}

// TestKeyFileReload: a forced reload re-reads a keys_from file; a key added
// to it signs from then on, and a pass signed by the old key stays valid.
func TestKeyFileReload(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "origin")
	}))
	defer origin.Close()
	file := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(file, []byte(testKeysJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	config := testCaddyfile("", fmt.Sprintf(`	waiting_room keyfile {
		keys_from %s
		difficulty 4
		state open
	}
	reverse_proxy %s
`, file, strings.TrimPrefix(origin.URL, "http://")))
	tester := newTester(t)
	tester.InitServer(config, "caddyfile")
	c := call{t: t, client: tester.Client}
	site := "http://localhost:HTTP_PORT"
	tk := token(t, c, site)
	if kid := tokenKid(t, tk.Token); kid != "k1" {
		t.Fatalf("signed by %q before rotation", kid)
	}
	code, _, body := c.do("POST", site+"/_fairgate/admit", `{"nonce":"`+solve(t, tk)+`","token":"`+tk.Token+`"}`)
	if code != 200 {
		t.Fatalf("admit: %d %s", code, body)
	}
	var admitted struct{ Pass string }
	_ = json.Unmarshal([]byte(body), &admitted)

	// Rotate: a new signing key in the file, then `caddy reload --force`.
	ring := map[string]any{}
	_ = json.Unmarshal([]byte(testKeysJSON), &ring)
	ring["keys"].(map[string]any)["k2"] = "bmV3LXNpZ25pbmcta2V5LWZvci10ZXN0cy0wMTIzNDU2Nzg5"
	ring["signing"] = "k2"
	raw, _ := json.Marshal(ring)
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, body := load(t, config, "Cache-Control", "must-revalidate"); code != 200 {
		t.Fatalf("forced reload: %d %s", code, body)
	}
	if kid := tokenKid(t, token(t, c, site).Token); kid != "k2" {
		t.Fatalf("signed by %q after the forced reload", kid)
	}
	c.do("POST", "http://localhost:ADMIN_PORT/waiting_room/rooms/keyfile", `{"state":"queue"}`)
	if code, _, body := c.do("GET", site+"/shop", "", "Cookie", "fairgate_pass_keyfile="+admitted.Pass); code != 200 || body != "origin" {
		t.Fatalf("a pass signed by the old key after rotation: %d %s", code, body)
	}
}

// tokenKid is the kid in a JWT's header.
func tokenKid(t *testing.T, jwt string) string {
	t.Helper()
	head, _, _ := strings.Cut(jwt, ".")
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		t.Fatal(err)
	}
	var h struct{ Kid string }
	_ = json.Unmarshal(raw, &h)
	return h.Kid
}

// TestEndpointCheckJSON: the endpoint check judges Caddy JSON written by
// hand as it does the Caddyfile's: a room under a path matcher whose
// prefix is outside it is refused; with the prefix under it, it runs.
func TestEndpointCheckJSON(t *testing.T) {
	t.Setenv("FAIRGATE_IT_KEYS", testKeysJSON)
	tester := newTester(t)
	tester.InitServer("{\n\tadmin localhost:ADMIN_PORT\n\thttp_port HTTP_PORT\n\thttps_port HTTPS_PORT\n}\nhttp://localhost:HTTP_PORT {\n\trespond ok\n}\n", "caddyfile")
	config := func(prefix string) string {
		return fmt.Sprintf(`{"admin":{"listen":"localhost:ADMIN_PORT"},"apps":{"http":{"http_port":HTTP_PORT,"https_port":HTTPS_PORT,"servers":{"s":{
			"listen":["localhost:HTTP_PORT"],
			"routes":[
				{"match":[{"path":["/a/*"]}],"handle":[{"handler":"subroute","routes":[
					{"handle":[{"handler":"waiting_room","room":"json","prefix":%q,"keys_from":"{env.FAIRGATE_IT_KEYS}"}]},
					{"handle":[{"handler":"static_response","body":"origin"}]}]}],"terminal":true},
				{"handle":[{"handler":"static_response","body":"site"}]}]}}}}}`, prefix)
	}
	for _, tc := range []struct {
		prefix  string
		refused bool
	}{{"/_fairgate", true}, {"/a/_fairgate", false}} {
		code, body := adminCall(t, "POST", "/load", config(tc.prefix), "Content-Type", "application/json")
		refused := code != 200
		if refused != tc.refused || (refused && !strings.Contains(body, "its endpoints under prefix "+tc.prefix+" are not routed to it")) {
			t.Fatalf("prefix %s: Caddy answered %d %s", tc.prefix, code, body)
		}
	}
	c := call{t: t, client: tester.Client}
	issued := func(code int, _ http.Header, body string) bool {
		return code == 200 && strings.Contains(body, `"challenge"`)
	}
	if code, body := c.doAfterLoad("POST", "http://localhost:HTTP_PORT/a/_fairgate/token", "", issued); !issued(code, nil, body) {
		t.Fatalf("token under /a/_fairgate: %d %s", code, body)
	}
}
