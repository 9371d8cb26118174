package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProxyRefusesABadUpstream: `proxy --upstream ftp://x` does not start
// (it would answer every admitted visitor with a 502).
func TestProxyRefusesABadUpstream(t *testing.T) {
	for _, upstream := range []string{"ftp://x", "127.0.0.1:8080", "http://", "://nope", "/just/a/path"} {
		_, stderr, code := runCLI(t, "proxy", "--upstream", upstream)
		if code != 2 || !strings.Contains(stderr, "--upstream") {
			t.Errorf("proxy --upstream %q: exit %d, stderr %q; want a usage error naming --upstream", upstream, code, stderr)
		}
	}
	if _, stderr, code := runCLI(t, "proxy"); code != 2 || !strings.Contains(stderr, "--upstream is required") {
		t.Errorf("proxy without --upstream: exit %d, stderr %q", code, stderr)
	}
}

func TestParseUpstream(t *testing.T) {
	for _, upstream := range []string{"http://127.0.0.1:8080", "https://shop.example", "http://[::1]:80/base"} {
		if _, err := parseUpstream(upstream); err != nil {
			t.Errorf("parseUpstream(%q): %v", upstream, err)
		}
	}
}

// TestRequireLoopback: the admin listener (the admin API and /metrics)
// is only ever bound to a loopback address.
func TestRequireLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:9180": true, "[::1]:9180": true, "localhost:9180": true,
		"0.0.0.0:9180": false, ":9180": false, "192.0.2.1:9180": false, "[::]:9180": false, "example.com:9180": false, "nope": false,
	} {
		if err := requireLoopback(addr); (err == nil) != ok {
			t.Errorf("requireLoopback(%q) = %v", addr, err)
		}
	}
}

// TestReadGatewayConfig: an explicit "rate": 0 is refused, naming the
// option; left out, the default applies.
func TestReadGatewayConfig(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"room":"r","rate":0}`, "rate 0: must be a positive number"},
		{`{"room":"r","rate":3}`, ""},
		{`{"room":"r"}`, ""},
		{`{"room":"r","rates":3}`, `unknown field "rates"`},
	} {
		path := filepath.Join(t.TempDir(), "room.json")
		if err := os.WriteFile(path, []byte(tc.json), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := readGatewayConfig(path)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.json, err, tc.want)
		}
	}
}
