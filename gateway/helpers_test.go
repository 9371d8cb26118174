package gateway

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/internal/testhttp"
	"github.com/fairgate/fairgate/room"
	"github.com/golang-jwt/jwt/v5"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is the injected clock of the tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// newFakeClock starts at a fixed instant far from today's date: nothing in
// the tests may depend on the calendar (cookies are judged by clockJar).
func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2031, 3, 9, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

func (c *fakeClock) Add(d time.Duration) { c.Set(c.Now().Add(d)) }

var testKeys = tokens.KeysConfig{
	Signing: "k1",
	Keys:    map[string]string{"k1": "c2VjcmV0LWtleS1mb3ItdGVzdHMtb25seS0wMTIzNDU2Nzg5"},
	Lottery: "bG90dGVyeS1rZXktZm9yLXRlc3RzLW9ubHktMDEyMzQ1Njc4OQ==",
}

func intp(i int) *int { return &i }

// origin records what reached the protected site.
type origin struct {
	mu       sync.Mutex
	requests []*http.Request
}

func (o *origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	o.requests = append(o.requests, r.Clone(context.Background()))
	o.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, "origin:"+r.URL.Path)
}

func (o *origin) last() *http.Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.requests) == 0 {
		return nil
	}
	return o.requests[len(o.requests)-1]
}

func (o *origin) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.requests)
}

type env struct {
	t      *testing.T
	clock  *fakeClock
	gw     *Gateway
	origin *origin
	srv    *httptest.Server
	client *http.Client
	reg    *prometheus.Registry
}

// newEnv runs a gateway in front of a recording origin on a real listener.
func newEnv(t *testing.T, cfg Config, next http.Handler) *env {
	t.Helper()
	clock := newFakeClock()
	if cfg.Keys.Signing == "" {
		cfg.Keys = testKeys
	}
	if cfg.Difficulty == nil {
		cfg.Difficulty = intp(4)
	}
	shared, err := NewShared(cfg, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	gw, err := New(cfg, shared, Options{Now: clock.Now, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	o := &origin{}
	if next == nil {
		next = o
	}
	srv := httptest.NewServer(gw.Wrap(next))
	t.Cleanup(func() { srv.Close(); gw.Close() })
	jar := newClockJar(clock.Now)
	return &env{t: t, clock: clock, gw: gw, origin: o, srv: srv, reg: reg,
		client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request to the gateway with the env's client (its cookie
// jar), header given as name, value pairs.
func (e *env) do(method, path, body string, header ...string) (*http.Response, []byte) {
	e.t.Helper()
	return testhttp.Do(e.t, e.client, testhttp.NewRequest(e.t, method, e.srv.URL+path, body), header...)
}

func (e *env) ticket(header ...string) ticketJSON {
	e.t.Helper()
	resp, body := e.do("POST", "/_fairgate/token", "", header...)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("token: %d %s", resp.StatusCode, body)
	}
	var tk ticketJSON
	if err := json.Unmarshal(body, &tk); err != nil {
		e.t.Fatal(err)
	}
	return tk
}

func solveFor(t *testing.T, tk ticketJSON) string {
	t.Helper()
	n, err := tokens.Solve(context.Background(), tk.Challenge, tk.Difficulty)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatUint(n, 10)
}

// hookServer is an admission hook on a real listener that turns a visitor
// away (409, the seat service full) when refuse says so and opens a
// session otherwise; it closes with the test.
func hookServer(t *testing.T, refuse func(*http.Request) bool) string {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse(r) {
			w.WriteHeader(http.StatusConflict)
			return
		}
		fmt.Fprint(w, `{"session":"s"}`)
	}))
	t.Cleanup(hook.Close)
	return hook.URL
}

// signLogin is a site login for sub, an HS256 JWT signed with secret that
// expires at exp (the value of an Authorization header, without "Bearer ").
func signLogin(t *testing.T, secret []byte, sub string, exp time.Time) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: sub, ExpiresAt: jwt.NewNumericDate(exp)}).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waiter is a visitor in a test that steps the clock itself: its latest
// waiting answer, the nonce solved for its token, and when it arrived and
// was admitted (zero until then).
type waiter struct {
	tk                ticketJSON
	nonce             string
	arrived, admitted time.Time
}

// arrive is a new visitor (its own cookie jar) taking a token at now.
func (e *env) arrive(now time.Time) *waiter {
	e.t.Helper()
	e.client.Jar = newClockJar(e.clock.Now)
	tk := e.ticket()
	return &waiter{tk: tk, nonce: solveFor(e.t, tk), arrived: now}
}

// step posts w's admit once if w still waits and its next attempt is
// due at now: an admission records now, a 429 is read over w's answer,
// anything else fails the test.
func (e *env) step(w *waiter, now time.Time) {
	e.t.Helper()
	if !w.admitted.IsZero() || now.Before(time.UnixMilli(w.tk.NextAttempt)) {
		return
	}
	body, _ := json.Marshal(map[string]string{"token": w.tk.Token, "nonce": w.nonce})
	resp, b := e.do("POST", "/_fairgate/admit", string(body))
	switch resp.StatusCode {
	case http.StatusOK:
		w.admitted = now
	case http.StatusTooManyRequests:
		if err := json.Unmarshal(b, &w.tk); err != nil {
			e.t.Fatal(err)
		}
	default:
		e.t.Fatalf("admit: %d %s", resp.StatusCode, b)
	}
}

// admitted waits and attempts as an honest page would, until admitted,
// sending header with every request.
func (e *env) admitted(header ...string) admitResponse {
	e.t.Helper()
	tk := e.ticket(header...)
	for range 2000 {
		e.clock.Set(time.UnixMilli(tk.NextAttempt))
		resp, body := e.do("POST", "/_fairgate/admit", `{"nonce":"`+solveFor(e.t, tk)+`","return":"/shop?x=1"}`, header...)
		switch resp.StatusCode {
		case http.StatusOK:
			var a admitResponse
			if err := json.Unmarshal(body, &a); err != nil {
				e.t.Fatal(err)
			}
			return a
		case http.StatusTooManyRequests:
			var next ticketJSON
			if err := json.Unmarshal(body, &next); err != nil {
				e.t.Fatal(err)
			}
			if next.Challenge == "" { // the cached busy answer
				e.clock.Add(time.Second)
				continue
			}
			tk = next
		default:
			e.t.Fatalf("admit: %d %s", resp.StatusCode, body)
		}
	}
	e.t.Fatal("never admitted")
	return admitResponse{}
}

func (e *env) setState(state string) {
	e.t.Helper()
	if err := e.gw.Room().Apply(room.RoomChange{State: &state}, e.clock.Now()); err != nil {
		e.t.Fatal(err)
	}
}

// varies: the answer says it depends on Accept-Encoding.
func varies(resp *http.Response) bool {
	return strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Accept-Encoding")
}

// decode undoes a Content-Encoding the gateway sends: gzip, zstd or none.
func decode(t *testing.T, coding string, b []byte) []byte {
	t.Helper()
	var out []byte
	var err error
	switch coding {
	case "":
		return b
	case "gzip":
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(b)); err == nil {
			out, err = io.ReadAll(zr)
		}
	case "zstd":
		var d *zstd.Decoder
		if d, err = zstd.NewReader(nil); err == nil {
			out, err = d.DecodeAll(b, nil)
			d.Close()
		}
	default:
		t.Fatalf("decode: unknown coding %q", coding)
	}
	if err != nil {
		t.Fatalf("decoding %s: %v", coding, err)
	}
	return out
}
