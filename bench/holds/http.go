package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/fairgate/fairgate/admission"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/internal/httpserver"
	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/httpapi"
)

// httpTarget is the seat API on loopback, served as `fairgate seats`
// serves it (internal/httpserver), with a gate that mints real passes, so
// every request pays for what a visitor's does: HTTP, the pass check, the
// idempotency record.
type httpTarget struct {
	srv   *http.Server
	base  string
	gate  *admission.Gate
	room  *admission.Room
	httpc *http.Client
	runs  int
	// passLen and sessionLen are a pass's and a session id's lengths,
	// for the ceiling's stand-ins.
	passLen, sessionLen int
}

func newHTTPTarget(svc *seats.Service) (*httpTarget, error) {
	secret := []byte(rand.Text() + rand.Text())
	ring, err := tokens.NewKeyRing("bench", map[string][]byte{"bench": secret}, []byte(rand.Text()+rand.Text()))
	if err != nil {
		return nil, err
	}
	room, err := admission.NewRoom(admission.RoomConfig{Name: "bench", State: admission.StateOpen, Rate: 1e6, Burst: 1e6, Tau: time.Second}, time.Now())
	if err != nil {
		return nil, err
	}
	api := httpapi.New(svc, httpapi.Config{Codec: tokens.NewCodec(ring, time.Second), Room: "bench", DefaultEvent: "bench", PaymentKey: secret})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &httpTarget{
		srv: httpserver.New(api, httpserver.Defaults), base: "http://" + ln.Addr().String(),
		gate: admission.NewGate(ring, admission.Policy{PassTTL: time.Hour}, queue.NewMemoryLedger(1<<16, time.Now)), room: room,
		httpc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}, Timeout: 10 * time.Second},
	}
	go func() { _ = t.srv.Serve(ln) }()
	if _, err := t.client("probe", 0, false); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

func (t *httpTarget) close() { _ = t.srv.Shutdown(context.Background()) }

// clients returns the set-up of client c: it admits c through the gate,
// opens its session over HTTP, and returns its hold-and-release call, made
// with rawConn (raw) or net/http's client.
// Each call's clients are new visitors (one session per visitor and event).
func (t *httpTarget) clients(raw bool) func(c int) (cycle, error) {
	t.runs++
	run := t.runs
	return func(c int) (cycle, error) { return t.client(fmt.Sprintf("h%d-%d", run, c), c, raw) }
}

func (t *httpTarget) client(user string, c int, raw bool) (cycle, error) {
	tk, err := t.gate.Issue(t.room, admission.Visitor{Subject: user}, time.Now())
	if err != nil {
		return nil, err
	}
	d := t.gate.Decide(context.Background(), t.room, admission.Attempt{Token: tk.Token, Nonce: "0", Visitor: admission.Visitor{Subject: user}, Now: time.Now()})
	if d.Outcome != admission.OutcomeAdmit {
		return nil, fmt.Errorf("admitting %s: %v", user, d.Outcome)
	}
	status, body, err := t.do("POST", "/api/sessions", "", d.Pass)
	if err != nil || status != http.StatusCreated {
		return nil, fmt.Errorf("opening a session: %d %s %v", status, body, err)
	}
	var sess struct{ Session string }
	if err := json.Unmarshal(body, &sess); err != nil {
		return nil, err
	}
	t.passLen, t.sessionLen = len(d.Pass), len(sess.Session)
	do := t.do
	if raw {
		do = newRawConn(strings.TrimPrefix(t.base, "http://")).do
	}
	return func(i int) (time.Duration, bool, error) {
		seat := seatOf(c, i)
		start := time.Now()
		status, body, err := do("POST", "/api/sessions/"+sess.Session+"/holds", `{"seats":["`+seat+`"]}`, d.Pass)
		took := time.Since(start)
		switch {
		case err != nil:
			return took, false, err
		case status == http.StatusConflict && strings.Contains(string(body), "seat_taken"):
			return took, false, &seats.TakenError{Seats: []string{seat}}
		case status != http.StatusOK:
			return took, false, httpErr("hold", status, body, nil)
		}
		if status, body, err := do("DELETE", "/api/sessions/"+sess.Session+"/holds/"+seat, "", d.Pass); err != nil || status != http.StatusOK {
			return took, true, httpErr("release", status, body, err)
		}
		return took, true, nil
	}, nil
}

func (t *httpTarget) do(method, path, body, pass string) (int, []byte, error) {
	return t.doAt(t.base, method, path, body, pass)
}

// doAt sends a request with net/http's client to the server at base.
func (t *httpTarget) doAt(base, method, path, body, pass string) (int, []byte, error) {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set(httpapi.PassHeader, pass)
	req.Header.Set("Idempotency-Key", rand.Text())
	resp, err := t.httpc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// httpErr is a failed request's error: err, or the unexpected answer.
func httpErr(what string, status int, body []byte, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %d %s", what, status, body)
}
