package caddymodule

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/internal/pathtest"
	"github.com/fairgate/fairgate/internal/testhttp"
)

// exampleSite is a queued room with the bypass rules of Caddyfile.example
// in front of an origin that resolves paths as nginx does.
func exampleSite(origin string) string {
	return testCaddyfile("", fmt.Sprintf(`	waiting_room sec {
		keys_from {env.FAIRGATE_IT_KEYS}
		difficulty 4
		bypass {
			path /static/* /favicon.ico /healthz
			path /api/events/* /api/events/*/sections/*
		}
	}
	reverse_proxy %s
`, strings.TrimPrefix(origin, "http://")))
}

// TestBypassRulesNeverReachProtectedPagesUnderCaddy, through Caddy in
// process: `curl --path-as-is` style paths never reach the protected page,
// and a forged pass header in either spelling never reaches the origin.
func TestBypassRulesNeverReachProtectedPagesUnderCaddy(t *testing.T) {
	t.Setenv("FAIRGATE_IT_KEYS", testKeysJSON)
	origin := httptest.NewServer(pathtest.Origin())
	defer origin.Close()
	tester := newTester(t)
	tester.InitServer(exampleSite(origin.URL), "caddyfile")
	for _, p := range []struct {
		path   string
		status int
	}{
		{"/healthz/../secret", 400},
		{"/static/%2e%2e", 400},
		{"/static/%2e%2e/secret", 400},
		{"/favicon.ico/../secret", 400},
		{"/healthz%2F..%2Fsecret", 400},
		{"/api/events/%2e%2e", 400},
		{"/api/events/%2e%2e/%2e%2e/secret", 400},
		{"/healthzX", 429},
		{"/healthz%2Fsecret", 429},
		{"/secret", 429},
		{"/healthz", 200},
		{"/static/app.css", 200},
		{"/api/events/final/sections/L1", 200},
	} {
		req := testhttp.NewRequest(t, "GET", withPorts("http://localhost:HTTP_PORT/"), "")
		req.URL.Opaque = p.path
		req.Header.Set("Accept", "application/json")
		req.Header["Fairgate_Pass"] = []string{"FORGED"} // as spelled, not canonicalised
		resp, b := testhttp.Do(t, tester.Client, req)
		body := string(b)
		if strings.Contains(body, pathtest.Secret) || strings.Contains(body, "FORGED") {
			t.Errorf("%s: the origin answered %q", p.path, body)
		}
		if resp.StatusCode != p.status {
			t.Errorf("%s: %d, want %d (%s)", p.path, resp.StatusCode, p.status, body)
		}
	}
}

// TestWaitingPageReturnIsSafeUnderCaddy: under Caddy, an operator's
// waiting page links back only to a path on this site, whatever request
// target the visitor sent (the return path is Caddy's original URI).
func TestWaitingPageReturnIsSafeUnderCaddy(t *testing.T) {
	t.Setenv("FAIRGATE_IT_KEYS", testKeysJSON)
	page := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(page, []byte(`<a id="back" href="{{.Return}}">back</a>{{.Script}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tester := newTester(t)
	tester.InitServer(testCaddyfile("", "\twaiting_room back {\n\t\tkeys_from {env.FAIRGATE_IT_KEYS}\n\t\twaiting_page "+page+"\n\t}\n\trespond \"the site\"\n"), "caddyfile")
	for target, want := range map[string]string{
		"//evil.example/login": `href="/"`,
		"//evil.example":       `href="/"`,
		`/\evil.example`:       `href="/%5Cevil.example"`, // escaped: a path on this site
		"/shop?x=1":            `href="/shop?x=1"`,
	} {
		// Sent byte for byte: net/http's client writes an opaque `//host`
		// target as an absolute URL.
		conn, err := net.Dial("tcp", withPorts("127.0.0.1:HTTP_PORT"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: localhost\r\nAccept: text/html\r\nConnection: close\r\n\r\n", target)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		b, _ := io.ReadAll(resp.Body)
		conn.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `<a id="back" `+want+`>`) {
			t.Errorf("%s: %d, want a link %s:\n%s", target, resp.StatusCode, want, b)
		}
	}
}
