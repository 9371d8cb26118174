package gateway

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"html"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairgate/fairgate/internal/pathtest"
	"github.com/fairgate/fairgate/internal/testhttp"
	"github.com/fairgate/fairgate/room"
)

// exampleBypass are the bypass rules of Caddyfile.example.
var exampleBypass = []string{"/static/*", "/favicon.ico", "/healthz", "/api/events/*", "/api/events/*/sections/*"}

// rawGet sends path exactly as given, as `curl --path-as-is` does.
func rawGet(t *testing.T, base, rawPath string, header ...string) (int, string) {
	t.Helper()
	req := testhttp.NewRequest(t, "GET", base+"/", "")
	req.URL.Opaque = rawPath
	req.Header.Set("Accept", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header[header[i]] = []string{header[i+1]} // as given, not canonicalised
	}
	resp, b := testhttp.Do(t, nil, req)
	return resp.StatusCode, string(b)
}

// bypassProbes are paths that try to reach a protected page through a
// bypass rule, and their neighbours, with what the gateway must answer in a
// queued room: 400 for a
// dot segment, the waiting room (429 to JSON clients) for what no rule
// covers, the origin for what a rule does.
var bypassProbes = []struct {
	path   string
	status int
}{
	{"/healthz/../secret", 400},
	{"/static/%2e%2e", 400},
	{"/static/%2e%2e/secret", 400},
	{"/static/%2E%2E%2Fsecret", 400},
	{"/favicon.ico/../secret", 400},
	{"/healthz%2F..%2Fsecret", 400},
	{"/api/events/%2e%2e", 400},
	{"/api/events/%2e%2e/%2e%2e/secret", 400},
	{"/api/events/x/sections/..", 400},
	{"/static/./x/../../secret", 400},
	{`/static/..\secret`, 400},
	{"/static/%5c..%5csecret", 400},
	{"/healthzX", 429},
	{"/healthz.secret", 429},
	{"/healthz%2Fsecret", 429},
	{"/static%2Fapp.css", 429},
	{"/healthz//../secret", 400},
	{"/secret", 429},
	{"/healthz", 200},
	{"/healthz/", 200},
	{"/healthz/live", 200},
	{"/healthz//live", 200},
	{"/static/app.css", 200},
	{"/static//app.css", 200},
	{"/favicon.ico", 200},
	{"/api/events/final", 200},
	{"/api/events/final/sections/L1", 200},
}

// TestBypassRulesNeverReachProtectedPages: no bypassProbes path reaches the
// protected page, through `fairgate proxy` in front of an origin that
// resolves paths as nginx does; each gets the answer it lists.
func TestBypassRulesNeverReachProtectedPages(t *testing.T) {
	origin := startOrigin(t, pathtest.Origin())
	public, _, stop := startServer(t, origin, Config{Config: room.Config{Room: "sale"}, Bypass: Bypass{Paths: exampleBypass}})
	defer stop()
	for _, p := range bypassProbes {
		code, body := rawGet(t, public, p.path)
		if strings.Contains(body, pathtest.Secret) {
			t.Errorf("%s reached the protected page (%d)", p.path, code)
		}
		if code != p.status {
			t.Errorf("%s: %d, want %d (%s)", p.path, code, p.status, body)
		}
	}
}

// TestForgedPassHeaderNeverReachesOrigin: a forged pass header in either
// spelling never reaches the origin, on bypassed and on passed requests.
func TestForgedPassHeaderNeverReachesOrigin(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale"}, Bypass: Bypass{Paths: []string{"/healthz"}}}, pathtest.Origin())
	forged := []string{"Fairgate_Pass", "Fairgate-Pass", "fairgate_pass", "FAIRGATE_PASS", "Fairgate_Whatever"}
	check := func(what, p string, wantPass bool) {
		t.Helper()
		req := testhttp.NewRequest(t, "GET", e.srv.URL+p, "")
		for _, name := range forged {
			req.Header[name] = []string{"FORGED"} // as spelled, not canonicalised
		}
		resp, b := testhttp.Do(t, e.client, req)
		body := string(b)
		if resp.StatusCode != 200 || strings.Contains(body, "FORGED") {
			t.Errorf("%s: %d, origin saw %q", what, resp.StatusCode, body)
		}
		if got := strings.Contains(body, "\nFairgate-Pass: ey"); got != wantPass {
			t.Errorf("%s: real pass forwarded %t, want %t: %q", what, got, wantPass, body)
		}
	}
	check("bypassed", "/healthz", false)
	e.admitted()
	check("passed", "/shop", true)
}

// referenceBypass is what the rules mean on a resolved path, written
// independently of matcher: prefixes on segment boundaries, globs
// segment by segment.
func referenceBypass(rules []string, resolved string) bool {
	segs := strings.Split(resolved, "/")
	for _, rule := range rules {
		if !strings.Contains(rule, "*") {
			if resolved == rule || strings.HasPrefix(resolved, rule+"/") {
				return true
			}
			continue
		}
		want := strings.Split(rule, "/")
		if len(want) != len(segs) {
			continue
		}
		ok := true
		for i := range want {
			m, _ := path.Match(want[i], segs[i])
			ok = ok && m && segs[i] != "." && segs[i] != ".."
		}
		if ok {
			return true
		}
	}
	return false
}

// FuzzBypassMatcher: whatever path a client sends, a request the gateway
// bypasses is one an nginx-like origin serves from a path the rules cover,
// and the gateway's canonical path is the origin's.
func FuzzBypassMatcher(f *testing.F) {
	m, err := newMatcher(exampleBypass)
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range bypassProbes {
		f.Add(p.path)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.ParseRequestURI(raw)
		if err != nil || u.Opaque != "" || u.Host != "" {
			return
		}
		canon, exact, err := canonicalPath(u)
		if err != nil || !exact {
			return
		}
		resolved, ok := pathtest.Resolve(u.EscapedPath())
		if !ok {
			t.Fatalf("%q: canonical %q, but the origin refuses it", raw, canon)
		}
		if canon != resolved {
			t.Fatalf("%q: canonical %q, origin serves %q", raw, canon, resolved)
		}
		if m.match(canon) && !referenceBypass(exampleBypass, resolved) {
			t.Fatalf("%q bypassed, but the origin serves %q", raw, resolved)
		}
	})
}

func TestMatcherSegments(t *testing.T) {
	m, err := newMatcher([]string{"/healthz", "/static/*", "/assets/**", "/dir/"})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		"/healthz": true, "/healthz/x": true, "/healthzX": false, "/healthz.txt": false,
		"/static/a.css": true, "/static/..": false, "/static/.": false, "/static/a/b": false,
		"/assets": true, "/assets/a/b": true, "/assetsX": false, "/assets/../x": false,
		"/dir": true, "/dir/x": true, "/dirx": false,
	} {
		if got := m.match(p); got != want {
			t.Errorf("match(%q) = %t, want %t", p, got, want)
		}
	}
}

func startOrigin(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSafeReturnStaysOnThisHost: what a browser would resolve to another
// host is never a redirect target.
func TestSafeReturnStaysOnThisHost(t *testing.T) {
	for in, want := range returnProbes {
		if got := safeReturn(in); got != want {
			t.Errorf("safeReturn(%q) = %q, want %q", in, got, want)
		}
	}
}

// returnProbes are return paths, tricks for another host among them, and
// where the visitor may be sent for each: the admit redirect's target, and
// the path a waiting page template is given.
var returnProbes = map[string]string{
	"/\t/evil.example":          "/",
	"/\t\\evil.example":         "/",
	"/\\evil.example":           "/",
	"\\/evil.example":           "/",
	"//evil.example":            "/",
	"/\n/evil.example":          "/",
	"/\x00/evil":                "/",
	"/\u0085/evil":              "/",
	"https://evil.example":      "/",
	"/%zz":                      "/",
	"":                          "/",
	"/shop?x=1#top":             "/shop?x=1#top",
	"/a/b":                      "/a/b",
	"/%2F%2Fevil.example":       "/%2F%2Fevil.example", // a path on this site
	"//evil.example/login":      "/",
	"/shop?next=//evil.example": "/shop?next=//evil.example",
}

// FuzzSafeReturn: whatever a client asks to return to, the redirect stays
// on this site as both Go and a browser read it: a path with no control
// characters or backslashes, resolving to the same host.
func FuzzSafeReturn(f *testing.F) {
	for _, s := range []string{"/shop", "/\t/evil.example", "//x", "/\\x", "https://x", "/%2e%2e/x", "/?next=//x"} {
		f.Add(s)
	}
	site, _ := url.Parse("https://shop.example/queue/page")
	f.Fuzz(func(t *testing.T, in string) {
		out := safeReturn(in)
		if out == "/" {
			return
		}
		if out != in {
			t.Fatalf("safeReturn(%q) rewrote it to %q", in, out)
		}
		if !strings.HasPrefix(out, "/") || strings.HasPrefix(out, "//") || strings.ContainsAny(out, "\\\t\r\n") {
			t.Fatalf("safeReturn(%q) = %q", in, out)
		}
		ref, err := url.Parse(out)
		if err != nil {
			t.Fatalf("safeReturn(%q) = %q, which does not parse: %v", in, out, err)
		}
		if got := site.ResolveReference(ref); got.Host != site.Host || got.Scheme != site.Scheme {
			t.Fatalf("safeReturn(%q) = %q resolves to %s", in, out, got)
		}
	})
}

// TestPassOpensOnlyForItsHolder: with bind_pass a pass copied to other
// clients opens the site only for the address it was admitted from; with
// identity, only for the login it was admitted as.
func TestPassOpensOnlyForItsHolder(t *testing.T) {
	t.Run("address", func(t *testing.T) {
		e := newEnv(t, Config{Config: room.Config{Room: "sale"}, BindIP: true, BindPass: true, TrustedProxies: []string{"127.0.0.0/8"}}, nil)
		a := e.admitted("X-Forwarded-For", "203.0.113.7")
		cookie := "fairgate_pass_sale=" + a.Pass
		var wg sync.WaitGroup
		var through atomic.Int32
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("GET", e.srv.URL+"/shop", nil)
				req.Header.Set("Cookie", cookie)
				req.Header.Set("Accept", "application/json")
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode == 200 {
					through.Add(1)
				}
			}()
		}
		wg.Wait()
		if n := through.Load(); n != 0 {
			t.Fatalf("a pass copied to 20 other addresses let %d in", n)
		}
		if resp, _ := e.do("GET", "/shop", "", "Cookie", cookie, "X-Forwarded-For", "203.0.113.7"); resp.StatusCode != 200 {
			t.Fatalf("the pass from its own address: %d", resp.StatusCode)
		}
	})
	t.Run("address binding is off by default", func(t *testing.T) {
		e := newEnv(t, Config{Config: room.Config{Room: "sale"}, BindIP: true, TrustedProxies: []string{"127.0.0.0/8"}}, nil)
		a := e.admitted("X-Forwarded-For", "203.0.113.7")
		if resp, _ := e.do("GET", "/shop", "", "Cookie", "fairgate_pass_sale="+a.Pass, "X-Forwarded-For", "198.51.100.1"); resp.StatusCode != 200 {
			t.Fatalf("an unbound pass from another address: %d", resp.StatusCode)
		}
	})
	t.Run("subject", func(t *testing.T) {
		secret := []byte("login-secret-for-tests-0123456789")
		e := newEnv(t, Config{
			Config: room.Config{Room: "sale"},
			Identity: &Identity{
				Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(secret),
			},
		}, nil)
		login := func(sub string) string { return "Bearer " + signLogin(t, secret, sub, e.clock.Now().Add(time.Hour)) }
		a := e.admitted("Authorization", login("alice"))
		cookie := "fairgate_pass_sale=" + a.Pass
		for who, want := range map[string]int{"alice": 200, "mallory": 429} {
			if resp, _ := e.do("GET", "/shop", "", "Cookie", cookie, "Authorization", login(who), "Accept", "application/json"); resp.StatusCode != want {
				t.Errorf("alice's pass with %s's login: %d, want %d", who, resp.StatusCode, want)
			}
		}
		if resp, _ := e.do("GET", "/shop", "", "Cookie", cookie, "Accept", "application/json"); resp.StatusCode != 429 {
			t.Errorf("alice's pass without a login: %d", resp.StatusCode)
		}
	})
	t.Run("bind_pass needs bind_ip", func(t *testing.T) {
		if _, err := (Config{BindPass: true}).settle(); err == nil {
			t.Fatal("bind_pass without bind_ip accepted")
		}
	})
}

// backTemplate is an operator's waiting page that links back to where the
// visitor was going, as docs/WAITING_PAGE.md shows.
const backTemplate = `<!doctype html><title>{{.T.title}}</title><a id="back" href="{{.Return}}">{{.T.heading}}</a>{{.Script}}`

var backLink = regexp.MustCompile(`<a id="back" href="([^"]*)"`)

// hrefOf is the back link's target in a waiting page, unescaped.
func hrefOf(t *testing.T, page string) string {
	t.Helper()
	m := backLink.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no back link in the page:\n%s", page)
	}
	return html.UnescapeString(m[1])
}

// TestWaitingPageReturnIsSafe: a waiting page template gets the return
// path only as the admit redirect would take it: each trick for another
// host becomes "/", in the link and in the script's data-return.
func TestWaitingPageReturnIsSafe(t *testing.T) {
	var asked string
	cfg := Config{Config: room.Config{Room: "back", Keys: testKeys}, WaitingPage: writeTemplate(t, backTemplate)}
	shared, err := NewShared(cfg, newFakeClock().Now)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := New(cfg, shared, Options{Now: newFakeClock().Now, ReturnURI: func(*http.Request) string { return asked }})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	for in, want := range returnProbes {
		asked = in
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/tickets", nil)
		r.Header.Set("Accept", "text/html")
		gw.ServeHTTP(w, r)
		page := w.Body.String()
		if got := hrefOf(t, page); got != want {
			t.Errorf("return %q: the page links to %q, want %q", in, got, want)
		}
		if ret := `data-return="` + template.HTMLEscapeString(want) + `"`; !strings.Contains(page, ret) {
			t.Errorf("return %q: the script lacks %s", in, ret)
		}
	}
}

// TestWaitingPageReturnIsSafeThroughProxy sends each trick as the request
// target, byte for byte, to `fairgate proxy` with an operator's template:
// whatever the server lets through, the page links only to a path on this
// site, and `//evil.example/login` to "/".
func TestWaitingPageReturnIsSafeThroughProxy(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	public, _, stop := serveConfig(t, ServerConfig{Upstream: u, AdminToken: "tok",
		Gateway: Config{Config: room.Config{Room: "back", Keys: testKeys}, WaitingPage: writeTemplate(t, backTemplate)}})
	defer stop()
	for in := range returnProbes {
		conn, err := net.Dial("tcp", public)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: shop.example\r\nAccept: text/html\r\nConnection: close\r\n\r\n", in)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		b, _ := io.ReadAll(resp.Body)
		conn.Close()
		if resp.StatusCode != http.StatusOK {
			continue // refused by the server or the gateway: no page, no link
		}
		href := hrefOf(t, string(b))
		if safeReturn(href) != href || href == "" {
			t.Errorf("%q: the page links to %q", in, href)
		}
		if strings.HasPrefix(in, "//") && href != "/" {
			t.Errorf("%q: the page links to %q, want /", in, href)
		}
	}
}
