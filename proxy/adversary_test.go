package proxy

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fairgate/fairgate/admission"
)

// Attacks of a hostile review of the checkpoint protocol (issue 9), each
// through the gateway's HTTP handler with the injected clock, each failing
// if the attack gains.

func (e *env) setState(state string) {
	e.t.Helper()
	if err := e.gw.Room().Apply(RoomChange{State: &state}, e.clock.Now()); err != nil {
		e.t.Fatal(err)
	}
}

// TestReplayRacedAfterAdmission: every version of one place, presented at
// once from many goroutines, admits exactly once.
func TestReplayRacedAfterAdmission(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", State: "queue", Tau: Duration(24 * time.Hour), FixedSpeed: true, Rate: 1000, Burst: 1000}, nil)
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

// TestForgedCheckpoint: moving nxt (or lot, or srv) in a token without its
// key is refused, so nobody picks their own checkpoint or draw.
func TestForgedCheckpoint(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", State: "queue", Tau: Duration(time.Second), FixedSpeed: true}, nil)
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

// TestTokenFromAnotherRoom: a place in room A is no place in room B, even
// when both rooms sign with the same keys.
func TestTokenFromAnotherRoom(t *testing.T) {
	a := newEnv(t, Config{Room: "a", State: "queue"}, nil)
	b := newEnv(t, Config{Room: "b", State: "open"}, nil)
	tk := a.newTab().token()
	tb := b.newTab()
	if status, _ := tb.admit(tk); status != http.StatusUnauthorized {
		t.Fatalf("room a's token at room b: %d, want 401", status)
	}
}

// TestAnonymousPresenterTakesLoggedInPlace: with identity optional, a
// request without a login must not present a logged-in visitor's token and
// come away with a pass in their name.
func TestAnonymousPresenterTakesLoggedInPlace(t *testing.T) {
	secret := []byte("site-login-secret-0123456789abcdef")
	e := newEnv(t, Config{Room: "sale", State: "open", Identity: &Identity{
		Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(secret),
	}}, nil)
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

// TestEligibleBeforePauseLosesPlace: places that became eligible just
// before a pause, whose pages follow every answer through a long pause,
// keep their tokens and are admitted after it.
func TestEligibleBeforePauseLosesPlace(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", State: "queue", Tau: Duration(time.Second), FixedSpeed: true, Rate: 1000, Burst: 1000}, nil)
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
	e := newEnv(t, Config{Room: "sale", State: "queue", Tau: Duration(time.Millisecond), FixedSpeed: true, Rate: 1, Burst: 1}, nil)
	first, second := e.newTab(), e.newTab()
	t1, t2 := first.token(), second.token()
	e.clock.Set(time.UnixMilli(max(t1.NextAttempt, t2.NextAttempt)))
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

// TestSaleStartCenturiesAgo: a sale start further back than the
// checkpoint grid can count (time.Duration reaches 292 years) is refused
// by the admin API instead of hanging every token request.
func TestSaleStartCenturiesAgo(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", State: "queue"}, nil)
	scheduled, start := "scheduled", "1700-01-01T00:00:00Z"
	if err := e.gw.Room().Apply(RoomChange{State: &scheduled, SaleStart: &start}, e.clock.Now()); err == nil {
		t.Fatal("a sale start in 1700 accepted")
	}
	if _, err := NewShared(Config{Room: "x", State: "scheduled", SaleStart: "1700-01-01T00:00:00Z", Keys: testKeys}, e.clock.Now); err == nil {
		t.Fatal("a configured sale start in 1700 accepted")
	}
	e.newTab().token()
}

// TestLatePresenterCatchesUp: two tabs of one login (one place, one draw,
// one grid) take their tokens together under the adaptive clock; one
// follows every checkpoint, the other sleeps and presents its oldest
// version once a minute, the last time in the final seconds of that
// version's life. The honest tab always takes the place in: the sleeper
// only ever gets the pass it was given.
func TestLatePresenterCatchesUp(t *testing.T) {
	secret := []byte("site-login-secret-0123456789abcdef")
	e := newEnv(t, Config{Room: "sale", State: "queue", Rate: 0.001, Burst: 100, Identity: &Identity{
		Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(secret), Required: true,
	}}, nil)
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
