package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fairgate/fairgate/e2e/internal/drive"
	"github.com/fairgate/fairgate/e2e/internal/pass"
	"github.com/fairgate/fairgate/e2e/internal/waiting"
)

// The strategies a twin may follow; its other twin follows the page.
const (
	honest   = "honest"
	poll     = "poll-100ms"
	replay   = "replay-versions"
	tabs     = "5-tabs"
	late     = "late-20s"
	slowPoll = "poll-60s"
	hoard    = "hoard-16s"
)

var strategies = []string{poll, replay, tabs, late, slowPoll, hoard}

// Strategy parameters (the brief's, named once).
const (
	fastPollEvery = 100 * time.Millisecond
	slowPollEvery = 60 * time.Second
	lateBy        = 20 * time.Second
	hoardClaim    = 16 * time.Second
	tabCount      = 5
)

// event is one answer a visitor got, with the driver's clock.
type event struct {
	Tab     int       `json:"tab"`
	Sent    time.Time `json:"sent"`
	At      time.Time `json:"at"`
	Path    string    `json:"path"`
	Status  int       `json:"status"`
	Outcome string    `json:"outcome,omitempty"`
	Code    string    `json:"code,omitempty"`
	Message string    `json:"message,omitempty"`
	Nxt     int64     `json:"nxt,omitempty"`
	Retry   float64   `json:"retry_after,omitempty"`
	Pass    string    `json:"pass,omitempty"`
	Err     string    `json:"err,omitempty"`
	// SlotLost marks an answer of wait, or of a slot over a second later,
	// to an attempt presented at the slot a busy answer gave.
	SlotLost bool `json:"slot_lost,omitempty"`
	// Expired marks a token the room refused as expired.
	Expired bool `json:"expired,omitempty"`
}

// visitor is one login and what it did: one page, or a twin's strategy
// (several tabs for 5-tabs).
type visitor struct {
	ID       string    `json:"id"`
	Login    string    `json:"login"`
	Strategy string    `json:"strategy"`
	Pair     int       `json:"pair"` // -1 for a visitor without a twin
	Planned  time.Time `json:"planned"`
	Took     time.Time `json:"took"`      // the first token's answer
	PreQueue bool      `json:"pre_queue"` // arrived before the start (fifo: claimed before it)
	Lottery  float64   `json:"lottery"`
	Entry    *float64  `json:"srv,omitempty"`     // the first token's srv: the serving clock at entry
	Nodes    []int     `json:"nodes"`             // each tab's node, from 0
	Admitted time.Time `json:"admitted,omitzero"` // the first pass
	// LeaveAfter is how many attempts the visitor presents without a
	// pass before it closes its tab (0: it stays); Left is when it did.
	LeaveAfter int       `json:"leave_after,omitempty"`
	Left       time.Time `json:"left,omitzero"`
	Passes     []string  `json:"passes"` // distinct pass ids
	Events     []event   `json:"events"`

	mu         sync.Mutex
	claimKnown bool
}

func (v *visitor) record(e event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.Events = append(v.Events, e)
	if e.Pass == "" {
		return
	}
	if v.Admitted.IsZero() || e.At.Before(v.Admitted) {
		v.Admitted = e.At
	}
	id := pass.ID(e.Pass)
	if id == "" {
		id = e.Pass // unreadable: the pass itself tells one from another
	}
	for _, p := range v.Passes {
		if p == id {
			return
		}
	}
	v.Passes = append(v.Passes, id)
}

// claimed records where the login's place was claimed, once: in a fifo
// room the claim, not the token, is the entry, so a place is in the
// pre-queue when it claimed before the start.
func (v *visitor) claimed(pos int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.claimKnown {
		v.claimKnown, v.PreQueue = true, pos < 0
	}
}

func (v *visitor) tookAt(t time.Time, srv float64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.Took.IsZero() {
		v.Took, v.Entry = t, &srv
	}
}

// leave records that v closed its tab at t, after an answer without a
// pass.
func (v *visitor) leave(t time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.Left = t
}

func (v *visitor) admitted() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return !v.Admitted.IsZero()
}

// tabCount is how many pages of the login v runs.
func (v *visitor) tabCount() int {
	if v.Strategy == tabs {
		return tabCount
	}
	return 1
}

// followsPage says whether every tab of v does what the page does, so
// an expired token or a lost slot is the room's doing.
func (v *visitor) followsPage() bool {
	return v.Strategy == honest || v.Strategy == tabs
}

// driver runs visitors against one room on one or more nodes.
type driver struct {
	client    *http.Client
	sites     []string // each node's public address
	room      *room
	timing    pageTiming
	saleStart time.Time
}

// tab is one page's state: its token, the half round trip the page
// measured last, and the nonces it solved.
type tab struct {
	d      *driver
	v      *visitor
	n      int
	site   string // the node the tab asks, as a load balancer sent it
	cookie string // the login
	oneWay time.Duration
	solved map[string][]byte // admit body by token
	held   string            // the newest token given, the page's cookie
}

func (d *driver) newTab(v *visitor, n int, cookie string) *tab {
	return &tab{d: d, v: v, n: n, site: d.sites[v.Nodes[n]], cookie: cookie, solved: map[string][]byte{}}
}

// post sends one request as the page does and records its answer.
func (t *tab) post(ctx context.Context, path string, body []byte, waitCookie string) (int, waiting.Answer, http.Header, event) {
	cookie := t.cookie
	if waitCookie != "" {
		cookie += "; fairgate_wait_" + roomName + "=" + waitCookie
	}
	sent := time.Now()
	status, raw, h, err := drive.Do(ctx, t.d.client, http.MethodPost, t.site+"/_fairgate"+path, body, cookie)
	at := time.Now()
	t.oneWay = min(at.Sub(sent)/2, t.d.timing.OneWayCap)
	var a waiting.Answer
	_ = json.Unmarshal(raw, &a)
	e := event{Tab: t.n, Sent: sent, At: at, Path: path, Status: status, Outcome: a.Outcome, Nxt: a.NextAttempt, Retry: a.RetryAfter}
	if err != nil {
		e.Err = err.Error()
	}
	if a.Error != nil {
		e.Code, e.Message = a.Error.Code, a.Error.Message
		e.Expired = status == http.StatusUnauthorized && strings.Contains(a.Error.Message, "expired")
	}
	if status == http.StatusOK && path == "/admit" {
		var ok struct {
			Pass string `json:"pass"`
		}
		_ = json.Unmarshal(raw, &ok)
		e.Pass = ok.Pass
	}
	return status, a, h, e
}

// admitBody is the attempt for token a, solved once per token.
func (t *tab) admitBody(ctx context.Context, a waiting.Answer) ([]byte, error) {
	if b, ok := t.solved[a.Token]; ok {
		return b, nil
	}
	_, body, err := a.Solve(ctx)
	if err != nil {
		return nil, err
	}
	t.solved[a.Token] = body
	return body, nil
}

// waitPolicy is how long a tab waits before presenting a token whose
// answer said retry_after; first is true before the tab's first attempt.
type waitPolicy func(retryAfter time.Duration, first bool) time.Duration

// pageWait is the page's own: retry_after less the half round trip.
func (t *tab) pageWait(retryAfter time.Duration, _ bool) time.Duration {
	return max(0, retryAfter-t.oneWay)
}

// policy is the wait of the tab's strategy.
func (t *tab) policy() waitPolicy {
	switch t.v.Strategy {
	case poll:
		return func(time.Duration, bool) time.Duration { return fastPollEvery }
	case slowPoll:
		return func(time.Duration, bool) time.Duration { return slowPollEvery }
	case late:
		return func(r time.Duration, first bool) time.Duration { return t.pageWait(r, first) + lateBy }
	case hoard:
		return func(r time.Duration, first bool) time.Duration {
			if first {
				return max(0, time.Until(t.d.saleStart.Add(hoardClaim)))
			}
			return t.pageWait(r, first)
		}
	default:
		return t.pageWait
	}
}

// run is the page's loop (gateway/pages/assets/waiting.js, run()) with the wait
// before each attempt taken from the tab's strategy. It ends when the tab
// is admitted, the login is refused, or ctx ends.
func (t *tab) run(ctx context.Context) {
	wait := t.policy()
	status, a, h, e := t.post(ctx, "/token", nil, "")
	t.record(e, a)
	first := true
	var busySlot int64 // the slot of the last busy answer, ms; 0 if none
	presented := 0     // attempts answered without a pass
	for ctx.Err() == nil {
		switch {
		case status == http.StatusOK || (status == http.StatusTooManyRequests && a.Challenge != ""):
			body, err := t.admitBody(ctx, a)
			if err != nil {
				return
			}
			drive.Sleep(ctx, wait(secs(a.RetryAfter), first))
			first = false
			if ctx.Err() != nil {
				return
			}
			st, next, nh, ne := t.post(ctx, "/admit", body, "")
			if busySlot != 0 && st == http.StatusTooManyRequests && t.v.followsPage() {
				ne.SlotLost = next.Outcome == "wait" || (next.Outcome == "busy" && next.NextAttempt > busySlot+1000)
			}
			t.record(ne, next)
			if st != http.StatusOK {
				presented++
				if t.v.LeaveAfter > 0 && presented >= t.v.LeaveAfter {
					t.v.leave(ne.At)
					return
				}
			}
			// An early answer (the half round trip taken off was too
			// much) leaves the slot as it was: the page presents again.
			switch next.Outcome {
			case "early":
			case "busy":
				busySlot = next.NextAttempt
			default:
				busySlot = 0
			}
			switch {
			case st == http.StatusOK:
				return
			case st == http.StatusTooManyRequests && next.Challenge == "":
				// A 429 without a token: the same token again after
				// Retry-After and the page's jitter.
				drive.Sleep(ctx, headerRetry(nh, 0)+time.Duration(rand.Int64N(int64(t.d.timing.RateLimitJitter)+1)))
				a.RetryAfter = 0
				continue
			}
			status, a, h = st, next, nh
		case status == http.StatusServiceUnavailable && a.Error != nil && a.Error.Code == "closed":
			drive.Sleep(ctx, t.d.timing.ClosedWait)
			status, a, h, e = t.post(ctx, "/token", nil, a.Token)
			t.record(e, a)
		case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusConflict || status == http.StatusBadRequest:
			if a.Error != nil && a.Error.Code == "identity" {
				return
			}
			// A used, expired or unreadable token: the page asks for a
			// place with the cookie it holds, the last token it was given.
			status, a, h, e = t.post(ctx, "/token", nil, t.last())
			t.record(e, a)
		default:
			drive.Sleep(ctx, headerRetry(h, t.d.timing.TroubleWait))
			status, a, h, e = t.post(ctx, "/token", nil, t.last())
			t.record(e, a)
		}
	}
}

// last is the newest token the tab holds (the page's cookie).
func (t *tab) last() string { return t.held }

func (t *tab) record(e event, a waiting.Answer) {
	if a.Token != "" {
		t.held = a.Token
		c := readClaims(a.Token)
		if e.Path == "/token" {
			t.v.tookAt(e.At, c.Srv)
		}
		if c.Pos != 0 {
			t.v.claimed(c.Pos)
		}
	}
	t.v.record(e)
}

// tokenClaims are what the probe reads of a token, unverified (it only
// counts): a fifo token's pos (its rank plus one, negative in the
// pre-queue; 0 before the claim or in a lottery room) and the entry srv.
type tokenClaims struct {
	jwt.RegisteredClaims
	Pos int64   `json:"pos"`
	Srv float64 `json:"srv"`
}

// readClaims reads a token's claims; zero if it does not parse.
func readClaims(token string) tokenClaims {
	var c tokenClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &c); err != nil {
		return tokenClaims{}
	}
	return c
}

// replayer is the replay strategy: every version of its token it ever
// held, presented again and again at fastPollEvery, never waiting for nxt.
func (t *tab) replayer(ctx context.Context) {
	status, a, _, e := t.post(ctx, "/token", nil, "")
	t.record(e, a)
	if status != http.StatusOK {
		return
	}
	versions := []waiting.Answer{a}
	for ctx.Err() == nil {
		for _, ver := range versions {
			body, err := t.admitBody(ctx, ver)
			if err != nil {
				return
			}
			st, next, _, ne := t.post(ctx, "/admit", body, "")
			t.record(ne, next)
			if st == http.StatusOK {
				return
			}
			if next.Token != "" && t.solved[next.Token] == nil && !holds(versions, next.Token) {
				versions = append(versions, next)
			}
		}
		drive.Sleep(ctx, fastPollEvery)
	}
}

func holds(versions []waiting.Answer, token string) bool {
	for _, v := range versions {
		if v.Token == token {
			return true
		}
	}
	return false
}

// headerRetry is a Retry-After header in seconds, or def without one.
func headerRetry(h http.Header, def time.Duration) time.Duration {
	n, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || n <= 0 {
		return def
	}
	return time.Duration(n) * time.Second
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
