package proxy

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestAdmissionHook(t *testing.T) {
	var mode atomic.Value
	var calls atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get(PassHeader) == "" {
			t.Error("hook called without the pass")
		}
		switch mode.Load().(string) {
		case "ok":
			fmt.Fprint(w, `{"session":"s-42"}`)
		case "full":
			w.WriteHeader(http.StatusConflict)
		case "down":
			w.WriteHeader(http.StatusInternalServerError)
		case "slow":
			time.Sleep(300 * time.Millisecond)
		}
	}))
	defer hook.Close()

	for _, tt := range []struct {
		mode, policy string
		admitted     bool
		session      string
	}{
		{"ok", "closed", true, "s-42"},
		{"full", "closed", false, ""},
		{"full", "open", false, ""}, // 409 is an answer, not a failure: never admits
		{"down", "closed", false, ""},
		{"down", "open", true, ""},
		{"slow", "closed", false, ""},
	} {
		t.Run(tt.mode+"/"+tt.policy, func(t *testing.T) {
			mode.Store(tt.mode)
			e := newEnv(t, Config{Room: "sale", State: "open", Hook: &Hook{URL: hook.URL, OnFailure: tt.policy, Timeout: Duration(100 * time.Millisecond)}}, nil)
			tk := e.ticket()
			resp, body := e.do("POST", "/_fairgate/admit", `{"nonce":"`+solveFor(t, tk)+`"}`)
			if tt.admitted != (resp.StatusCode == 200) {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if !tt.admitted {
				var back ticketJSON
				_ = json.Unmarshal(body, &back)
				if resp.StatusCode != 429 || back.Token == "" {
					t.Fatalf("turned away: %d %s", resp.StatusCode, body)
				}
				// The same token may try again: it was released, not spent.
				mode.Store("ok")
				e.clock.Set(time.UnixMilli(back.NextAttempt))
				resp, body = e.do("POST", "/_fairgate/admit", `{"nonce":"`+solveFor(t, back)+`"}`)
				if resp.StatusCode != 200 {
					t.Fatalf("retry after the hook recovered: %d %s", resp.StatusCode, body)
				}
				return
			}
			var a admitResponse
			_ = json.Unmarshal(body, &a)
			claims, err := e.gw.gate.VerifyPass("sale", a.Pass, e.clock.Now())
			if err != nil || claims.Ses != tt.session {
				t.Fatalf("pass %+v %v, want session %q", claims, err, tt.session)
			}
		})
	}
}

// TestCache: one upstream read per key per TTL however many ask, stale
// while revalidating, ETag and 304, and upstream 429s kept for Retry-After.
func TestCache(t *testing.T) {
	var reads atomic.Int32
	var status atomic.Int32
	status.Store(200)
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		if r.URL.Path == "/api/hot" && status.Load() == 429 {
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(429)
			fmt.Fprint(w, `{"error":"slow down"}`)
			return
		}
		w.Header().Set("Cache-Control", "public, s-maxage=3")
		fmt.Fprintf(w, "map of %s #%d", r.URL.Path, reads.Load())
	})
	e := newEnv(t, Config{Room: "sale", Bypass: Bypass{Paths: []string{"/api/"}},
		Cache: &Cache{Paths: []string{"/api/sections/*"}, StaleWhileRevalidate: Duration(10 * time.Second)}}, up)

	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := e.do("GET", "/api/sections/A", "")
			if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "map of /api/sections/A") {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
		}()
	}
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Fatalf("50 concurrent requests made %d upstream reads", n)
	}
	resp, _ := e.do("GET", "/api/sections/A", "")
	etag := resp.Header.Get("ETag")
	if !strings.HasPrefix(resp.Header.Get("Cache-Status"), "fairgate; hit") || etag == "" {
		t.Fatalf("second read: %v", resp.Header)
	}
	if resp, _ := e.do("GET", "/api/sections/A", "", "If-None-Match", etag); resp.StatusCode != 304 {
		t.Fatalf("If-None-Match: %d", resp.StatusCode)
	}
	// Expired: served stale, one refresh in the background.
	e.clock.Add(4 * time.Second)
	resp, body := e.do("GET", "/api/sections/A", "")
	if resp.StatusCode != 200 || !strings.Contains(string(body), "#1") || !strings.Contains(resp.Header.Get("Cache-Status"), "ttl=-") {
		t.Fatalf("stale read: %s %v", body, resp.Header)
	}
	deadline := time.Now().Add(5 * time.Second)
	for reads.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // waits for the real background refresh, not for time to pass
	}
	if n := reads.Load(); n != 2 {
		t.Fatalf("refresh reads: %d", n)
	}
	// Upstream 429 with Retry-After on a path that is not cached: never
	// kept, every request asks the upstream (issue 10, finding 2).
	status.Store(429)
	before := reads.Load()
	for range 3 {
		resp, body = e.do("GET", "/api/hot", "")
		if resp.StatusCode != 429 || resp.Header.Get("Cache-Status") != "" || !strings.Contains(string(body), "slow down") {
			t.Fatalf("uncached 429: %d %s %v", resp.StatusCode, body, resp.Header)
		}
	}
	if n := reads.Load() - before; n != 3 {
		t.Fatalf("3 requests for an uncached path reached the upstream %d times", n)
	}
	served := testutil.ToFloat64(e.gw.metrics.cacheRequests.WithLabelValues("coalesced")) +
		testutil.ToFloat64(e.gw.metrics.cacheRequests.WithLabelValues("hit"))
	if served < 49 {
		t.Fatalf("only %v requests counted as served from the cache", served)
	}
}

func TestIdentity(t *testing.T) {
	secret := []byte("site-login-secret-0123456789abcdef")
	login := func(sub string, exp time.Time) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: sub, ExpiresAt: jwt.NewNumericDate(exp)}).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	e := newEnv(t, Config{Room: "sale", State: "open", Identity: &Identity{
		Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(secret), Required: true,
	}}, nil)
	exp := e.clock.Now().Add(time.Hour)
	if resp, body := e.do("POST", "/_fairgate/token", ""); resp.StatusCode != 401 {
		t.Fatalf("no login: %d %s", resp.StatusCode, body)
	}
	resp, body := e.do("POST", "/_fairgate/token", "", "Authorization", "Bearer "+login("alice", exp))
	if resp.StatusCode != 200 {
		t.Fatalf("alice: %d %s", resp.StatusCode, body)
	}
	var tk ticketJSON
	_ = json.Unmarshal(body, &tk)
	nonce := solveFor(t, tk)
	resp, body = e.do("POST", "/_fairgate/admit", `{"nonce":"`+nonce+`"}`, "Authorization", "Bearer "+login("mallory", exp))
	if resp.StatusCode != 403 || !strings.Contains(string(body), "identity") {
		t.Fatalf("alice's token used by mallory: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("POST", "/_fairgate/admit", `{"nonce":"`+nonce+`"}`, "Authorization", "Bearer "+login("alice", exp))
	if resp.StatusCode != 200 {
		t.Fatalf("alice admitted: %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.do("POST", "/_fairgate/token", "", "Authorization", "Bearer "+login("alice", e.clock.Now().Add(-time.Hour))); resp.StatusCode != 401 {
		t.Fatalf("expired login: %d", resp.StatusCode)
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

func TestClientIP(t *testing.T) {
	trusted := []string{"10.0.0.0/8"}
	s, _ := Config{TrustedProxies: trusted}.settle()
	for _, tt := range []struct{ remote, xff, want string }{
		{"192.0.2.1:5", "", "192.0.2.1"},
		{"192.0.2.1:5", "203.0.113.9", "192.0.2.1"}, // untrusted peer: its header is ignored
		{"10.1.1.1:5", "203.0.113.9", "203.0.113.9"},
		{"10.1.1.1:5", "203.0.113.9, 10.2.2.2", "203.0.113.9"},
		{"10.1.1.1:5", "spoofed, 203.0.113.9", "203.0.113.9"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tt.remote
		if tt.xff != "" {
			r.Header.Set("X-Forwarded-For", tt.xff)
		}
		got, ok := clientIP(r, s.trusted)
		if !ok || got.String() != tt.want {
			t.Errorf("%s / %q: %v, want %s", tt.remote, tt.xff, got, tt.want)
		}
	}
}

func TestAdminAPI(t *testing.T) {
	e := newEnv(t, Config{Room: "sale"}, nil)
	rooms := NewRooms()
	rooms.Put(e.gw.Room())
	admin := httptest.NewServer(AdminHandler(rooms, "s3cret", e.clock.Now))
	defer admin.Close()
	call := func(method, path, body, token string) (int, string) {
		req, _ := http.NewRequest(method, admin.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, "")
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		return resp.StatusCode, string(buf[:n])
	}
	if code, _ := call("GET", "/rooms", "", ""); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := call("GET", "/rooms", "", "wrong"); code != 401 {
		t.Fatalf("wrong token: %d", code)
	}
	code, body := call("GET", "/rooms", "", "s3cret")
	if code != 200 || !strings.Contains(body, `"room":"sale"`) || !strings.Contains(body, `"clock_speed"`) {
		t.Fatalf("list: %d %s", code, body)
	}
	code, body = call("POST", "/rooms/sale", `{"state":"paused","rate":3,"difficulty":10}`, "s3cret")
	if code != 200 || !strings.Contains(body, `"state":"paused"`) || !strings.Contains(body, `"rate":3`) || !strings.Contains(body, `"difficulty":10`) {
		t.Fatalf("change: %d %s", code, body)
	}
	// A live change is what the GET shows, burst included (finding 5 of issue 14).
	if code, body := call("POST", "/rooms/sale", `{"burst":7}`, "s3cret"); code != 200 || !strings.Contains(body, `"burst":7`) {
		t.Fatalf("burst change: %d %s", code, body)
	}
	if code, body := call("GET", "/rooms/sale", "", "s3cret"); code != 200 || !strings.Contains(body, `"burst":7`) || !strings.Contains(body, `"rate":3`) {
		t.Fatalf("GET after the change: %d %s", code, body)
	}
	if code, body := call("POST", "/rooms/sale", `{"bursts":7}`, "s3cret"); code != 400 || !strings.Contains(body, `unknown field`) {
		t.Fatalf("unknown field: %d %s", code, body)
	}
	for _, bad := range []string{`{"state":"busy"}`, `{"rate":-1}`, `{"difficulty":99}`, `{"state":"closed","reason":"bored"}`, `{"sale_start":"soon"}`, `{`} {
		if code, body := call("POST", "/rooms/sale", bad, "s3cret"); code != 400 {
			t.Errorf("%s: %d %s", bad, code, body)
		}
	}
	if got := e.gw.Room().Status(e.clock.Now()); got.State != "paused" || got.Difficulty != 10 {
		t.Fatalf("a bad change changed something: %+v", got)
	}
	if code, _ := call("GET", "/rooms/nope", "", "s3cret"); code != 404 {
		t.Fatalf("unknown room: %d", code)
	}
	if tk := e.ticket(); tk.Difficulty != 10 {
		t.Fatalf("new tokens use difficulty %d", tk.Difficulty)
	}
}

func TestMetricsRegistered(t *testing.T) {
	e := newEnv(t, Config{Room: "sale"}, nil)
	e.ticket()
	n, err := testutil.GatherAndCount(e.reg, "fairgate_tokens_issued_total", "fairgate_clock_speed", "fairgate_bucket_level", "fairgate_room_state")
	if err != nil || n < 8 {
		t.Fatalf("metrics: %d series, %v", n, err)
	}
	// A reload registers the same room again without error and keeps counting.
	gw2, err := New(Config{Room: "sale", Keys: testKeys}, e.gw.Room(), Options{Now: e.clock.Now, Registerer: e.reg})
	if err != nil {
		t.Fatalf("second gateway for the room: %v", err)
	}
	defer gw2.Close()
	if v := testutil.ToFloat64(gw2.metrics.issued); v != 1 {
		t.Fatalf("issued after reload: %v", v)
	}
}

// TestOptionalIdentity: with identity configured but not required, an
// anonymous visitor's pass works without a login, a logged-in visitor's
// pass only with that login.
func TestOptionalIdentity(t *testing.T) {
	secret := []byte("site-login-secret-0123456789abcdef")
	e := newEnv(t, Config{Room: "sale", State: "open", Identity: &Identity{
		Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(secret),
	}}, nil)
	e.admitted()
	if resp, body := e.do("GET", "/shop", ""); resp.StatusCode != 200 || string(body) != "origin:/shop" {
		t.Fatalf("anonymous pass: %d %s", resp.StatusCode, body)
	}
	login, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: "bob", ExpiresAt: jwt.NewNumericDate(e.clock.Now().Add(time.Hour))}).SignedString(secret)
	// Closing the room shows whether the pass is what let a request through.
	closed := "closed"
	_ = e.gw.Room().Apply(RoomChange{State: &closed}, e.clock.Now())
	if resp, _ := e.do("GET", "/shop", "", "Authorization", "Bearer "+login, "Accept", "application/json"); resp.StatusCode != 503 {
		t.Fatalf("an anonymous pass used with bob's login: %d", resp.StatusCode)
	}
}

// TestCacheKeepsOneEncoding: the cache asks the upstream for the identity
// encoding and does not keep answers that vary by other headers.
func TestCacheKeepsOneEncoding(t *testing.T) {
	var reads atomic.Int32
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		if r.Header.Get("Accept-Encoding") != "" {
			t.Errorf("the cache forwarded Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
		}
		if r.URL.Path == "/api/sections/lang" {
			w.Header().Set("Vary", "Accept-Language")
		}
		w.Header().Set("Cache-Control", "public, s-maxage=5")
		fmt.Fprint(w, "map")
	})
	e := newEnv(t, Config{Room: "sale", Bypass: Bypass{Paths: []string{"/api/"}}, Cache: &Cache{Paths: []string{"/api/sections/*"}}}, up)
	for range 3 {
		e.do("GET", "/api/sections/A", "", "Accept-Encoding", "gzip")
		e.do("GET", "/api/sections/lang", "")
	}
	if n := reads.Load(); n != 4 { // A once; lang every time
		t.Fatalf("%d upstream reads, want 4", n)
	}
}
