package gateway

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fairgate/fairgate/admission"

	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/room"
)

// Fairness invariants of the checkpoint protocol, each named after what
// must hold against one strategy, through the gateway's HTTP handler with
// the injected clock.

// tab is one visitor's browser: its own cookies, the same gateway.
type tab struct {
	e      *env
	client *http.Client
	header []string
}

func (e *env) newTab(header ...string) *tab {
	return &tab{e: e, header: header, client: &http.Client{Jar: newClockJar(e.clock.Now),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (tb *tab) post(path, body string) (int, ticketJSON) {
	tb.e.t.Helper()
	status, raw := tb.postRaw(path, body)
	var tk ticketJSON
	_ = json.Unmarshal(raw, &tk)
	return status, tk
}

// postRaw posts body to path and returns the status and the answer's body.
func (tb *tab) postRaw(path, body string) (int, []byte) {
	tb.e.t.Helper()
	req, err := http.NewRequest("POST", tb.e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		tb.e.t.Fatal(err)
	}
	for i := 0; i+1 < len(tb.header); i += 2 {
		req.Header.Set(tb.header[i], tb.header[i+1])
	}
	resp, err := tb.client.Do(req)
	if err != nil {
		tb.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.e.t.Fatal(err)
	}
	return resp.StatusCode, raw
}

func (tb *tab) token() ticketJSON {
	tb.e.t.Helper()
	status, tk := tb.post("/_fairgate/token", "")
	if status != http.StatusOK {
		tb.e.t.Fatalf("token: %d", status)
	}
	return tk
}

// admit presents token (the tab's cookie if empty) with a solved nonce.
func (tb *tab) admit(tk ticketJSON) (int, ticketJSON) {
	tb.e.t.Helper()
	return tb.post("/_fairgate/admit", fmt.Sprintf(`{"nonce":%q,"token":%q}`, solveFor(tb.e.t, tk), tk.Token))
}

func (e *env) claims(token string) *tokens.WaitClaims {
	e.t.Helper()
	c, err := e.gw.door.Codec().ParseWait(token, e.gw.cfg.Room, e.clock.Now())
	if err != nil {
		e.t.Fatalf("parsing a token the gateway gave: %v", err)
	}
	return c
}

// TestOnePlaceGivesOnePass: take T0, attempt early, keep the versions the
// gate re-signs, get T0 admitted; after T0's expiry and the leeway a later
// version of the same place must not be admitted again.
func TestOnePlaceGivesOnePass(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue", Tau: Duration(24 * time.Hour), FixedSpeed: true}}, nil)
	tb := e.newTab()
	t0 := tb.token()
	// Early attempts: the same token back, nothing re-signed.
	for range 3 {
		if status, back := tb.admit(t0); status != 429 || back.Outcome != "early" || back.Token != t0.Token {
			t.Fatalf("early attempt: %d %s, same token %v", status, back.Outcome, back.Token == t0.Token)
		}
	}
	// Attempts at each checkpoint: later versions, later expiries.
	versions := []ticketJSON{t0}
	cur := t0
	for range 10 {
		e.clock.Set(time.UnixMilli(cur.NextAttempt))
		status, back := tb.admit(cur)
		if status != 429 || back.Outcome != "wait" {
			t.Fatalf("waiting attempt: %d %+v", status, back)
		}
		cur = back
		versions = append(versions, cur)
	}
	last := cur
	if e.claims(last.Token).ID != e.claims(t0.Token).ID {
		t.Fatal("a re-signed version names another place")
	}
	open := "open"
	if err := e.gw.Room().Apply(room.RoomChange{State: &open}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if status, _ := tb.admit(t0); status != 200 {
		t.Fatalf("T0 once eligible: %d", status)
	}
	// Every version already due is refused; one not yet due is told to
	// wait (nothing re-signed) and refused once due, below.
	// T0 itself again is its own admission answered once more (the same
	// pass; TestReusedToken).
	for i, v := range versions[:len(versions)-1] {
		if status, _ := tb.admit(v); i > 0 && status != http.StatusConflict || i == 0 && status != 200 {
			t.Fatalf("version %d after T0 was admitted: %d, want 409", i, status)
		}
	}
	// Each version, presented in the last second it is valid, after the
	// ledger had every chance to forget (another admission makes it sweep).
	for i, v := range versions {
		exp := time.Unix(e.claims(v.Token).ExpiresAt, 0)
		e.clock.Set(exp.Add(admission.DefaultPolicy.Leeway - time.Second))
		if status, _ := e.newTab().admit(e.newTab().token()); status != 200 {
			t.Fatalf("another visitor in the open room: %d", status)
		}
		if status, back := tb.admit(v); i > 0 && status != http.StatusConflict || i == 0 && status != 200 {
			t.Fatalf("version %d at the end of its life: %d %+v, want 409 (200 for T0, admitted)", i, status, back)
		}
	}
}

// TestFastRetryGainsNothingWhileBucketEmpty: while the bucket binds, eligible
// places are served in the order they became eligible; retrying every
// 100 ms gets nobody in before their slot.
func TestFastRetryGainsNothingWhileBucketEmpty(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "open", Rate: 1, Burst: 1}}, nil)
	first, honest, fast := e.newTab(), e.newTab(), e.newTab()
	if status, _ := first.admit(first.token()); status != 200 {
		t.Fatalf("first visitor: %d", status)
	}
	start := e.clock.Now()
	status, hb := honest.admit(honest.token())
	if status != 429 || hb.Outcome != "busy" || hb.RetryAfter != 1 {
		t.Fatalf("eligible with an empty bucket: %d %+v", status, hb)
	}
	status, fb := fast.admit(fast.token())
	if status != 429 || fb.Outcome != "busy" || fb.RetryAfter != 2 {
		t.Fatalf("second in line: %d %+v", status, fb)
	}
	// The fast retrier hammers every 100 ms with every version it holds.
	for e.clock.Now().Before(start.Add(2 * time.Second)) {
		if e.clock.Now().Equal(start.Add(time.Second)) {
			if status, _ := honest.admit(hb); status != 200 {
				t.Fatalf("honest visitor at their slot: %d", status)
			}
		}
		for _, v := range []ticketJSON{fb} {
			if status, back := fast.admit(v); status != 429 || back.NextAttempt != fb.NextAttempt {
				t.Fatalf("fast retrier at %v: %d %+v", e.clock.Now().Sub(start), status, back)
			}
		}
		e.clock.Add(100 * time.Millisecond)
	}
	if status, _ := fast.admit(fb); status != 200 {
		t.Fatalf("fast retrier at its slot: %d", status)
	}
}

// TestRefusedAdmissionSpendsNoRate: a visitor the admission hook turns away
// (they already hold a seat session) re-sends an eligible token every 20 ms;
// honest visitors are still admitted at the room's rate.
func TestRefusedAdmissionSpendsNoRate(t *testing.T) {
	var refused string
	hook := hookServer(t, func(r *http.Request) bool {
		var pc tokens.PassClaims
		_, _, err := jwt.NewParser().ParseUnverified(r.Header.Get(passHeader), &pc)
		if err != nil {
			t.Errorf("hook got no pass: %v", err)
		}
		return pc.Wid == refused
	})
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "open", Rate: 5, Burst: 1}, Hook: &Hook{URL: hook}}, nil)
	attacker := e.newTab()
	at := attacker.token()
	refused = e.claims(at.Token).ID
	type visitor struct {
		tab  *tab
		tk   ticketJSON
		next time.Time
		done bool
	}
	start := e.clock.Now()
	var honest []*visitor
	admitted := 0
	for step := 0; step < 500; step++ { // 10 s in steps of 20 ms
		now := e.clock.Now()
		if step%10 == 0 { // a new honest visitor every 200 ms
			tb := e.newTab()
			honest = append(honest, &visitor{tab: tb, tk: tb.token(), next: now})
		}
		if status, back := attacker.admit(at); status == 429 && back.Token != "" && back.Outcome != "deferred" {
			at = back // holds a slot: keep presenting the newest answer
		}
		for _, v := range honest {
			if v.done || now.Before(v.next) {
				continue
			}
			status, back := v.tab.admit(v.tk)
			switch status {
			case 200:
				v.done = true
				admitted++
			case 429:
				v.tk, v.next = back, time.UnixMilli(back.NextAttempt)
			default:
				t.Fatalf("honest visitor: %d", status)
			}
		}
		e.clock.Set(start.Add(time.Duration(step+1) * 20 * time.Millisecond))
	}
	// 50 arrived at 5/s; the bucket admits 5/s plus its burst of 1.
	if admitted < 45 {
		t.Fatalf("%d honest admissions in 10 s at 5/s", admitted)
	}
}

// TestFreeTokensMoveNoEstimate: taking tokens costs nothing, so it must not
// move the population estimate or the clock.
func TestFreeTokensMoveNoEstimate(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue"}}, nil)
	room := e.gw.Room().Room
	speed := room.View(e.clock.Now()).Cruise
	anon := &http.Client{} // no cookies: every request a new token
	for range 2000 {
		resp, err := anon.Post(e.srv.URL+"/_fairgate/token", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for range 5 {
		e.clock.Add(time.Second)
		room.Tick(e.clock.Now())
	}
	if n := room.Population(e.clock.Now()); n != 0 {
		t.Fatalf("2000 free tokens counted as %v waiting", n)
	}
	if got := room.View(e.clock.Now()).Cruise; got != speed {
		t.Fatalf("free tokens moved the clock's speed from %v to %v", speed, got)
	}
}

// TestTabsShareOneDraw: with identity configured, every token a
// subject takes in a room carries the same draw.
func TestTabsShareOneDraw(t *testing.T) {
	secret := []byte("site-login-secret-0123456789abcdef")
	e := newEnv(t, Config{
		Config: room.Config{Room: "sale", State: "queue"},
		Identity: &Identity{
			Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(secret), Required: true,
		},
	}, nil)
	login := func(sub string) string { return "Bearer " + signLogin(t, secret, sub, e.clock.Now().Add(time.Hour)) }
	alice := login("alice")
	lots := map[string]bool{}
	places := map[string]bool{}
	for range 5 {
		c := e.claims(e.newTab("Authorization", alice).token().Token)
		lots[c.Lot], places[c.ID] = true, true
	}
	if len(lots) != 1 || len(places) != 5 {
		t.Fatalf("alice's 5 tabs: %d draws, %d places; want 1 draw", len(lots), len(places))
	}
	bob := e.claims(e.newTab("Authorization", login("bob")).token().Token)
	if lots[bob.Lot] {
		t.Fatal("bob drew alice's number")
	}
}

// TestPauseKeepsPlaces: a page following every answer through an
// hour-long pause keeps its token, and its place, to the end.
func TestPauseKeepsPlaces(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue", Tau: Duration(time.Minute), FixedSpeed: true}}, nil)
	tb := e.newTab()
	tk := tb.token()
	place := e.claims(tk.Token).ID
	paused := "paused"
	if err := e.gw.Room().Apply(room.RoomChange{State: &paused}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	end := e.clock.Now().Add(time.Hour)
	for e.clock.Now().Before(end) {
		e.clock.Set(time.UnixMilli(tk.NextAttempt))
		status, back := tb.admit(tk)
		if status != 429 || back.Token == "" {
			t.Fatalf("paused for %v: %d %+v", end.Sub(e.clock.Now()), status, back)
		}
		tk = back
	}
	queue := "queue"
	if err := e.gw.Room().Apply(room.RoomChange{State: &queue}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		e.clock.Set(time.UnixMilli(tk.NextAttempt))
		status, back := tb.admit(tk)
		if status == 200 {
			return
		}
		if status != 429 || e.claims(back.Token).ID != place {
			t.Fatalf("after the pause: %d %+v", status, back)
		}
		tk = back
	}
	t.Fatal("never admitted after the pause")
}
