package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestWaitingPageAndJSON(t *testing.T) {
	e := newEnv(t, Config{Room: "sale"}, nil)
	resp, body := e.do("GET", "/tickets", "", "Accept", "text/html")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `id="fairgate"`) || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("waiting page: %d %q %s", resp.StatusCode, resp.Header.Get("Cache-Control"), body)
	}
	if !strings.Contains(string(body), "<noscript>") || !strings.Contains(string(body), `data-return="/tickets"`) {
		t.Fatalf("waiting page lacks noscript or return: %s", body)
	}
	resp, body = e.do("GET", "/tickets", "", "Accept", "application/json")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"waiting_room"`) {
		t.Fatalf("app without a pass: %d %s", resp.StatusCode, body)
	}
	if e.origin.count() != 0 {
		t.Fatal("a visitor without a pass reached the origin")
	}
}

func TestTokenCookieAndRefresh(t *testing.T) {
	e := newEnv(t, Config{Room: "sale"}, nil)
	resp, body := e.do("POST", "/_fairgate/token", "")
	if resp.StatusCode != 200 {
		t.Fatalf("token: %d %s", resp.StatusCode, body)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "fairgate_wait_sale" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Secure {
		t.Fatalf("wait cookie: %+v", cookie)
	}
	var first ticketJSON
	_ = json.Unmarshal(body, &first)
	if first.Challenge == "" || first.Difficulty != 4 || first.EstimateSeconds == nil || first.RetryAfter <= 0 {
		t.Fatalf("ticket: %s", body)
	}
	// A refresh returns the same place, unchanged.
	e.clock.Add(time.Second)
	again := e.ticket()
	if again.Token != first.Token {
		t.Fatal("refresh changed the waiting token")
	}
}

func TestFullFlow(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", Tau: Duration(10 * time.Second), FixedSpeed: true}, nil)
	a := e.admitted()
	if a.Redirect != "/shop?x=1" || a.Pass == "" {
		t.Fatalf("admit: %+v", a)
	}
	resp, body := e.do("GET", "/shop", "", "Fairgate-Pass", "forged", "fairgate-anything", "x")
	if resp.StatusCode != 200 || string(body) != "origin:/shop" {
		t.Fatalf("protected request with a pass: %d %s", resp.StatusCode, body)
	}
	got := e.origin.last()
	if got.Header.Get(PassHeader) != a.Pass || got.Header.Get("Fairgate-Anything") != "" {
		t.Fatalf("upstream headers: %v", got.Header)
	}
	// The pass is single use of its token: the old waiting token is spent.
	if n := testutil.ToFloat64(e.gw.metrics.admissions); n != 1 {
		t.Fatalf("admissions metric %v", n)
	}
	// A tampered pass is refused.
	tampered := a.Pass[:len(a.Pass)-3] + "AAA"
	req, _ := http.NewRequest("GET", e.srv.URL+"/shop", nil)
	req.Header.Set("Accept", "application/json")
	req.AddCookie(&http.Cookie{Name: "fairgate_pass_sale", Value: tampered})
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != 429 {
		t.Fatalf("tampered pass: %d", r2.StatusCode)
	}
	// Expired pass: back to the waiting room.
	e.clock.Add(16 * time.Minute)
	resp, _ = e.do("GET", "/shop", "", "Accept", "application/json")
	if resp.StatusCode != 429 {
		t.Fatalf("expired pass: %d", resp.StatusCode)
	}
}

func TestAdmitStatuses(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", Tau: Duration(time.Hour), FixedSpeed: true}, nil)
	tk := e.ticket()
	nonce := solveFor(t, tk)
	tests := []struct {
		name, body string
		status     int
		code       string
	}{
		{"not json", `{nonce`, 400, "malformed"},
		{"unknown field", `{"nonse":"1"}`, 400, "malformed"},
		{"oversized", `{"nonce":"` + strings.Repeat("1", 5000) + `"}`, 413, "too_large"},
		{"malformed nonce", `{"nonce":"01"}`, 400, "malformed"},
		{"forged token", `{"nonce":"1","token":"eyJhbGciOiJIUzI1NiJ9.e30.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`, 401, "token_invalid"},
		{"garbage token", `{"nonce":"1","token":"x"}`, 400, "malformed"},
		{"early", `{"nonce":"` + nonce + `"}`, 429, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.do("POST", "/_fairgate/admit", tt.body)
			if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.code) {
				t.Fatalf("%d %s; want %d %q", resp.StatusCode, body, tt.status, tt.code)
			}
			if strings.Contains(string(body), "goroutine") {
				t.Fatal("stack trace in a response")
			}
		})
	}
	// A wrong proof of work is 403.
	e.clock.Set(time.UnixMilli(tk.NextAttempt).Add(time.Hour))
	cur := e.ticket()
	e.clock.Set(time.UnixMilli(cur.NextAttempt))
	wrong := "0"
	for i := 1; solveFor(t, cur) == wrong; i++ {
		wrong = string(rune('0' + i))
	}
	resp, body := e.do("POST", "/_fairgate/admit", `{"nonce":"`+wrong+`"}`)
	if resp.StatusCode != 403 || !strings.Contains(string(body), "pow") {
		t.Fatalf("wrong pow: %d %s", resp.StatusCode, body)
	}
	if testutil.ToFloat64(e.gw.metrics.attempts.WithLabelValues("admit", "early", "early")) != 1 || testutil.ToFloat64(e.gw.metrics.powFailures) != 1 {
		t.Fatal("early attempt and pow metrics not counted")
	}
	for _, path := range []string{"/_fairgate/token", "/_fairgate/admit"} {
		if resp, _ := e.do("GET", path, ""); resp.StatusCode != 405 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
	}
}

func TestReusedToken(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", State: "open"}, nil)
	tk := e.ticket()
	nonce := solveFor(t, tk)
	e.clock.Set(time.UnixMilli(tk.NextAttempt))
	body := `{"nonce":"` + nonce + `","token":"` + tk.Token + `"}`
	resp, first := e.do("POST", "/_fairgate/admit", body)
	if resp.StatusCode != 200 {
		t.Fatalf("first use: %d %s", resp.StatusCode, first)
	}
	// The same token again (as after a lost answer): the same pass, not a
	// second admission.
	if resp, b := e.do("POST", "/_fairgate/admit", body); resp.StatusCode != 200 || string(b) != string(first) {
		t.Fatalf("second use: %d %s, want %s", resp.StatusCode, b, first)
	}
}

func TestRoomStates(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", State: "open"}, nil)
	if resp, body := e.do("GET", "/shop", ""); resp.StatusCode != 200 || string(body) != "origin:/shop" {
		t.Fatalf("open room: %d %s", resp.StatusCode, body)
	}
	closed, soldOut := "closed", "sold_out"
	if err := e.gw.Room().Apply(RoomChange{State: &closed, Reason: &soldOut}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	resp, body := e.do("GET", "/shop", "", "Accept", "text/html")
	if resp.StatusCode != 503 || !strings.Contains(string(body), "Sold out") {
		t.Fatalf("sold out: %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do("POST", "/_fairgate/token", ""); resp.StatusCode != 503 || !strings.Contains(string(body), "sold_out") {
		t.Fatalf("token while closed: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("GET", "/_fairgate/status", "")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"state":"closed"`) || resp.Header.Get("Cache-Control") != "public, max-age=1" {
		t.Fatalf("status: %d %s", resp.StatusCode, body)
	}
}

// TestPausedAdmitsNobody: pause stops admissions; resume lets the same
// tokens in, none lost.
func TestPausedAdmitsNobody(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", Tau: Duration(time.Second), FixedSpeed: true}, nil)
	tk := e.ticket()
	paused, queue := "paused", "queue"
	if err := e.gw.Room().Apply(RoomChange{State: &paused}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	nonce := solveFor(t, tk)
	for range 20 {
		e.clock.Set(time.UnixMilli(tk.NextAttempt))
		resp, body := e.do("POST", "/_fairgate/admit", `{"nonce":"`+nonce+`"}`)
		if resp.StatusCode != 429 {
			t.Fatalf("paused room answered %d %s", resp.StatusCode, body)
		}
		_ = json.Unmarshal(body, &tk)
	}
	if err := e.gw.Room().Apply(RoomChange{State: &queue}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if a := e.admitted(); !a.Admitted {
		t.Fatal("not admitted after resume")
	}
}

func TestBypass(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", Bypass: Bypass{
		Paths: []string{"/static/", "/api/events/*/sections/*", "/health"}, Methods: []string{"OPTIONS"},
		UserAgents: []string{"^kube-probe/"}, CIDRs: []string{"10.0.0.0/8"},
	}}, nil)
	for _, tt := range []struct {
		method, path, ua string
		through          bool
	}{
		{"GET", "/static/app.css", "", true},
		{"GET", "/api/events/e1/sections/A", "", true},
		{"GET", "/api/events/e1/sections/A/extra", "", false},
		{"GET", "/health/live", "", true},
		{"GET", "/healthz", "", false}, // prefixes end on segment boundaries
		{"OPTIONS", "/shop", "", true},
		{"GET", "/shop", "kube-probe/1.29", true},
		{"GET", "/shop", "Mozilla/5.0", false},
	} {
		resp, _ := e.do(tt.method, tt.path, "", "User-Agent", tt.ua, "Accept", "application/json")
		if (resp.StatusCode == 200) != tt.through {
			t.Errorf("%s %s (%s): %d", tt.method, tt.path, tt.ua, resp.StatusCode)
		}
	}
}

func TestBindIP(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", State: "open", BindIP: true, TrustedProxies: []string{"127.0.0.0/8"}}, nil)
	resp, body := e.do("POST", "/_fairgate/token", "", "X-Forwarded-For", "203.0.113.7")
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	var tk ticketJSON
	_ = json.Unmarshal(body, &tk)
	nonce := solveFor(t, tk)
	if resp, _ := e.do("POST", "/_fairgate/admit", `{"nonce":"`+nonce+`"}`, "X-Forwarded-For", "198.51.100.9"); resp.StatusCode != 403 {
		t.Fatalf("token from another address: %d", resp.StatusCode)
	}
	if resp, _ := e.do("POST", "/_fairgate/admit", `{"nonce":"`+nonce+`"}`, "X-Forwarded-For", "203.0.113.7"); resp.StatusCode != 200 {
		t.Fatalf("same address: %d", resp.StatusCode)
	}
}
