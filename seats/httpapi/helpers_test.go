package httpapi

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/internal/testhttp"
	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/boltstore"
	"github.com/fairgate/fairgate/seats/storetest"
)

var testPaymentKey = []byte("payment-provider-key-0123456789ab")

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type env struct {
	t     testing.TB
	srv   *httptest.Server
	clk   *clock
	gate  *admission.Gate
	room  *admission.Room
	event string
}

func newEnv(t testing.TB) *env { return newEnvWith(t, nil) }

// newEnvWith serves a store passed through wrap (if not nil).
func newEnvWith(t testing.TB, wrap func(seats.Store) seats.Store) *env {
	t.Helper()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	var served seats.Store = store
	if wrap != nil {
		served = wrap(store)
	}
	return newEnvOn(t, served, storetest.Event("ev"))
}

// newEnvOn serves store, with ev imported through the API and the event
// sessions open for.
func newEnvOn(t testing.TB, store seats.Store, ev seats.Event) *env {
	t.Helper()
	ring, err := tokens.NewKeyRing("k", map[string][]byte{"k": []byte("0123456789abcdef0123456789abcdef")}, []byte("lottery-key-0123456789abcdef0123"))
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: storetest.T0}
	api := New(seats.NewService(store, clk.Now), Config{Codec: tokens.NewCodec(ring, time.Second), Room: "sale", DefaultEvent: ev.ID, AdminToken: "admin", PaymentKey: testPaymentKey})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	room, _ := admission.NewRoom(admission.RoomConfig{Name: "sale", State: admission.StateOpen, Rate: 1e6, Burst: 1e6, Tau: time.Second}, clk.Now())
	e := &env{t: t, srv: srv, clk: clk, gate: admission.NewGate(ring, admission.Policy{PassTTL: time.Hour}, queue.NewMemoryLedger(1000, clk.Now)), room: room, event: ev.ID}
	body, _ := json.Marshal(ev)
	if code, b := e.do("POST", "/api/events", string(body), "", "Authorization", "Bearer admin"); code != 201 {
		t.Fatalf("create event: %d %s", code, b)
	}
	return e
}

// pass admits a visitor through a real gate and returns their pass.
func (e *env) pass(user string) string {
	e.t.Helper()
	tk, err := e.gate.Issue(e.room, admission.Visitor{Subject: user}, e.clk.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	d := e.gate.Decide(context.Background(), e.room, admission.Attempt{Token: tk.Token, Nonce: "0", Visitor: admission.Visitor{Subject: user}, Now: e.clk.Now()})
	if d.Outcome != admission.OutcomeAdmit {
		e.t.Fatalf("admitting %s: %v", user, d.Outcome)
	}
	return d.Pass
}

func (e *env) do(method, path, body, pass string, header ...string) (int, string) {
	e.t.Helper()
	req := testhttp.NewRequest(e.t, method, e.srv.URL+path, body)
	if pass != "" {
		req.Header.Set(PassHeader, pass)
	}
	// Confirms come signed, as the payment provider's callback would be
	// (TestPaymentConfirmation sends them unsigned and forged).
	if session, ok := strings.CutSuffix(strings.TrimPrefix(path, "/api/sessions/"), "/confirm"); ok {
		var v struct {
			PaymentRef string `json:"payment_ref"`
		}
		_ = json.Unmarshal([]byte(body), &v)
		req.Header.Set(PaymentSignatureHeader, SignPayment(testPaymentKey, session, v.PaymentRef))
	}
	resp, b := testhttp.Do(e.t, nil, req, header...)
	return resp.StatusCode, string(b)
}

func (e *env) open(pass string) string {
	e.t.Helper()
	code, body := e.do("POST", "/api/sessions", "", pass)
	if code != 201 {
		e.t.Fatalf("open session: %d %s", code, body)
	}
	var v struct{ Session string }
	_ = json.Unmarshal([]byte(body), &v)
	return v.Session
}

// visitor is user admitted (their pass) with a session opened (its id).
func (e *env) visitor(user string) (pass, session string) {
	e.t.Helper()
	pass = e.pass(user)
	return pass, e.open(pass)
}
