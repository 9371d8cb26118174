package caddymodule

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// Caddy runs once per test process, on ports picked free when the process
// starts, so two test runs on one machine never meet. Test Caddyfiles, URLs
// and bodies are written with ADMIN_PORT, HTTP_PORT and HTTPS_PORT, and
// withPorts fills them in where they leave the test.
var ports = strings.NewReplacer(
	"ADMIN_PORT", strconv.Itoa(adminPort),
	"HTTPS_PORT", strconv.Itoa(freePort()),
	"HTTP_PORT", strconv.Itoa(freePort()),
)

var adminPort = freePort()

func withPorts(s string) string { return ports.Replace(s) }

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic("no free loopback port for the in-process Caddy: " + err.Error())
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// portTester is caddytest's Tester on this process's ports.
type portTester struct{ *caddytest.Tester }

// newTester starts Caddy for one test, with a data directory of its own:
// the rooms' default state store lives there, and no test may see another
// test's rooms.
func newTester(t *testing.T) portTester {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	return portTester{caddytest.NewTester(noSkip{t}).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort})}
}

func (p portTester) InitServer(config, configType string) {
	p.Tester.InitServer(withPorts(config), configType)
}

// testCaddyfile is a test's Caddyfile: the global options every in-process
// test needs (the admin and HTTP ports, no grace period) and then global's
// lines, then one site on the HTTP port with site's lines. Both end in a
// newline when not empty.
func testCaddyfile(global, site string) string {
	return "{\n\tadmin localhost:ADMIN_PORT\n\thttp_port HTTP_PORT\n\thttps_port HTTPS_PORT\n\tgrace_period 1ns\n" + global +
		"}\nhttp://localhost:HTTP_PORT {\n" + site + "}\n"
}
