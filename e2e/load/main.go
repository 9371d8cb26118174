// Command load is the fault suite's bounded load generator. For a fixed
// time it runs honest visitors through a waiting room (token, proof of
// work, waiting until nxt, admission, the shop with the pass, and one replay
// of the used token) and, optionally, plain workers sending GETs and POSTs
// to a site without the room. It prints one JSON line of counts:
//
//	load -site URL -room ROOM [-plain URL] [-visitors 20] [-workers 4] [-pace 20ms] [-for 15s] [-keepalive=false]
//	     [-checkout -seats URL -event ID -payment-key FILE -think 1s [-held FILE]]
//	load -serve-hook ADDR [-hook-delay 3s]    an admission hook for the suite
//	load -site URL -replay FILE                replay admitted tokens (from -used FILE)
//
// With -used FILE every admitted token and its solution is appended to
// FILE; -replay posts each again and prints {"replayed":N,"again":M}: M
// used tokens admitted a second time (a 429 is asked again after its
// Retry-After, up to three times, so the ledger is what answers).
//
// failed: HTTP answers outside the documented set (5xx from the waiting
// room's own endpoints, unexpected statuses); conn_errors: requests whose
// connection failed (reset, EOF), which a reload causes on either side
// (plain_conn_errors) when Caddy switches listeners; origin_errors:
// 502/503/504 on the shop behind a pass (the origin's fault, the documented
// answer while it is down); deferred: admissions the room put off because
// the admission hook failed (429 "deferred", or 503 "unavailable", the
// place kept); lost: visitors whose waiting token was refused
// before they were admitted; double: a used token admitted again.
//
// With -checkout, each admitted visitor buys a seat with the session the
// admission hook opened: hold one seat and checkout through the site, then
// confirm as the payment provider would (signed, to the seat service
// directly), pausing -think before checkout and before confirm, so most
// buyers are mid-checkout at any moment. Each write has its own
// Idempotency-Key and is retried with it while the seat service is down.
// seats_unavailable counts the answers while it is (502/503/504 or a
// refused connection: the documented ones), resumed the writes that
// succeeded after them, seat_taken the holds that lost a best seat to
// another buyer (409, asked again), confirmed the reservations. At the end
// the seat service itself (-seats) is asked: lost_reservations are
// confirmed reservations it does not have as finalised, double_sold seats
// in two reservations, and reserved_seats its count of sold seats, which
// must equal confirmed_seats. A purchase under way when the time is up is
// finished (within 15 s), so every sale is counted. With -held FILE a line
// is appended to FILE at each seat held, so a fault can be timed to meet a
// purchase under way: the buyers move in waves (they start together), and
// an outage timed by the clock alone can fall between two.
package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/fairgate/fairgate/e2e/internal/drive"
	"github.com/fairgate/fairgate/e2e/internal/pass"
	"github.com/fairgate/fairgate/e2e/internal/replay"
	"github.com/fairgate/fairgate/e2e/internal/waiting"
)

type counts struct {
	Requests     atomic.Int64 `json:"-"`
	Failed       atomic.Int64 `json:"-"`
	OriginErrors atomic.Int64 `json:"-"`
	Admitted     atomic.Int64 `json:"-"`
	Lost         atomic.Int64 `json:"-"`
	Double       atomic.Int64 `json:"-"`
	Deferred     atomic.Int64 `json:"-"`
	SeatsDown    atomic.Int64 `json:"-"`
	Taken        atomic.Int64 `json:"-"`
	Resumed      atomic.Int64 `json:"-"`
	ConnErrors   atomic.Int64 `json:"-"`
	PlainReqs    atomic.Int64 `json:"-"`
	PlainFailed  atomic.Int64 `json:"-"`
	PlainConn    atomic.Int64 `json:"-"`
	mu           sync.Mutex
	samples      map[*atomic.Int64][]string // the first few failures of each kind
	used         io.Writer                  // admitted tokens, one JSON line each
	sales        []sale
}

// sale is a confirmed reservation, as the visitor learned it.
type sale struct {
	session, pass, reservation string
	seats                      []string
}

// failure records a failed request as an HTTP failure or, when the
// connection itself failed (reset, EOF), as a connection error.
func (c *counts) failure(plain bool, err error, what string) {
	switch {
	case plain && err != nil:
		c.fail(&c.PlainConn, what)
	case plain:
		c.fail(&c.PlainFailed, what)
	case err != nil:
		c.fail(&c.ConnErrors, what)
	default:
		c.fail(&c.Failed, what)
	}
}

// fail records a failure and keeps the first few of its kind for the
// report, so that one HTTP failure is not hidden behind a restart's
// connection errors.
func (c *counts) fail(n *atomic.Int64, what string) {
	n.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.samples == nil {
		c.samples = make(map[*atomic.Int64][]string)
	}
	if len(c.samples[n]) < 5 {
		c.samples[n] = append(c.samples[n], what)
	}
}

// sampled is the report's first failures by kind, kinds without failures left out.
func (c *counts) sampled() map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	kinds := map[string]*atomic.Int64{
		"failed": &c.Failed, "lost": &c.Lost, "double": &c.Double, "conn_errors": &c.ConnErrors,
		"plain_failed": &c.PlainFailed, "plain_conn_errors": &c.PlainConn, "origin_errors": &c.OriginErrors,
	}
	out := make(map[string][]string)
	for name, n := range kinds {
		if len(c.samples[n]) > 0 {
			out[name] = c.samples[n]
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func main() {
	site := flag.String("site", "", "the site behind the waiting room")
	room := flag.String("room", "", "the room's name (its pass cookie is fairgate_pass_ROOM)")
	plain := flag.String("plain", "", "a site without the waiting room, for comparison")
	visitors := flag.Int("visitors", 20, "concurrent visitors")
	workers := flag.Int("workers", 4, "concurrent plain workers")
	pace := flag.Duration("pace", 20*time.Millisecond, "pause between a plain worker's requests")
	length := flag.Duration("for", 15*time.Second, "how long to run")
	keepAlive := flag.Bool("keepalive", true, "reuse connections")
	hookAddr := flag.String("serve-hook", "", "serve an admission hook on this address instead")
	hookDelay := flag.Duration("hook-delay", 0, "how long the hook takes to answer")
	checkout := flag.Bool("checkout", false, "buy a seat once admitted (the admission hook is the seat service)")
	seatsURL := flag.String("seats", "", "the seat service itself, asked at the end (with -checkout)")
	event := flag.String("event", "final-2026", "the event on sale (with -checkout)")
	paymentKeyFile := flag.String("payment-key", "", "the seat service's payment key file (with -checkout)")
	think := flag.Duration("think", time.Second, "a buyer's pause between hold, checkout and confirm (with -checkout)")
	heldFile := flag.String("held", "", "append a line to this file at each seat held (with -checkout)")
	usedFile := flag.String("used", "", "append every admitted token and its solution to this file")
	replayFile := flag.String("replay", "", "replay the admitted tokens in this file (from -used) instead")
	flag.Parse()
	if *hookAddr != "" {
		fmt.Fprintln(os.Stderr, serveHook(*hookAddr, *hookDelay))
		os.Exit(1)
	}
	if *replayFile != "" && *site != "" {
		out, err := replayUsed(*site, *replayFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		fmt.Println(out)
		return
	}
	if *site == "" || *room == "" {
		fmt.Fprintln(os.Stderr, "load: -site and -room are required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *length)
	defer cancel()
	c := &counts{}
	if *usedFile != "" {
		f := appendTo(*usedFile)
		defer f.Close()
		c.used = f
	}
	var buy *buyer
	if *checkout {
		key, err := os.ReadFile(*paymentKeyFile)
		if *seatsURL == "" || err != nil {
			fmt.Fprintln(os.Stderr, "load: -checkout needs -seats and a readable -payment-key:", err)
			os.Exit(2)
		}
		finish, stop := context.WithTimeout(context.Background(), *length+15*time.Second)
		defer stop()
		buy = &buyer{finish: finish, paymentKey: bytes.TrimSpace(key), seats: *seatsURL, think: *think}
		if *heldFile != "" {
			f := appendTo(*heldFile)
			defer f.Close()
			buy.held = f
		}
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableKeepAlives: !*keepAlive}}
	var wg sync.WaitGroup
	for range *visitors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				visit(ctx, client, c, *site, *room, buy)
			}
		}()
	}
	if *plain != "" {
		for range *workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// GETs and POSTs, as the visitors send: Go's client retries
				// an idempotent request on a connection closed under it, and
				// a POST it does not.
				for i := 0; ctx.Err() == nil; i++ {
					method := "GET"
					if i%2 == 1 {
						method = "POST"
					}
					status, _, _, err := drive.Do(ctx, client, method, *plain+"/", []byte("{}"), "")
					if ctx.Err() != nil {
						return
					}
					c.PlainReqs.Add(1)
					if err != nil || status != http.StatusOK {
						c.failure(true, err, fmt.Sprintf("plain %s: %d %v", method, status, err))
					}
					drive.Sleep(ctx, *pace)
				}
			}()
		}
	}
	wg.Wait()
	figures := map[string]any{
		"requests": c.Requests.Load(), "failed": c.Failed.Load(), "origin_errors": c.OriginErrors.Load(),
		"admitted": c.Admitted.Load(), "lost": c.Lost.Load(), "double": c.Double.Load(), "deferred": c.Deferred.Load(),
		"conn_errors": c.ConnErrors.Load(), "plain_requests": c.PlainReqs.Load(), "plain_failed": c.PlainFailed.Load(), "plain_conn_errors": c.PlainConn.Load(), "samples": c.sampled(),
	}
	if buy != nil {
		audit, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.audit(audit, client, *seatsURL, *event, figures); err != nil {
			c.fail(&c.Failed, "audit: "+err.Error())
			figures["failed"], figures["samples"] = c.Failed.Load(), c.sampled()
		}
		figures["seats_unavailable"], figures["resumed"], figures["confirmed"] = c.SeatsDown.Load(), c.Resumed.Load(), len(c.sales)
		figures["seat_taken"] = c.Taken.Load()
	}
	out, _ := json.Marshal(figures)
	fmt.Println(string(out))
}

// appendTo opens name for appending, creating it, or exits.
func appendTo(name string) *os.File {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
	return f
}

// visit is one honest visitor, from the waiting answer to the shop (or,
// with buy, to a confirmed seat).
func visit(ctx context.Context, client *http.Client, c *counts, site, room string, buy *buyer) {
	status, _, err := c.call(ctx, client, "GET", site+"/", nil, "")
	if ctx.Err() != nil {
		return
	}
	if err != nil || (status != http.StatusTooManyRequests && status != http.StatusOK) {
		c.failure(false, err, fmt.Sprintf("GET /: %d %v", status, err))
		drive.Sleep(ctx, time.Second)
		return
	}
	status, body, err := c.call(ctx, client, "POST", site+"/_fairgate/token", nil, "")
	var tk waiting.Answer
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &tk) != nil || tk.Token == "" {
		if ctx.Err() == nil {
			c.failure(false, err, fmt.Sprintf("token: %d %v %.80s", status, err, body))
			drive.Sleep(ctx, time.Second)
		}
		return
	}
	for ctx.Err() == nil {
		drive.Sleep(ctx, tk.Wait())
		_, req, err := tk.Solve(ctx)
		if err != nil {
			return
		}
		status, body, err := c.call(ctx, client, "POST", site+"/_fairgate/admit", req, "")
		if ctx.Err() != nil {
			return
		}
		switch {
		case status == http.StatusServiceUnavailable && bytes.Contains(body, []byte(`"unavailable"`)):
			// The documented answer while a dependency fails: the place is kept.
			c.Deferred.Add(1)
			tk.RetryAfter = 2
		case err != nil || status >= 500:
			// The place is kept: try again with the same token.
			c.failure(false, err, fmt.Sprintf("admit: %d %v %.80s", status, err, body))
			tk.RetryAfter = 1
		case status == http.StatusOK:
			var a struct{ Pass, Session string }
			_ = json.Unmarshal(body, &a)
			c.Admitted.Add(1)
			if c.used != nil {
				c.mu.Lock()
				fmt.Fprintf(c.used, "%s\t%s\n", pass.ID(a.Pass), req)
				c.mu.Unlock()
			}
			// The admitted token asked again gets its own pass back (a
			// retry after a lost answer); any other pass is a second admission.
			if st, again, err := c.call(ctx, client, "POST", site+"/_fairgate/admit", req, ""); err == nil && st == http.StatusOK && replay.Again(again, pass.ID(a.Pass)) {
				c.fail(&c.Double, "a used token admitted again")
			}
			if buy != nil {
				buy.buy(client, c, site, room, a.Session, a.Pass)
				return
			}
			shop(ctx, client, c, site, room, a.Pass)
			return
		case status == http.StatusTooManyRequests:
			if tk.Follow(body).Outcome == "deferred" {
				c.Deferred.Add(1)
			}
		default:
			c.fail(&c.Lost, fmt.Sprintf("admit refused the place: %d %.120s", status, body))
			return
		}
	}
}

// buyer buys one seat per admitted visitor through the site.
type buyer struct {
	finish     context.Context // a purchase under way when the load ends is finished within it
	paymentKey []byte
	seats      string // the seat service, which the payment provider confirms with directly
	think      time.Duration
	held       io.Writer // a line at each seat held, when set
	mu         sync.Mutex
}

// buy holds one seat, checks out and confirms, each write retried with its
// Idempotency-Key while the seat service is unavailable.
func (b *buyer) buy(client *http.Client, c *counts, site, room, session, pass string) {
	if session == "" {
		c.fail(&c.Failed, "admitted without a seat session")
		return
	}
	cookie := "Cookie: fairgate_pass_" + room + "=" + pass
	base := site + "/api/sessions/" + session
	ref := "pay-" + session
	var held struct {
		Seats       []string `json:"seats"`
		Reservation string   `json:"reservation"`
	}
	// The visitor holds and checks out through the site; the payment
	// provider confirms with the seat service directly, server to server,
	// with the visitor's pass and its signature.
	for _, step := range []struct{ name, url, body, auth, sig string }{
		{"hold", base + "/holds", `{"best":{"count":1}}`, cookie, ""},
		{"checkout", base + "/checkout", `{}`, cookie, ""},
		{"confirm", b.seats + "/api/sessions/" + session + "/confirm", `{"payment_ref":"` + ref + `"}`, "Fairgate-Pass: " + pass, hmacHex(b.paymentKey, session+"\n"+ref)},
	} {
		if step.name != "hold" {
			drive.Sleep(b.finish, b.think) // choosing, paying: most buyers are mid-checkout at any time
		}
		body, status, ok := b.write(client, c, step.name, step.url, step.body, step.auth, step.sig)
		// Two buyers may pick the same best seat: the second gets 409
		// naming it, and asks again (a new request, a new key).
		for tries := 0; step.name == "hold" && status == http.StatusConflict && tries < 5; tries++ {
			c.Taken.Add(1)
			body, status, ok = b.write(client, c, step.name, step.url, step.body, step.auth, step.sig)
		}
		if !ok {
			c.fail(&c.Failed, fmt.Sprintf("%s: %d %.120s", step.name, status, body))
			return
		}
		if err := json.Unmarshal(body, &held); err != nil {
			c.fail(&c.Failed, step.name+": not JSON")
			return
		}
		if step.name == "hold" && b.held != nil {
			b.mu.Lock()
			fmt.Fprintln(b.held, session)
			b.mu.Unlock()
		}
	}
	if held.Reservation == "" || len(held.Seats) != 1 {
		c.fail(&c.Failed, fmt.Sprintf("confirm: reservation %q, seats %v", held.Reservation, held.Seats))
		return
	}
	c.mu.Lock()
	c.sales = append(c.sales, sale{session: session, pass: pass, reservation: held.Reservation, seats: held.Seats})
	c.mu.Unlock()
}

// write posts one step until it succeeds, fails for good, or time is up.
func (b *buyer) write(client *http.Client, c *counts, name, url, body, auth, sig string) ([]byte, int, bool) {
	key := fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano(), rand.Int64())
	down := false
	for b.finish.Err() == nil {
		req, _ := http.NewRequestWithContext(b.finish, "POST", url, strings.NewReader(body))
		k, v, _ := strings.Cut(auth, ": ")
		req.Header.Set(k, v)
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Content-Type", "application/json")
		if sig != "" {
			req.Header.Set("Fairgate-Payment-Signature", sig)
		}
		c.Requests.Add(1)
		resp, err := client.Do(req)
		var out []byte
		status := 0
		if err == nil {
			out, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			status = resp.StatusCode
		}
		switch {
		case err == nil && status == http.StatusOK:
			if down {
				c.Resumed.Add(1)
			}
			return out, status, true
		case err != nil && b.finish.Err() != nil:
			return []byte(err.Error()), 0, false
		case err != nil, status == http.StatusBadGateway, status == http.StatusServiceUnavailable, status == http.StatusGatewayTimeout:
			// The seat service is down: Caddy's reverse_proxy answers 502,
			// a direct call is refused, the store answers 503; the same
			// key again.
			c.SeatsDown.Add(1)
			down = true
			drive.Sleep(b.finish, 200*time.Millisecond)
		default:
			return out, status, false
		}
	}
	return []byte("unfinished when time was up"), 0, false
}

// audit asks the seat service for what it sold and compares it with what
// the visitors were told.
func (c *counts) audit(ctx context.Context, client *http.Client, seatsURL, event string, figures map[string]any) error {
	lost, double, confirmedSeats := 0, 0, 0
	owner := map[string]string{}
	for _, s := range c.sales {
		for _, seat := range s.seats {
			confirmedSeats++
			if other, ok := owner[seat]; ok && other != s.reservation {
				double++
			}
			owner[seat] = s.reservation
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", seatsURL+"/api/sessions/"+s.session, nil)
		req.Header.Set("Fairgate-Pass", s.pass)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		var got struct {
			State       string   `json:"state"`
			Reservation string   `json:"reservation"`
			Seats       []string `json:"seats"`
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || got.State != "finalised" || got.Reservation != s.reservation || strings.Join(got.Seats, ",") != strings.Join(s.seats, ",") {
			lost++
		}
	}
	resp, err := client.Get(seatsURL + "/api/events/" + event)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var ev struct {
		Sections []struct {
			Counts struct {
				Reserved int `json:"reserved"`
			} `json:"counts"`
		} `json:"sections"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ev); err != nil {
		return fmt.Errorf("event counts: %w", err)
	}
	reserved := 0
	for _, s := range ev.Sections {
		reserved += s.Counts.Reserved
	}
	figures["lost_reservations"], figures["double_sold"] = lost, double
	figures["reserved_seats"], figures["confirmed_seats"] = reserved, confirmedSeats
	return nil
}

func hmacHex(key []byte, msg string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// shop browses with the pass for a few requests.
func shop(ctx context.Context, client *http.Client, c *counts, site, room, pass string) {
	for range 5 {
		status, body, err := c.call(ctx, client, "GET", site+"/shop", nil, "fairgate_pass_"+room+"="+pass)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil && status == http.StatusOK:
		case err == nil && (status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout):
			c.fail(&c.OriginErrors, fmt.Sprintf("shop: %d", status))
		default:
			c.failure(false, err, fmt.Sprintf("shop with a pass: %d %v %.80s", status, err, body))
		}
		drive.Sleep(ctx, 50*time.Millisecond)
	}
}

func (c *counts) call(ctx context.Context, client *http.Client, method, url string, body []byte, cookie string) (int, []byte, error) {
	c.Requests.Add(1)
	status, b, _, err := drive.Do(ctx, client, method, url, body, cookie)
	return status, b, err
}

// serveHook is an admission hook that opens a session after delay.
func serveHook(addr string, delay time.Duration) error {
	var n atomic.Int64
	return http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		drive.Sleep(r.Context(), delay)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"session":"s%d"}`, n.Add(1))
	}))
}

// replayUsed posts every admitted token in file (lines of the first pass's id,
// a tab and the admit body) once more to site and counts those admitted
// again: answered with a pass other than their first.
func replayUsed(site, file string) (string, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	var replayed, again atomic.Int64
	statuses := sync.Map{}
	var g errgroup.Group
	g.SetLimit(16)
	for _, line := range bytes.Split(raw, []byte("\n")) {
		id, body, ok := bytes.Cut(line, []byte("\t"))
		if !ok || len(bytes.TrimSpace(body)) == 0 {
			continue
		}
		g.Go(func() error {
			status, resp, err := replay.Admit(ctx, client, site, body)
			if err != nil {
				return nil // not replayed: counted by its absence
			}
			replayed.Add(1)
			n, _ := statuses.LoadOrStore(status, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			if status == http.StatusOK && replay.Again(resp, string(id)) {
				again.Add(1)
			}
			return nil
		})
	}
	_ = g.Wait()
	byStatus := map[string]int64{}
	statuses.Range(func(k, v any) bool { byStatus[strconv.Itoa(k.(int))] = v.(*atomic.Int64).Load(); return true })
	out, _ := json.Marshal(map[string]any{"replayed": replayed.Load(), "again": again.Load(), "statuses": byStatus})
	return string(out), nil
}
