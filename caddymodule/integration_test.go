package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/internal/testhttp"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// noSkip turns caddytest's silent skip (when Caddy cannot start) into a
// failure: the integration tests must never pass by not running.
type noSkip struct{ *testing.T }

func (n noSkip) Skipf(format string, args ...any) {
	n.T.Fatalf("caddytest would skip: "+format, args...)
}
func (n noSkip) SkipNow()         { n.T.Fatal("caddytest would skip") }
func (n noSkip) Skip(args ...any) { n.T.Fatal(append([]any{"caddytest would skip:"}, args...)...) }

// testKeys are the tests' keys; testKeysJSON is them as keys_from reads them.
var (
	testKeys = tokens.KeysConfig{
		Signing: "k1",
		Keys:    map[string]string{"k1": "c2VjcmV0LWtleS1mb3ItdGVzdHMtb25seS0wMTIzNDU2Nzg5"},
		Lottery: "bG90dGVyeS1rZXktZm9yLXRlc3RzLW9ubHktMDEyMzQ1Njc4OQ==",
	}
	testKeysJSON = func() string {
		b, err := json.Marshal(testKeys)
		if err != nil {
			panic(err)
		}
		return string(b)
	}()
)

func siteConfig(origin, extra string) string {
	return testCaddyfile("\tmetrics\n", fmt.Sprintf(`	header >X-Queue-Outcome {http.waiting_room.outcome}
	waiting_room it {
		keys_from {env.FAIRGATE_IT_KEYS}
		state open
		difficulty 4
		bypass {
			path /static/*
		}
	}
	%s
	reverse_proxy %s
`, extra, strings.TrimPrefix(origin, "http://")))
}

type call struct {
	t      *testing.T
	client *http.Client
}

// do sends one request on a connection of its own: a reload closes the
// idle connections of the server before it, and a request sent on one
// before the client saw it close would be reset.
func (c call) do(method, url, body string, header ...string) (int, http.Header, string) {
	c.t.Helper()
	req := testhttp.NewRequest(c.t, method, withPorts(url), withPorts(body))
	req.Close = true
	resp, b := testhttp.Do(c.t, c.client, req, header...)
	return resp.StatusCode, resp.Header, string(b)
}

// doAfterLoad is do for a check right after a load: for a moment after a
// load Caddy may still serve a new connection on the servers it is
// stopping, so an answer want rejects is asked again, for 5 s at most.
func (c call) doAfterLoad(method, url, body string, want func(code int, h http.Header, body string) bool, header ...string) (int, string) {
	c.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		code, h, got := c.do(method, url, body, header...)
		if want(code, h, got) || time.Now().After(deadline) {
			return code, got
		}
	}
}

// TestCaddyIntegration runs Caddy in process with the module: the flow,
// the pass reaching the upstream, placeholders, the admin API, metrics, and
// a reload that keeps the room's state.
func TestCaddyIntegration(t *testing.T) {
	t.Setenv("FAIRGATE_IT_KEYS", testKeysJSON)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "origin %s pass=%t", r.URL.Path, r.Header.Get("Fairgate-Pass") != "")
	}))
	defer origin.Close()

	tester := newTester(t)
	tester.InitServer(siteConfig(origin.URL, ""), "caddyfile")
	c := call{t: t, client: tester.Client}
	site := "http://localhost:HTTP_PORT"

	// Open room: everyone passes, the outcome placeholder says so.
	code, h, body := c.do("GET", site+"/shop", "")
	if code != 200 || body != "origin /shop pass=false" || h.Get("X-Queue-Outcome") != "open" {
		t.Fatalf("open room: %d %q %v", code, body, h)
	}

	// Queue via the admin API: no pass means the waiting page.
	code, _, body = c.do("POST", "http://localhost:ADMIN_PORT/waiting_room/rooms/it", `{"state":"queue","rate":100}`)
	if code != 200 || !strings.Contains(body, `"state":"queue"`) {
		t.Fatalf("admin change: %d %s", code, body)
	}
	code, h, body = c.do("GET", site+"/shop", "", "Accept", "text/html")
	if code != 200 || !strings.Contains(body, `id="fairgate"`) || h.Get("X-Queue-Outcome") != "waiting" {
		t.Fatalf("waiting page: %d %v", code, h)
	}
	if code, _, body := c.do("GET", site+"/static/app.css", ""); code != 200 || !strings.Contains(body, "origin /static/") {
		t.Fatalf("bypass: %d %s", code, body)
	}

	// A token issued in the open state may be used at once; mint one there.
	c.do("POST", "http://localhost:ADMIN_PORT/waiting_room/rooms/it", `{"state":"open"}`)
	code, _, body = c.do("POST", site+"/_fairgate/token", "")
	var tk struct {
		Token, Challenge string
		Difficulty       int
	}
	if err := json.Unmarshal([]byte(body), &tk); err != nil || code != 200 {
		t.Fatalf("token: %d %s", code, body)
	}
	n, _ := tokens.Solve(context.Background(), tk.Challenge, tk.Difficulty)
	nonce := strconv.FormatUint(n, 10)
	code, _, body = c.do("POST", site+"/_fairgate/admit", `{"nonce":"`+nonce+`","token":"`+tk.Token+`"}`)
	if code != 200 || !strings.Contains(body, `"admitted":true`) {
		t.Fatalf("admit: %d %s", code, body)
	}
	firstAdmit := body
	// With the pass (cookie jar), a queued room forwards, with the pass header.
	c.do("POST", "http://localhost:ADMIN_PORT/waiting_room/rooms/it", `{"state":"queue"}`)
	code, h, body = c.do("GET", site+"/shop", "", "Fairgate-Pass", "forged-by-client")
	if code != 200 || body != "origin /shop pass=true" || h.Get("X-Queue-Outcome") != "passed" {
		t.Fatalf("with a pass: %d %q %v", code, body, h)
	}

	// Pause stops admissions.
	c.do("POST", "http://localhost:ADMIN_PORT/waiting_room/rooms/it", `{"state":"paused","difficulty":6}`)
	code, _, body = c.do("GET", "http://localhost:ADMIN_PORT/waiting_room/rooms", "")
	if code != 200 || !strings.Contains(body, `"state":"paused"`) || !strings.Contains(body, `"store":"bolt"`) {
		t.Fatalf("rooms: %d %s", code, body)
	}

	// Metrics are in Caddy's registry.
	_, _, metrics := c.do("GET", "http://localhost:ADMIN_PORT/metrics", "")
	for _, want := range []string{`fairgate_tokens_issued_total{room="it"} 1`, `fairgate_admissions_total{room="it"} 1`, `fairgate_room_state{room="it",state="paused"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// Reload with a different config: the room keeps its state, its
	// difficulty change and its used tokens.
	tester.InitServer(siteConfig(origin.URL, "header X-Reloaded yes"), "caddyfile")
	code, h, _ = c.do("GET", site+"/shop", "", "Accept", "application/json")
	if h.Get("X-Reloaded") != "yes" {
		t.Fatalf("reload did not take: %v", h)
	}
	code, _, body = c.do("GET", "http://localhost:ADMIN_PORT/waiting_room/rooms/it", "")
	if code != 200 || !strings.Contains(body, `"state":"paused"`) || !strings.Contains(body, `"difficulty":6`) {
		t.Fatalf("room after reload: %d %s", code, body)
	}
	c.do("POST", "http://localhost:ADMIN_PORT/waiting_room/rooms/it", `{"state":"open"}`)
	// The same token again: its own admission answered again, the same
	// pass (a room that forgot it would sign a new one).
	code, _, body = c.do("POST", site+"/_fairgate/admit", `{"nonce":"`+nonce+`","token":"`+tk.Token+`"}`)
	if code != 200 || passOf(t, body) != passOf(t, firstAdmit) {
		t.Fatalf("token reused after reload: %d %s, want its first pass again", code, body)
	}

	// A reload with a broken waiting_page fails with its file and line, and
	// the running config keeps serving.
	page := filepath.Join(t.TempDir(), "waiting.html")
	if err := os.WriteFile(page, []byte("<p>\n{{.Script}}\n<h1>{{.T.headng}}</h1>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(siteConfig(origin.URL, "header X-Reloaded yes"), "state open", "state open\n\t\twaiting_page "+page, 1)
	code, body = adminCall(t, "POST", "/load", broken, "Content-Type", "text/caddyfile")
	if code < 400 || !strings.Contains(body, page) || !strings.Contains(body, "waiting.html:3") {
		t.Fatalf("broken waiting_page reload: %d %s", code, body)
	}
	if code, h, _ := c.do("GET", site+"/shop", ""); code != 200 || h.Get("X-Reloaded") != "yes" {
		t.Fatalf("after a failed reload: %d %v", code, h)
	}
}

type tokenAnswer struct {
	Token, Challenge string
	Difficulty       int
}

// token gets a waiting token from the site.
func token(t *testing.T, c call, site string) tokenAnswer {
	t.Helper()
	code, _, body := c.do("POST", site+"/_fairgate/token", "")
	var tk tokenAnswer
	if err := json.Unmarshal([]byte(body), &tk); err != nil || code != 200 {
		t.Fatalf("token: %d %s", code, body)
	}
	return tk
}

// solve finds the token's proof of work.
func solve(t *testing.T, tk tokenAnswer) string {
	t.Helper()
	n, err := tokens.Solve(context.Background(), tk.Challenge, tk.Difficulty)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatUint(n, 10)
}

// passOf is the pass of an admit answer.
func passOf(t *testing.T, body string) string {
	t.Helper()
	var a struct{ Pass string }
	if err := json.Unmarshal([]byte(body), &a); err != nil || a.Pass == "" {
		t.Fatalf("no pass in %s (%v)", body, err)
	}
	return a.Pass
}
