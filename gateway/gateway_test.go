package gateway

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/room"
	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestWaitingPageAndJSON(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale"}}, nil)
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
	e := newEnv(t, Config{Config: room.Config{Room: "sale"}}, nil)
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
	e := newEnv(t, Config{Config: room.Config{Room: "sale", Tau: Duration(10 * time.Second), FixedSpeed: true}}, nil)
	a := e.admitted()
	if a.Redirect != "/shop?x=1" || a.Pass == "" {
		t.Fatalf("admit: %+v", a)
	}
	resp, body := e.do("GET", "/shop", "", "Fairgate-Pass", "forged", "fairgate-anything", "x")
	if resp.StatusCode != 200 || string(body) != "origin:/shop" {
		t.Fatalf("protected request with a pass: %d %s", resp.StatusCode, body)
	}
	got := e.origin.last()
	if got.Header.Get(passHeader) != a.Pass || got.Header.Get("Fairgate-Anything") != "" {
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
	e := newEnv(t, Config{Config: room.Config{Room: "sale", Tau: Duration(time.Hour), FixedSpeed: true}}, nil)
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
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "open"}}, nil)
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
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "open"}}, nil)
	if resp, body := e.do("GET", "/shop", ""); resp.StatusCode != 200 || string(body) != "origin:/shop" {
		t.Fatalf("open room: %d %s", resp.StatusCode, body)
	}
	closed, soldOut := "closed", "sold_out"
	if err := e.gw.Room().Apply(room.RoomChange{State: &closed, Reason: &soldOut}, e.clock.Now()); err != nil {
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
	e := newEnv(t, Config{Config: room.Config{Room: "sale", Tau: Duration(time.Second), FixedSpeed: true}}, nil)
	tk := e.ticket()
	paused, queue := "paused", "queue"
	if err := e.gw.Room().Apply(room.RoomChange{State: &paused}, e.clock.Now()); err != nil {
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
	if err := e.gw.Room().Apply(room.RoomChange{State: &queue}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if a := e.admitted(); !a.Admitted {
		t.Fatal("not admitted after resume")
	}
}

func TestBypass(t *testing.T) {
	e := newEnv(t, Config{
		Config: room.Config{Room: "sale"},
		Bypass: Bypass{
			Paths: []string{"/static/", "/api/events/*/sections/*", "/health"}, Methods: []string{"OPTIONS"},
			UserAgents: []string{"^kube-probe/"}, CIDRs: []string{"10.0.0.0/8"},
		},
	}, nil)
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
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "open"}, BindIP: true, TrustedProxies: []string{"127.0.0.0/8"}}, nil)
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

// TestSlotsFollowARateCut: 130 eligible visitors at 10/s (burst 10):
// ten go in, the rest hold slots over the next 12 s. The rate is cut to
// 1/s (burst 1): the new rate binds at once (at most 7 admitted in the
// next 5 s), and the slot holders go in the order of their slots.
func TestSlotsFollowARateCut(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue", Tau: Duration(time.Millisecond), FixedSpeed: true, Rate: 10, Burst: 10}}, nil)
	const n = 130
	tabs, tks := make([]*tab, n), make([]ticketJSON, n)
	for i := range tabs {
		tabs[i] = e.newTab()
		tks[i] = tabs[i].token()
	}
	// Each presents at its checkpoint, the earliest first (a crowd
	// presenting late at once is TestLateCrowdIsSpacedAtTheRate's).
	byCheckpoint := make([]int, n)
	for i := range byCheckpoint {
		byCheckpoint[i] = i
	}
	slices.SortStableFunc(byCheckpoint, func(a, b int) int { return int(tks[a].NextAttempt - tks[b].NextAttempt) })
	slot := make([]int64, n) // the slot first given, 0 if admitted at once
	waiting := []int{}
	for _, i := range byCheckpoint {
		e.clock.Set(time.UnixMilli(tks[i].NextAttempt))
		switch status, tk := tabs[i].admit(tks[i]); {
		case status == 200:
		case status == 429 && tk.Outcome == "busy":
			tks[i], slot[i] = tk, tk.NextAttempt
			waiting = append(waiting, i)
		default:
			t.Fatalf("visitor %d: %d %+v", i, status, tk)
		}
	}
	// The burst goes in at once, and the bucket refills while the
	// checkpoints pass: the rest hold slots.
	spread := time.UnixMilli(tks[byCheckpoint[n-1]].NextAttempt).Sub(time.UnixMilli(tks[byCheckpoint[0]].NextAttempt))
	if admitted, most := n-len(waiting), 10+int(spread.Seconds()*10)+1; admitted > most || len(waiting) < 100 {
		t.Fatalf("%d admitted at their checkpoints (spread over %v), %d slot holders; want at most %d admitted", admitted, spread, len(waiting), most)
	}
	cut := e.clock.Now()
	rate, burst := 1.0, 1.0
	if err := e.gw.Room().Apply(room.RoomChange{Rate: &rate, Burst: &burst}, cut); err != nil {
		t.Fatal(err)
	}
	// Every holder presents at its nxt, the earliest first.
	var order []int // admitted, in order
	inFirst5s := 0
	for step := 0; len(waiting) > 0; step++ {
		if step > 10*n {
			t.Fatalf("%d slot holders never admitted", len(waiting))
		}
		slices.SortStableFunc(waiting, func(a, b int) int { return int(tks[a].NextAttempt - tks[b].NextAttempt) })
		i := waiting[0]
		e.clock.Set(time.UnixMilli(tks[i].NextAttempt))
		switch status, tk := tabs[i].admit(tks[i]); {
		case status == 200:
			order = append(order, i)
			waiting = waiting[1:]
			if e.clock.Now().Sub(cut) <= 5*time.Second {
				inFirst5s++
			}
		case status == 429:
			tks[i] = tk
		default:
			t.Fatalf("slot holder %d: %d %+v", i, status, tk)
		}
	}
	t.Logf("admitted in the 5 s after the cut: %d; the last %v after it", inFirst5s, e.clock.Now().Sub(cut))
	// The new rate's five, and the pacer's bucket at it: its burst (two
	// seconds of the rate) and a stall's two more.
	if inFirst5s > 5+4 {
		t.Errorf("%d admitted in the 5 s after cutting the rate to 1/s: the old slots outlived the change", inFirst5s)
	}
	for k := 1; k < len(order); k++ {
		if slot[order[k]] < slot[order[k-1]] {
			t.Fatalf("visitor %d (slot %d) admitted after %d (slot %d): the order was jumped", order[k], slot[order[k]], order[k-1], slot[order[k-1]])
		}
	}
}

// TestEarlySaleStartAdmitsThePreQueue: a sale is scheduled an hour
// ahead; one login takes its place in the pre-queue in two identical rooms
// (the same keys, clock and login: the same draw and grid). In one its page
// follows every answer (it sleeps retry_after, as the page does), in the
// other it asks every second. After 20 minutes the operator starts the
// sale (state queue). The page wakes at most max_backoff apart while
// scheduled, the gate moves its checkpoint to the new grid, and both get in
// within two backoffs of the start — the one asking every second no sooner.
func TestEarlySaleStartAdmitsThePreQueue(t *testing.T) {
	secret := []byte("site-login-secret-0123456789abcdef")
	world := func() *env {
		return newEnv(t, Config{
			Config: room.Config{Room: "sale", State: "queue", Tau: Duration(time.Millisecond), FixedSpeed: true, Rate: 100, Burst: 100},
			Identity: &Identity{
				Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(secret), Required: true,
			},
		}, nil)
	}
	e, h := world(), world() // the page's room, the hammerer's
	login := func(sub string) string { return "Bearer " + signLogin(t, secret, sub, e.clock.Now().Add(24*time.Hour)) }
	for trial := range 4 {
		start := e.clock.Now()
		h.clock.Set(start)
		scheduled, saleStart := "scheduled", start.Add(time.Hour).UTC().Format(time.RFC3339)
		for _, w := range []*env{e, h} {
			if err := w.gw.Room().Apply(room.RoomChange{State: &scheduled, SaleStart: &saleStart}, start); err != nil {
				t.Fatal(err)
			}
		}
		user := login(fmt.Sprint("user-", trial))
		honest, hammer := e.newTab("Authorization", user), h.newTab("Authorization", user)
		htk, mtk := honest.token(), hammer.token()
		if htk.RetryAfter > 30 {
			t.Fatalf("a pre-queue page told to sleep %vs: it would not see the start move", htk.RetryAfter)
		}
		wake := e.clock.Now().Add(time.Duration(htk.RetryAfter * float64(time.Second)))
		moved := start.Add(20*time.Minute + time.Duration(trial)*7*time.Second)
		var later *tab
		var ltk ticketJSON
		var honestIn, hammerIn, laterIn time.Time
		for step := 1; honestIn.IsZero() || hammerIn.IsZero() || laterIn.IsZero(); step++ {
			if step > 2*3600 {
				t.Fatalf("trial %d: not admitted in two hours (honest %v, hammerer %v, later %v)", trial, honestIn, hammerIn, laterIn)
			}
			now := start.Add(time.Duration(step) * time.Second)
			e.clock.Set(now)
			h.clock.Set(now)
			if now.Equal(moved) {
				e.setState("queue")
				h.setState("queue")
				later = e.newTab("Authorization", login(fmt.Sprint("later-", trial)))
				ltk = later.token()
			}
			// attempt presents *tk once: admitted, it records now in *in;
			// told to wait, *tk becomes the answer (returned, with true).
			attempt := func(who string, tb *tab, tk *ticketJSON, in *time.Time) (ticketJSON, bool) {
				status, back := tb.admit(*tk)
				switch status {
				case 200:
					*in = now
				case 429:
					*tk = back
				default:
					t.Fatalf("%s: %d", who, status)
				}
				return back, status == 429
			}
			if hammerIn.IsZero() {
				attempt("hammerer", hammer, &mtk, &hammerIn)
			}
			if honestIn.IsZero() && !now.Before(wake) {
				if back, waiting := attempt("honest", honest, &htk, &honestIn); waiting {
					if back.State == "scheduled" && back.RetryAfter > 30 {
						t.Fatalf("told to sleep %vs while scheduled", back.RetryAfter)
					}
					wake = now.Add(time.Duration(back.RetryAfter * float64(time.Second)))
				}
			}
			if later != nil && laterIn.IsZero() && !now.Before(time.UnixMilli(ltk.NextAttempt)) {
				attempt("later arrival", later, &ltk, &laterIn)
			}
		}
		t.Logf("trial %d: after the early start, honest in %v, hammerer %v, a later arrival %v", trial,
			honestIn.Sub(moved), hammerIn.Sub(moved), laterIn.Sub(moved))
		// The page learns of the move within max_backoff, and its
		// checkpoint is the first of the new grid after that.
		if limit := moved.Add(2*admission.DefaultPolicy.MaxBackoff + 2*time.Second); honestIn.After(limit) {
			t.Errorf("trial %d: the pre-queue page got in %v after the early start: stranded", trial, honestIn.Sub(moved))
		}
		if hammerIn.Before(honestIn) {
			t.Errorf("trial %d: asking every second got in %v before the page", trial, honestIn.Sub(hammerIn))
		}
		e.clock.Set(e.clock.Now().Add(time.Minute))
	}
}

// TestRacedReplaysAdmitOnce: every version of one place, presented at
// once from many goroutines, admits exactly once.
func TestRacedReplaysAdmitOnce(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue", Tau: Duration(24 * time.Hour), FixedSpeed: true, Rate: 1000, Burst: 1000}}, nil)
	tb := e.newTab()
	versions := []ticketJSON{tb.token()}
	for range 5 {
		cur := versions[len(versions)-1]
		e.clock.Set(time.UnixMilli(cur.NextAttempt))
		status, back := tb.admit(cur)
		if status != 429 || back.Outcome != "wait" {
			t.Fatalf("waiting attempt: %d %+v", status, back)
		}
		versions = append(versions, back)
	}
	e.setState("open")
	const n = 32
	statuses := make(chan int, n*len(versions))
	passes := make(chan string, n*len(versions))
	var wg sync.WaitGroup
	for range n {
		for _, v := range versions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := `{"nonce":"` + solveFor(t, v) + `","token":"` + v.Token + `"}`
				req, _ := http.NewRequest("POST", e.srv.URL+"/_fairgate/admit", strings.NewReader(body))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				var a struct{ Pass string }
				_ = json.NewDecoder(resp.Body).Decode(&a)
				resp.Body.Close()
				statuses <- resp.StatusCode
				if resp.StatusCode == 200 {
					passes <- a.Pass
				}
			}()
		}
	}
	wg.Wait()
	close(statuses)
	close(passes)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	distinct := map[string]bool{}
	for p := range passes {
		distinct[p] = true
	}
	// One pass: the version that won is answered with it every time (its
	// own admission, as after a lost answer); every other version 409; the
	// newest version is not due yet: told to wait (429), nothing judged.
	if len(distinct) != 1 || count[200] > n || count[200]+count[409]+count[429] != n*len(versions) || count[429] > n {
		t.Fatalf("one place presented %d times at once: %v, %d distinct passes; want one pass, the rest 409 (429 for the version not yet due)", n*len(versions), count, len(distinct))
	}
}

// TestForgedCheckpointRefused: moving nxt (or lot, or srv) in a token without its
// key is refused, so nobody picks their own checkpoint or draw.
func TestForgedCheckpointRefused(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue", Tau: Duration(time.Second), FixedSpeed: true}}, nil)
	tb := e.newTab()
	tk := tb.token()
	parts := strings.Split(tk.Token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, alter := range []func(map[string]any){
		func(c map[string]any) { c["nxt"] = c["nxt"].(float64) - 60000 },
		func(c map[string]any) { c["lot"] = "AAAAAAAAAAAAAAAAAAAAAA==" },
		func(c map[string]any) { c["srv"] = -1000.0 },
		func(c map[string]any) { c["exp"] = c["exp"].(float64) + 86400 },
	} {
		var c map[string]any
		if err := json.Unmarshal(payload, &c); err != nil {
			t.Fatal(err)
		}
		alter(c)
		b, _ := json.Marshal(c)
		forged := tk
		forged.Token = parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
		if status, back := tb.admit(forged); status != http.StatusUnauthorized {
			t.Fatalf("forged token %s: %d %+v, want 401", b, status, back)
		}
	}
}

// TestTokenFromAnotherRoomRefused: a place in room A is no place in room B, even
// when both rooms sign with the same keys.
func TestTokenFromAnotherRoomRefused(t *testing.T) {
	a := newEnv(t, Config{Config: room.Config{Room: "a", State: "queue"}}, nil)
	b := newEnv(t, Config{Config: room.Config{Room: "b", State: "open"}}, nil)
	tk := a.newTab().token()
	tb := b.newTab()
	if status, _ := tb.admit(tk); status != http.StatusUnauthorized {
		t.Fatalf("room a's token at room b: %d, want 401", status)
	}
}

// TestAnonymousPresenterCannotTakeALoggedInPlace: with identity optional, a
// request without a login must not present a logged-in visitor's token and
// come away with a pass in their name.
func TestAnonymousPresenterCannotTakeALoggedInPlace(t *testing.T) {
	secret := []byte("site-login-secret-0123456789abcdef")
	e := newEnv(t, Config{
		Config: room.Config{Room: "sale", State: "open"},
		Identity: &Identity{
			Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(secret),
		},
	}, nil)
	login, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: "alice", ExpiresAt: jwt.NewNumericDate(e.clock.Now().Add(time.Hour))}).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	tk := e.newTab("Authorization", "Bearer "+login).token()
	if sub := e.claims(tk.Token).Subject; sub != "alice" {
		t.Fatalf("alice's token names %q", sub)
	}
	stranger := e.newTab()
	if status, _ := stranger.admit(tk); status != http.StatusForbidden {
		t.Fatalf("alice's token without her login: %d, want 403", status)
	}
	bob, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: "bob", ExpiresAt: jwt.NewNumericDate(e.clock.Now().Add(time.Hour))}).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := e.newTab("Authorization", "Bearer "+bob).admit(tk); status != http.StatusForbidden {
		t.Fatalf("alice's token with bob's login: %d, want 403", status)
	}
}

// TestEligibleBeforePauseKeepsPlace: places that became eligible just
// before a pause, whose pages follow every answer through a long pause,
// keep their tokens and are admitted after it.
func TestEligibleBeforePauseKeepsPlace(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue", Tau: Duration(time.Second), FixedSpeed: true, Rate: 1000, Burst: 1000}}, nil)
	type page struct {
		tab  *tab
		tk   ticketJSON
		next time.Time
		in   bool
	}
	var pages []*page
	for range 8 {
		tb := e.newTab()
		tk := tb.token()
		pages = append(pages, &page{tab: tb, tk: tk, next: time.UnixMilli(tk.NextAttempt)})
	}
	// Every first checkpoint is at least the shortest backoff away; the
	// clock runs two mean waits before the pause, so most are eligible.
	e.clock.Add(admission.DefaultPolicy.MinBackoff - time.Millisecond)
	e.setState("paused")
	step := func(until time.Time) {
		for {
			var p *page
			for _, q := range pages {
				if !q.in && (p == nil || q.next.Before(p.next)) {
					p = q
				}
			}
			if p == nil || !p.next.Before(until) {
				return
			}
			e.clock.Set(p.next)
			status, back := p.tab.admit(p.tk)
			switch {
			case status == 200:
				p.in = true
			case status == 429 && back.Token != "":
				p.tk = back
				// The page waits as told: at nxt, or the Retry-After
				// second when nxt has passed.
				p.next = time.UnixMilli(back.NextAttempt)
				if !p.next.After(e.clock.Now()) {
					p.next = e.clock.Now().Add(time.Second)
				}
			default:
				t.Fatalf("at %v: %d %+v", e.clock.Now(), status, back)
			}
		}
	}
	step(e.clock.Now().Add(30 * time.Minute))
	for _, p := range pages {
		if p.in {
			t.Fatal("admitted while paused")
		}
	}
	e.setState("queue")
	step(e.clock.Now().Add(5 * time.Minute))
	for i, p := range pages {
		if !p.in {
			t.Fatalf("page %d not admitted 5 minutes after the pause", i)
		}
	}
}

// TestSlotHeldThroughPause: a place holding an admission slot that falls
// due during a pause is not admitted while the room is paused, keeps its
// token through the pause, and is admitted after it.
func TestSlotHeldThroughPause(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue", Tau: Duration(time.Millisecond), FixedSpeed: true, Rate: 1, Burst: 1}}, nil)
	first, second := e.newTab(), e.newTab()
	t1, t2 := first.token(), second.token()
	if t2.NextAttempt < t1.NextAttempt {
		// The second must be found when it asks: one found earlier and
		// presenting late is owed the slot it would have had then.
		first, second, t1, t2 = second, first, t2, t1
	}
	e.clock.Set(time.UnixMilli(t2.NextAttempt))
	if status, _ := first.admit(t1); status != 200 {
		t.Fatalf("first visitor: %d", status)
	}
	status, tk := second.admit(t2)
	if status != 429 || tk.Outcome != "busy" {
		t.Fatalf("second visitor with the bucket empty: %d %+v", status, tk)
	}
	e.setState("paused")
	end := e.clock.Now().Add(20 * time.Minute)
	for e.clock.Now().Before(end) {
		e.clock.Set(time.UnixMilli(tk.NextAttempt))
		status, next := second.admit(tk)
		if status != 429 || next.Token == "" {
			t.Fatalf("slot holder %v into the pause: %d %+v, want 429 and a token", e.clock.Now().Sub(end.Add(-20*time.Minute)), status, next)
		}
		tk = next
	}
	e.setState("queue")
	for range 100 {
		e.clock.Set(time.UnixMilli(tk.NextAttempt))
		status, next := second.admit(tk)
		if status == 200 {
			return
		}
		if status != 429 {
			t.Fatalf("after the pause: %d %+v", status, next)
		}
		tk = next
	}
	t.Fatal("never admitted after the pause")
}

// TestSaleStartBeyondTheGridRefused: a sale start further back than the
// checkpoint grid can count (time.Duration reaches 292 years) is refused
// by the admin API instead of hanging every token request.
func TestSaleStartBeyondTheGridRefused(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue"}}, nil)
	scheduled, start := "scheduled", "1700-01-01T00:00:00Z"
	if err := e.gw.Room().Apply(room.RoomChange{State: &scheduled, SaleStart: &start}, e.clock.Now()); err == nil {
		t.Fatal("a sale start in 1700 accepted")
	}
	if _, err := NewShared(Config{Config: room.Config{Room: "x", State: "scheduled", SaleStart: "1700-01-01T00:00:00Z", Keys: testKeys}}, e.clock.Now); err == nil {
		t.Fatal("a configured sale start in 1700 accepted")
	}
	e.newTab().token()
}

// TestSleepingTabGainsNothing: two tabs of one login (one place, one draw,
// one grid) take their tokens together under the adaptive clock; one
// follows every checkpoint, the other sleeps and presents its oldest
// version once a minute, the last time in the final seconds of that
// version's life. The honest tab always takes the place in: the sleeper
// only ever gets the pass it was given.
func TestSleepingTabGainsNothing(t *testing.T) {
	secret := []byte("site-login-secret-0123456789abcdef")
	e := newEnv(t, Config{
		Config: room.Config{Room: "sale", State: "queue", Rate: 0.001, Burst: 100},
		Identity: &Identity{
			Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(secret), Required: true,
		},
	}, nil)
	room := e.gw.Room().Room
	for trial := range 6 {
		login, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: fmt.Sprint("user-", trial), ExpiresAt: jwt.NewNumericDate(e.clock.Now().Add(24 * time.Hour))}).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		honest, sleeper := e.newTab("Authorization", "Bearer "+login), e.newTab("Authorization", "Bearer "+login)
		htk, stk := honest.token(), sleeper.token()
		oldest := stk
		var honestIn, sleeperIn time.Time
		start := e.clock.Now()
		for step := 1; honestIn.IsZero() || sleeperIn.IsZero(); step++ {
			if step > 4*3600 {
				t.Fatal("neither admitted in four hours")
			}
			e.clock.Set(start.Add(time.Duration(step) * time.Second))
			room.Tick(e.clock.Now())
			now := e.clock.Now()
			if honestIn.IsZero() && !now.Before(time.UnixMilli(htk.NextAttempt)) {
				status, back := honest.admit(htk)
				switch status {
				case 200:
					honestIn = now
				case 429:
					htk = back
				default:
					t.Fatalf("trial %d: honest tab at %v: %d", trial, now.Sub(start), status)
				}
			}
			if !sleeperIn.IsZero() {
				continue
			}
			// The oldest version while it lives (its last second included),
			// then the newest, once a minute.
			exp := time.Unix(e.claims(stk.Token).ExpiresAt, 0).Add(admission.DefaultPolicy.Leeway)
			if oldest.Token != "" && now.Equal(time.Unix(e.claims(oldest.Token).ExpiresAt, 0).Add(admission.DefaultPolicy.Leeway-time.Second)) {
				stk = oldest
			} else if step%60 != 0 || now.After(exp) {
				continue
			}
			status, back := sleeper.admit(stk)
			switch status {
			case 200: // the place's pass, which its honest tab took in
				if honestIn.IsZero() {
					t.Fatalf("trial %d: the sleeper took the place in at %v, before its honest tab", trial, now.Sub(start))
				}
				sleeperIn = now
			case 429:
				if stk == oldest {
					oldest = ticketJSON{}
				}
				stk = back
			default:
				t.Fatalf("trial %d: sleeper at %v: %d (it must never take the place in)", trial, now.Sub(start), status)
			}
		}
		t.Logf("trial %d: honest %v, sleeper %v", trial, honestIn.Sub(start), sleeperIn.Sub(start))
	}
}
