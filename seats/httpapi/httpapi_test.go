package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/storetest"
)

func TestSessionFlow(t *testing.T) {
	e := newEnv(t)
	alice, sa := e.visitor("alice")
	bob, sb := e.visitor("bob")
	tests := []struct {
		name, method, path, body, pass string
		status                         int
		contains                       string
	}{
		{"no pass", "POST", "/api/sessions", "", "", 401, "no_pass"},
		{"forged pass", "POST", "/api/sessions", "", alice[:len(alice)-2] + "AA", 401, "bad_pass"},
		{"second live session", "POST", "/api/sessions", "", e.pass("alice"), 409, `"session":"` + sa},
		{"same token again", "POST", "/api/sessions", "", alice, 409, "token_used"},
		{"pass for another event", "POST", "/api/sessions", `{"event":"nope"}`, e.pass("carol"), 403, "wrong_event"},
		{"hold", "POST", "/api/sessions/" + sa + "/holds", `{"seats":["A-1-1-1","A-1-1-2"]}`, alice, 200, `"A-1-1-2"`},
		{"taken", "POST", "/api/sessions/" + sb + "/holds", `{"seats":["A-1-1-2","A-1-1-3"]}`, bob, 409, `"seats":["A-1-1-2"]`},
		{"another's session", "POST", "/api/sessions/" + sa + "/holds", `{"seats":["A-1-1-5"]}`, bob, 403, "forbidden"},
		{"over the limit", "POST", "/api/sessions/" + sa + "/holds", `{"seats":["A-1-1-5","A-1-1-6","A-1-1-7"]}`, alice, 422, "limit"},
		{"too many in one hold", "POST", "/api/sessions/" + sa + "/holds", `{"seats":[` + strings.Repeat(`"x",`, 25) + `"y"]}`, alice, 400, "invalid"},
		{"unknown seat", "POST", "/api/sessions/" + sa + "/holds", `{"seats":["Z-1-1-1"]}`, alice, 404, "unknown_seat"},
		{"malformed", "POST", "/api/sessions/" + sa + "/holds", `{"seats":`, alice, 400, "malformed"},
		{"unknown field", "POST", "/api/sessions/" + sa + "/holds", `{"sets":["A-1-1-9"]}`, alice, 400, "malformed"},
		{"oversized", "POST", "/api/sessions/" + sa + "/holds", `{"seats":["` + strings.Repeat("a", 70000) + `"]}`, alice, 413, "too_large"},
		{"both forms", "POST", "/api/sessions/" + sa + "/holds", `{"seats":["A-1-1-9"],"best":{"count":1}}`, alice, 400, "invalid"},
		{"unknown session", "GET", "/api/sessions/nope", "", alice, 404, "not_found"},
		{"best available", "POST", "/api/sessions/" + sb + "/holds", `{"best":{"count":2,"sections":["AB"]}}`, bob, 200, `"AB-1-1-1"`},
		{"release", "DELETE", "/api/sessions/" + sa + "/holds/A-1-1-2", "", alice, 200, `"seats":["A-1-1-1"]`},
		{"release again", "DELETE", "/api/sessions/" + sa + "/holds/A-1-1-2", "", alice, 409, "state"},
		{"confirm before checkout", "POST", "/api/sessions/" + sa + "/confirm", `{"payment_ref":"p1"}`, alice, 409, "checkout first"},
		{"checkout", "POST", "/api/sessions/" + sa + "/checkout", "", alice, 200, `"state":"checkout"`},
		{"hold during checkout", "POST", "/api/sessions/" + sa + "/holds", `{"seats":["A-1-1-9"]}`, alice, 409, "state"},
		{"confirm without payment", "POST", "/api/sessions/" + sa + "/confirm", `{}`, alice, 400, "payment_ref"},
		{"confirm", "POST", "/api/sessions/" + sa + "/confirm", `{"payment_ref":"p1"}`, alice, 200, `"reservation":"R`},
		{"cancel", "DELETE", "/api/sessions/" + sb, "", bob, 200, `"state":"cancelled"`},
		{"unknown route", "GET", "/api/nope", "", "", 404, "not_found"},
	}
	for _, tt := range tests {
		code, body := e.do(tt.method, tt.path, tt.body, tt.pass)
		if code != tt.status || !strings.Contains(body, tt.contains) {
			t.Errorf("%s: %d %s; want %d containing %q", tt.name, code, body, tt.status, tt.contains)
		}
	}
	// The seat map shows A-1-1-1 reserved and the cancelled hold free again.
	code, body := e.do("GET", "/api/events/ev/sections/A", "", "")
	if code != 200 || !strings.Contains(body, `"id":"A-1-1-1","section":"A","block":"1","row":"1","number":1,"price":5000,"status":"reserved"`) {
		t.Fatalf("seat map: %d %.300s", code, body)
	}
	if strings.Contains(body, sa) {
		t.Fatal("the seat map names a session")
	}
}

func TestExpiredSession(t *testing.T) {
	e := newEnv(t)
	alice, s := e.visitor("alice")
	e.clk.Add(11 * time.Minute)
	if code, body := e.do("POST", "/api/sessions/"+s+"/holds", `{"seats":["A-1-1-1"]}`, alice); code != 410 {
		t.Fatalf("hold in an expired session: %d %s", code, body)
	}
}

func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	alice, s := e.visitor("alice")
	hold := `{"seats":["A-1-1-4"]}`
	code1, body1 := e.do("POST", "/api/sessions/"+s+"/holds", hold, alice, "Idempotency-Key", "k1")
	e.clk.Add(time.Second)
	code2, body2 := e.do("POST", "/api/sessions/"+s+"/holds", hold, alice, "Idempotency-Key", "k1")
	if code1 != 200 || code1 != code2 || body1 != body2 {
		t.Fatalf("retry differs: %d %s / %d %s", code1, body1, code2, body2)
	}
	if code, body := e.do("POST", "/api/sessions/"+s+"/holds", `{"seats":["A-1-1-5"]}`, alice, "Idempotency-Key", "k1"); code != 422 {
		t.Fatalf("key reused for another body: %d %s", code, body)
	}
	// A retried confirm returns the same reservation, not a second one.
	e.do("POST", "/api/sessions/"+s+"/checkout", "", alice)
	c1, b1 := e.do("POST", "/api/sessions/"+s+"/confirm", `{"payment_ref":"p"}`, alice, "Idempotency-Key", "c1")
	c2, b2 := e.do("POST", "/api/sessions/"+s+"/confirm", `{"payment_ref":"p"}`, alice, "Idempotency-Key", "c1")
	if c1 != 200 || c2 != 200 || b1 != b2 {
		t.Fatalf("confirm retry: %d %s / %d %s", c1, b1, c2, b2)
	}
}

func TestCacheHeaders(t *testing.T) {
	e := newEnv(t)
	req, _ := http.NewRequest("GET", e.srv.URL+"/api/events/ev", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || etag == "" || !strings.Contains(resp.Header.Get("Cache-Control"), "s-maxage=") {
		t.Fatalf("event: %d %v", resp.StatusCode, resp.Header)
	}
	req.Header.Set("If-None-Match", etag)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 304 {
		t.Fatalf("If-None-Match: %d", resp.StatusCode)
	}
	if code, _ := e.do("POST", "/api/events", `{"id":"x"}`, "", "Authorization", "Bearer wrong"); code != 401 {
		t.Fatalf("event creation without the admin token: %d", code)
	}
	if code, body := e.do("POST", "/api/events", `{"id":"bad id!","sections":[]}`, "", "Authorization", "Bearer admin"); code != 400 {
		t.Fatalf("bad event: %d %s", code, body)
	}
	for _, p := range []string{"/api/events/nope", "/api/events/ev/sections/ZZ"} {
		if code, _ := e.do("GET", p, "", ""); code != 404 {
			t.Errorf("%s: %d", p, code)
		}
	}
}

// slowStore holds Confirm until released, and fails the first confirms
// it is told to.
type slowStore struct {
	seats.Store
	entered  chan struct{}
	release  chan struct{}
	done     chan error // the store's own outcome
	failures int
	mu       sync.Mutex
}

func (s *slowStore) Confirm(ctx context.Context, session, reservation, paymentRef string, now time.Time, key *seats.Idempotency) (seats.Session, error) {
	s.mu.Lock()
	if s.failures > 0 {
		s.failures--
		s.mu.Unlock()
		return seats.Session{}, errors.New("the store fell over")
	}
	s.mu.Unlock()
	if s.release != nil {
		s.entered <- struct{}{}
		<-s.release
	}
	if err := ctx.Err(); err != nil {
		s.done <- err
		return seats.Session{}, err
	}
	sess, err := s.Store.Confirm(ctx, session, reservation, paymentRef, now, key)
	if s.done != nil {
		s.done <- err
	}
	return sess, err
}

// TestConfirmAfterClientTimeout: a client gives up on a confirm; the write
// still completes (it does not inherit the client's cancellation) and the
// retry with the key learns the reservation id instead of a replayed 503.
func TestConfirmAfterClientTimeout(t *testing.T) {
	slow := &slowStore{entered: make(chan struct{}, 1), release: make(chan struct{}), done: make(chan error, 1)}
	e := newEnvWith(t, func(s seats.Store) seats.Store { slow.Store = s; return slow })
	alice, s := e.visitor("alice")
	if code, body := e.do("POST", "/api/sessions/"+s+"/holds", `{"seats":["A-1-1-1"]}`, alice); code != 200 {
		t.Fatalf("hold: %d %s", code, body)
	}
	if code, body := e.do("POST", "/api/sessions/"+s+"/checkout", "", alice); code != 200 {
		t.Fatalf("checkout: %d %s", code, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/api/sessions/"+s+"/confirm", strings.NewReader(`{"payment_ref":"p"}`))
	req.Header.Set(PassHeader, alice)
	req.Header.Set("Idempotency-Key", "confirm-1")
	req.Header.Set(PaymentSignatureHeader, SignPayment(testPaymentKey, s, "p"))
	gave := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		gave <- err
	}()
	<-slow.entered
	cancel() // the client gives up while the store is busy
	if err := <-gave; err == nil {
		t.Fatal("the cancelled client got an answer")
	}
	close(slow.release)
	if err := <-slow.done; err != nil {
		t.Fatalf("the confirm inherited the client's cancellation: %v", err)
	}
	code, body := e.do("POST", "/api/sessions/"+s+"/confirm", `{"payment_ref":"p"}`, alice, "Idempotency-Key", "confirm-1")
	if code != 200 || !strings.Contains(body, `"reservation":"R`) {
		t.Fatalf("retry after the client's timeout: %d %s", code, body)
	}
}

// TestFailureIsNotFinal: a 5xx is never kept as a key's answer; the retry
// runs the write.
func TestFailureIsNotFinal(t *testing.T) {
	slow := &slowStore{failures: 1}
	e := newEnvWith(t, func(s seats.Store) seats.Store { slow.Store = s; return slow })
	alice, s := e.visitor("alice")
	e.do("POST", "/api/sessions/"+s+"/holds", `{"seats":["A-1-1-1"]}`, alice)
	e.do("POST", "/api/sessions/"+s+"/checkout", "", alice)
	if code, body := e.do("POST", "/api/sessions/"+s+"/confirm", `{"payment_ref":"p"}`, alice, "Idempotency-Key", "c"); code != 503 {
		t.Fatalf("failing store: %d %s", code, body)
	}
	if code, body := e.do("POST", "/api/sessions/"+s+"/confirm", `{"payment_ref":"p"}`, alice, "Idempotency-Key", "c"); code != 200 || !strings.Contains(body, `"reservation":"R`) {
		t.Fatalf("retry after a 503: %d %s", code, body)
	}
}

// TestRefusalIsReplayed: a refusal is a final answer, replayed as it was.
func TestRefusalIsReplayed(t *testing.T) {
	e := newEnv(t)
	alice, sa := e.visitor("alice")
	bob, sb := e.visitor("bob")
	e.do("POST", "/api/sessions/"+sa+"/holds", `{"seats":["A-1-1-1"]}`, alice)
	c1, b1 := e.do("POST", "/api/sessions/"+sb+"/holds", `{"seats":["A-1-1-1"]}`, bob, "Idempotency-Key", "h")
	e.do("DELETE", "/api/sessions/"+sa+"/holds/A-1-1-1", "", alice)
	c2, b2 := e.do("POST", "/api/sessions/"+sb+"/holds", `{"seats":["A-1-1-1"]}`, bob, "Idempotency-Key", "h")
	if c1 != 409 || c2 != 409 || b1 != b2 {
		t.Fatalf("refusal replay: %d %s / %d %s", c1, b1, c2, b2)
	}
}

// TestCheckoutKeepsTheLaterDeadline: checking out early never shortens the
// hold (window 10 min, checkout 5 min).
func TestCheckoutKeepsTheLaterDeadline(t *testing.T) {
	e := newEnv(t)
	alice, s := e.visitor("alice")
	e.do("POST", "/api/sessions/"+s+"/holds", `{"seats":["A-1-1-1"]}`, alice)
	holdEnds := storetest.T0.Add(10 * time.Minute)
	e.clk.Add(time.Minute)
	code, body := e.do("POST", "/api/sessions/"+s+"/checkout", "", alice)
	var got struct {
		ExpiresAt     time.Time `json:"expires_at"`
		CheckoutUntil time.Time `json:"checkout_until"`
	}
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil {
		t.Fatalf("checkout: %d %s", code, body)
	}
	if !got.ExpiresAt.Equal(holdEnds) || !got.CheckoutUntil.Equal(holdEnds) {
		t.Fatalf("early checkout ends at %v / %v, the hold at %v", got.ExpiresAt, got.CheckoutUntil, holdEnds)
	}
	// A late checkout gets the full checkout window.
	bob, sb := e.visitor("bob")
	e.do("POST", "/api/sessions/"+sb+"/holds", `{"seats":["A-1-1-2"]}`, bob)
	e.clk.Add(8 * time.Minute)
	_, body = e.do("POST", "/api/sessions/"+sb+"/checkout", "", bob)
	if err := json.Unmarshal([]byte(body), &got); err != nil || !got.ExpiresAt.Equal(e.clk.Now().Add(5*time.Minute)) {
		t.Fatalf("late checkout: %s", body)
	}
}

// TestHoldBoundsAndExpiredSessions, through HTTP: a section named many
// times in a hold is one section, a hold names at most so many sections,
// an unknown seat is 404 unknown_seat, and an expired session lists no
// seats.
func TestHoldBoundsAndExpiredSessions(t *testing.T) {
	e := newEnv(t)
	alice, s := e.visitor("alice")
	many := `{"best":{"count":1,"sections":["X"` + strings.Repeat(`,"X"`, 5000) + `]}}`
	if code, body := e.do("POST", "/api/sessions/"+s+"/holds", many, alice); code != 404 {
		t.Fatalf("a section named 5000 times is one section (then unknown): %d %s", code, body)
	}
	var names []string
	for i := range 40 {
		names = append(names, fmt.Sprintf(`"S%d"`, i))
	}
	if code, body := e.do("POST", "/api/sessions/"+s+"/holds", `{"best":{"count":1,"sections":[`+strings.Join(names, ",")+`]}}`, alice); code != 400 || !strings.Contains(body, "at most") {
		t.Fatalf("40 sections: %d %s", code, body)
	}
	if code, body := e.do("POST", "/api/sessions/"+s+"/holds", `{"seats":["Z-9-9-9"]}`, alice); code != 404 || !strings.Contains(body, "unknown_seat") {
		t.Fatalf("unknown seat: %d %s", code, body)
	}
	e.do("POST", "/api/sessions/"+s+"/holds", `{"seats":["A-1-1-1"]}`, alice)
	e.clk.Add(11 * time.Minute)
	if code, body := e.do("GET", "/api/sessions/"+s, "", alice); code != 200 || !strings.Contains(body, `"state":"expired"`) || !strings.Contains(body, `"seats":[]`) {
		t.Fatalf("expired session lists its seats: %d %s", code, body)
	}
}

// TestPaymentConfirmation: a visitor holding a pass cannot confirm without
// the payment provider's signature over the session and the payment
// reference.
func TestPaymentConfirmation(t *testing.T) {
	e := newEnv(t)
	alice, s := e.visitor("alice")
	e.do("POST", "/api/sessions/"+s+"/holds", `{"seats":["A-1-1-1"]}`, alice)
	e.do("POST", "/api/sessions/"+s+"/checkout", "", alice)
	for _, tt := range []struct{ name, signature string }{
		{"unsigned", "-"},
		{"not hex", "zz"},
		{"signed with another key", SignPayment([]byte("guessed"), s, "p")},
		{"signed for another payment", SignPayment(testPaymentKey, s, "other")},
		{"signed for another session", SignPayment(testPaymentKey, "Sother", "p")},
	} {
		if code, body := e.do("POST", "/api/sessions/"+s+"/confirm", `{"payment_ref":"p"}`, alice, PaymentSignatureHeader, tt.signature); code != 403 || !strings.Contains(body, "payment_unverified") {
			t.Errorf("%s: %d %s", tt.name, code, body)
		}
	}
	if code, body := e.do("POST", "/api/sessions/"+s+"/confirm", `{"payment_ref":"p"}`, alice); code != 200 {
		t.Fatalf("signed confirm: %d %s", code, body)
	}
}

// TestCachedPassExpires: the pass cache never outlives the pass.
func TestCachedPassExpires(t *testing.T) {
	e := newEnv(t)
	alice, s := e.visitor("alice")
	if code, body := e.do("GET", "/api/sessions/"+s, "", alice); code != 200 {
		t.Fatalf("fresh pass: %d %s", code, body)
	}
	e.clk.Add(2 * time.Hour) // the pass lives an hour
	if code, body := e.do("GET", "/api/sessions/"+s, "", alice); code != 401 {
		t.Fatalf("expired cached pass: %d %s", code, body)
	}
}

// TestIdempotentRetries: the write's own transaction finds a key used, and
// only then is its record read and replayed, whatever has changed since
// and whatever the retry would now be refused for.
func TestIdempotentRetries(t *testing.T) {
	e := newEnv(t)
	alice, s := e.visitor("alice")
	hold := `{"seats":["A-1-1-4"]}`
	code, first := e.do("POST", "/api/sessions/"+s+"/holds", hold, alice, "Idempotency-Key", "h")
	if code != 200 {
		t.Fatalf("hold: %d %s", code, first)
	}
	if code, body := e.do("DELETE", "/api/sessions/"+s+"/holds/A-1-1-4", "", alice); code != 200 {
		t.Fatalf("release: %d %s", code, body)
	}
	code, refusal := e.do("POST", "/api/sessions/"+s+"/holds", `{"seats":["Z-9-9-9"]}`, alice, "Idempotency-Key", "r")
	if code != 404 {
		t.Fatalf("unknown seat: %d %s", code, refusal)
	}
	tests := []struct {
		name, key, body string
		advance         time.Duration
		wantCode        int
		wantBody        string
	}{
		{"success replayed after the seat was released", "h", hold, 0, 200, first},
		{"refusal replayed", "r", `{"seats":["Z-9-9-9"]}`, 0, 404, refusal},
		{"another body refused before its own validation", "h", `{"seats":[]}`, 0, 422, ""},
		{"another body refused before its own write", "h", `{"seats":["A-1-1-5"]}`, 0, 422, ""},
		{"success replayed after the session expired", "h", hold, 11 * time.Minute, 200, first},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.clk.Add(tt.advance)
			code, body := e.do("POST", "/api/sessions/"+s+"/holds", tt.body, alice, "Idempotency-Key", tt.key)
			if code != tt.wantCode || (tt.wantBody != "" && body != tt.wantBody) {
				t.Fatalf("got %d %s, want %d %s", code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
	// None of the retries held the seat again.
	if code, body := e.do("GET", "/api/sessions/"+s, "", alice); code != 200 || strings.Contains(body, "A-1-1-4") {
		t.Fatalf("session after the retries: %d %s", code, body)
	}
}

// countingStore counts the calls a request makes to its store: on
// DynamoDB each is a round trip.
type countingStore struct {
	seats.Store
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingStore) count(name string) {
	c.mu.Lock()
	c.calls[name]++
	c.mu.Unlock()
}

func (c *countingStore) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.calls
	c.calls = map[string]int{}
	return got
}

func (c *countingStore) Session(ctx context.Context, id string) (seats.Session, error) {
	c.count("Session")
	return c.Store.Session(ctx, id)
}

func (c *countingStore) Hold(ctx context.Context, h seats.Hold) (seats.Session, error) {
	c.count("Hold")
	return c.Store.Hold(ctx, h)
}

func (c *countingStore) Release(ctx context.Context, r seats.Release) (seats.Session, error) {
	c.count("Release")
	return c.Store.Release(ctx, r)
}

func (c *countingStore) Key(ctx context.Context, key string) (seats.KeyRecord, bool, error) {
	c.count("Key")
	return c.Store.Key(ctx, key)
}

func (c *countingStore) PutKey(ctx context.Context, key string, rec seats.KeyRecord) error {
	c.count("PutKey")
	return c.Store.PutKey(ctx, key, rec)
}

// TestStoreCallsPerWrite pins what a write costs its store: a first try
// with an Idempotency-Key reads no record, a hold or a release reads no
// session before its own transaction (which checks the owner), and a
// retry reads the record it replays.
func TestStoreCallsPerWrite(t *testing.T) {
	counter := &countingStore{calls: map[string]int{}}
	e := newEnvWith(t, func(s seats.Store) seats.Store { counter.Store = s; return counter })
	alice, s := e.visitor("alice")
	counter.take()
	tests := []struct {
		name, method, path, body, key string
		want                          map[string]int
	}{
		{"hold", "POST", "/holds", `{"seats":["A-1-1-1"]}`, "h1", map[string]int{"Hold": 1}},
		{"hold retried", "POST", "/holds", `{"seats":["A-1-1-1"]}`, "h1", map[string]int{"Hold": 1, "Key": 1}},
		{"release", "DELETE", "/holds/A-1-1-1", "", "r1", map[string]int{"Release": 1}},
		{"refused hold", "POST", "/holds", `{"seats":["A-9-9-9"]}`, "h2", map[string]int{"Hold": 1, "PutKey": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.do(tt.method, "/api/sessions/"+s+tt.path, tt.body, alice, "Idempotency-Key", tt.key)
			if got := counter.take(); !maps.Equal(got, tt.want) {
				t.Fatalf("store calls %v, want %v", got, tt.want)
			}
		})
	}
}

// TestInvalidLayouts: a layout the domain refuses is a 400 in the API's
// error shape, naming what it refuses, and nothing is stored.
func TestInvalidLayouts(t *testing.T) {
	e := newEnv(t)
	seat := `{"number":1}`
	row := func(id string) string { return `{"id":"` + id + `","seats":[` + seat + `]}` }
	section := func(id string, rows ...string) string {
		return `{"id":"` + id + `","name":"S","blocks":[{"id":"1","rows":[` + strings.Join(rows, ",") + `]}]}`
	}
	event := func(id, name string, sections ...string) string {
		return `{"id":"` + id + `","name":"` + name + `","sections":[` + strings.Join(sections, ",") + `]}`
	}
	tests := []struct {
		name, body, reason string
	}{
		{"empty section", event("e1", "E", section("A", row("1")), `{"id":"E","name":"E","blocks":[]}`), "section E has no blocks"},
		{"duplicate section", event("e2", "E", section("A", row("1")), section("A", row("1"))), "section A appears twice"},
		{"duplicate row", event("e3", "E", section("A", row("1"), row("1"))), "section A block 1 row 1 appears twice"},
		{"duplicate seat", event("e4", "E", `{"id":"A","blocks":[{"id":"1","rows":[{"id":"1","seats":[`+seat+`,`+seat+`]}]}]}`), "seat A-1-1-1 appears twice"},
		{"long name", event("e5", strings.Repeat("n", 1<<20), section("A", row("1"))), "event name is 1048576 bytes, at most 200"},
		{"too many seats a session", `{"id":"e6","name":"E","max_seats_per_session":21,"sections":[` + section("A", row("1")) + `]}`, "max_seats_per_session 21: 1 to 20"},
		{"negative price", event("e7", "E", `{"id":"A","name":"S","price":-100,"blocks":[{"id":"1","rows":[`+row("1")+`]}]}`), "section A price -100 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := e.do("POST", "/api/events", tt.body, "", "Authorization", "Bearer admin")
			var answer struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &answer); err != nil || code != 400 || answer.Error.Code != "invalid" || !strings.Contains(answer.Error.Message, tt.reason) {
				t.Fatalf("%d %.300s, want 400 invalid naming %q", code, body, tt.reason)
			}
			var ev struct{ ID string }
			_ = json.Unmarshal([]byte(tt.body), &ev)
			if code, _ := e.do("GET", "/api/events/"+ev.ID, "", ""); code != 404 {
				t.Fatalf("refused event %s answers %d", ev.ID, code)
			}
		})
	}
}

// TestDeclaredOversizeBodiesRefusedAtOnce: a body declared over the limit
// is answered 413 before any of it is read, on the writes and on event
// creation; one byte of it is sent.
func TestDeclaredOversizeBodiesRefusedAtOnce(t *testing.T) {
	e := newEnv(t)
	alice, sa := e.visitor("alice")
	for _, tc := range []struct{ path, header string }{
		{"/api/sessions/" + sa + "/holds", PassHeader + ": " + alice},
		{"/api/events", "Authorization: Bearer admin"},
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\n%s\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n{", tc.path, tc.header)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // bounds the test: the answer comes before any more body
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Errorf("%s: no answer: %v", tc.path, err)
		} else if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: %d, want 413", tc.path, resp.StatusCode)
		}
		conn.Close()
	}
}
