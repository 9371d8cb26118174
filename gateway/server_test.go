package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/internal/testhttp"
	"github.com/fairgate/fairgate/room"
)

func startServer(t *testing.T, upstream string, cfg Config) (public, admin string, stop func()) {
	t.Helper()
	u, _ := url.Parse(upstream)
	cfg.Keys = testKeys
	pub, adm, stop := serveConfig(t, ServerConfig{Upstream: u, Gateway: cfg, AdminToken: "tok"})
	return "http://" + pub, "http://" + adm, stop
}

// serveConfig runs a Server on loopback listeners until stop, which checks
// that it shut down gracefully.
func serveConfig(t *testing.T, sc ServerConfig) (public, admin string, stop func()) {
	t.Helper()
	srv, err := NewServer(sc)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := net.Listen("tcp", "127.0.0.1:0")
	adm, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, pub, adm) }()
	return pub.Addr().String(), adm.Addr().String(), func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("no graceful shutdown")
		}
	}
}

func get(t *testing.T, u string, header ...string) (*http.Response, string) {
	t.Helper()
	resp, b := testhttp.Do(t, nil, testhttp.NewRequest(t, "GET", u, ""), header...)
	return resp, string(b)
}

func TestServerForwardsAndStreams(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "websocket" {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			fmt.Fprint(buf, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
			buf.Flush()
			line, _ := buf.ReadString('\n')
			fmt.Fprint(buf, "echo "+line)
			buf.Flush()
			return
		}
		fmt.Fprintf(w, "xff=%s pass=%q", r.Header.Get("X-Forwarded-For"), r.Header.Get(passHeader))
	}))
	defer origin.Close()
	public, admin, stop := startServer(t, origin.URL, Config{Config: room.Config{Room: "sale", State: "open"}})
	defer stop()

	resp, body := get(t, public+"/page", "Fairgate-Pass", "forged")
	if resp.StatusCode != 200 || !strings.Contains(body, "xff=127.0.0.1") || !strings.Contains(body, `pass=""`) {
		t.Fatalf("forwarded: %d %s", resp.StatusCode, body)
	}

	conn, err := net.Dial("tcp", strings.TrimPrefix(public, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	r := bufio.NewReader(conn)
	status, _ := r.ReadString('\n')
	if !strings.Contains(status, "101") {
		t.Fatalf("websocket upgrade: %q", status)
	}
	for line, _ := r.ReadString('\n'); line != "\r\n" && line != ""; line, _ = r.ReadString('\n') {
	}
	fmt.Fprint(conn, "hello\n")
	if echo, _ := r.ReadString('\n'); echo != "echo hello\n" {
		t.Fatalf("websocket echo: %q", echo)
	}

	if resp, _ := get(t, admin+"/rooms"); resp.StatusCode != 401 {
		t.Fatalf("admin without token: %d", resp.StatusCode)
	}
	if resp, body := get(t, admin+"/rooms", "Authorization", "Bearer tok"); resp.StatusCode != 200 || !strings.Contains(body, `"sale"`) {
		t.Fatalf("admin: %d %s", resp.StatusCode, body)
	}
	if resp, body := get(t, admin+"/metrics", "Authorization", "Bearer tok"); resp.StatusCode != 200 || !strings.Contains(body, `fairgate_room_state{room="sale",state="open"} 1`) {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
}

// TestServerOriginDown: admitted visitors get a 502; the waiting room keeps
// serving everyone else.
func TestServerOriginDown(t *testing.T) {
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := dead.Addr().String()
	dead.Close()
	public, _, stop := startServer(t, "http://"+addr, Config{Config: room.Config{Room: "sale"}, Bypass: Bypass{Paths: []string{"/static/"}}})
	defer stop()
	resp, body := get(t, public+"/static/x.css")
	if resp.StatusCode != 502 || !strings.Contains(body, `"upstream"`) {
		t.Fatalf("origin down: %d %s", resp.StatusCode, body)
	}
	resp, body = get(t, public+"/tickets", "Accept", "text/html")
	if resp.StatusCode != 200 || !strings.Contains(body, "waiting room") {
		t.Fatalf("waiting room while the origin is down: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("POST", public+"/_fairgate/token", nil)
	r2, err := http.DefaultClient.Do(req)
	if err != nil || r2.StatusCode != 200 {
		t.Fatalf("token while the origin is down: %v %v", r2, err)
	}
	r2.Body.Close()
}

func TestServerConfigErrors(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	if _, err := NewServer(ServerConfig{Upstream: u}); err == nil {
		t.Error("no admin token accepted")
	}
	if _, err := NewServer(ServerConfig{Upstream: &url.URL{Path: "x"}, AdminToken: "t"}); err == nil {
		t.Error("relative upstream accepted")
	}
	// `proxy --upstream ftp://x` must not start.
	if _, err := NewServer(ServerConfig{Upstream: &url.URL{Scheme: "ftp", Host: "x"}, AdminToken: "t"}); err == nil || !strings.Contains(err.Error(), "http:// or https://") {
		t.Errorf("ftp upstream: %v", err)
	}
	if _, err := NewServer(ServerConfig{Upstream: u, AdminToken: "t", Gateway: Config{Hook: &Hook{URL: "ftp//nope"}}}); err == nil || !strings.Contains(err.Error(), "admission_hook") {
		t.Errorf("hook without scheme: %v", err)
	}
}

// TestServerMetricsNeedTheToken: the admin listener's /metrics asks for
// the admin token as /rooms does, unless MetricsPublic serves it to all.
func TestServerMetricsNeedTheToken(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	for _, tc := range []struct {
		public               bool
		without, wrong, with int
	}{
		{false, 401, 401, 200},
		{true, 200, 200, 200},
	} {
		_, admin, stop := serveConfig(t, ServerConfig{Upstream: u, AdminToken: "tok", MetricsPublic: tc.public,
			Gateway: Config{Config: room.Config{Room: "m", Keys: testKeys}}})
		for _, p := range []struct {
			header []string
			want   int
		}{{nil, tc.without}, {[]string{"Authorization", "Bearer nope"}, tc.wrong}, {[]string{"Authorization", "Bearer tok"}, tc.with}} {
			resp, body := get(t, "http://"+admin+"/metrics", p.header...)
			if resp.StatusCode != p.want {
				t.Errorf("public %v, %v: /metrics %d, want %d", tc.public, p.header, resp.StatusCode, p.want)
			}
			if p.want == 200 && !strings.Contains(body, "fairgate_tokens_issued_total") {
				t.Errorf("public %v: /metrics lacks the room's series:\n%s", tc.public, body)
			}
		}
		if resp, _ := get(t, "http://"+admin+"/rooms"); resp.StatusCode != 401 {
			t.Errorf("public %v: /rooms without the token: %d", tc.public, resp.StatusCode)
		}
		stop()
	}
}

// TestServerRefusesDeclaredOversizeBodies: a body declared over the limit
// is answered 413 at once on every endpoint with a limit, not read until
// the server's read timeout; one byte of it is sent.
func TestServerRefusesDeclaredOversizeBodies(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	public, admin, stop := serveConfig(t, ServerConfig{Upstream: u, AdminToken: "tok", Gateway: Config{Config: room.Config{Room: "edge", Keys: testKeys}}})
	defer stop()
	for _, tc := range []struct{ addr, path, header string }{
		{public, "/_fairgate/token", ""},
		{public, "/_fairgate/admit", ""},
		{admin, "/rooms/edge", "Authorization: Bearer tok\r\n"},
	} {
		for _, declared := range []string{"4097", "999999999"} {
			conn, err := net.Dial("tcp", tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: %s\r\n\r\n{", tc.path, tc.header, declared)
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // bounds the test: the answer comes before any more body
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Errorf("%s with Content-Length %s: no answer: %v", tc.path, declared, err)
			} else if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("%s with Content-Length %s: %d, want 413", tc.path, declared, resp.StatusCode)
			}
			conn.Close()
		}
	}
}

// TestServerCutsOffSlowBodies, through `fairgate proxy`: a POST trickled
// after its headers loses its connection at the read timeout, and the
// origin's read of it ends too.
func TestServerCutsOffSlowBodies(t *testing.T) {
	const limit = 200 * time.Millisecond
	bodyDone := make(chan error, 1)
	origin := startOrigin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		bodyDone <- err
	}))
	u, _ := url.Parse(origin)
	public, _, stop := serveConfig(t, ServerConfig{Upstream: u, AdminToken: "tok", ReadTimeout: limit,
		Gateway: Config{Config: room.Config{Room: "sale", State: "open", Keys: testKeys}}})
	defer stop()
	conn, err := net.Dial("tcp", public)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nthe first bytes")
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second)) // bounds the test; the server must hang up first
	start := time.Now()
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatalf("the proxy held the slow client's connection: %v", err)
	}
	if held := time.Since(start); held < limit/2 {
		t.Fatalf("cut off after %v, long before the %v timeout", held, limit)
	}
	select {
	case err := <-bodyDone:
		if err == nil {
			t.Fatal("the origin read a whole body that was never sent")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the origin is still reading the slow body")
	}
}
