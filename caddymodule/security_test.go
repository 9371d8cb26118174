package caddymodule

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

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

// TestFindingBypassRulesReachProtectedPagesUnderCaddy is issue 10, findings
// 1 and 7, through Caddy in process: `curl --path-as-is` style paths never
// reach the protected page, and a forged pass header in either spelling
// never reaches the origin.
func TestFindingBypassRulesReachProtectedPagesUnderCaddy(t *testing.T) {
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
