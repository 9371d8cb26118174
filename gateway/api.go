package gateway

import (
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.uber.org/zap"

	"github.com/fairgate/fairgate/admission"

	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/gateway/pages"
	"github.com/fairgate/fairgate/internal/reply"
	"github.com/fairgate/fairgate/internal/wire/httpwire"
)

// ticketJSON is what the waiting page and apps learn of a waiting token.
type ticketJSON = httpwire.Ticket

type admitRequest = httpwire.AdmitRequest

type admitResponse struct {
	Admitted bool   `json:"admitted"`
	Redirect string `json:"redirect"`
	Pass     string `json:"pass"`
	Session  string `json:"session,omitempty"`
	Expires  int64  `json:"expires"`
}

// apiRoutes are the gateway's own endpoints under its prefix.
func (g *Gateway) apiRoutes() *http.ServeMux {
	p := g.cfg.Prefix
	mux := http.NewServeMux()
	route(mux, p+"/token", map[string]http.HandlerFunc{http.MethodPost: g.serveToken})
	route(mux, p+"/admit", map[string]http.HandlerFunc{http.MethodPost: g.serveAdmit})
	route(mux, p+"/status", map[string]http.HandlerFunc{http.MethodGet: g.serveStatus})
	route(mux, p+"/assets/{asset...}", map[string]http.HandlerFunc{http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
		serveAsset(w, r, r.PathValue("asset"))
	}})
	notFound(mux, p+"/", "no such fairgate endpoint")
	return mux
}

// serveToken gives a visitor a waiting token, or returns the one they hold
// unchanged: refreshing costs nothing and changes nothing.
func (g *Gateway) serveToken(w http.ResponseWriter, r *http.Request) {
	now := g.now()
	if err := reply.Discard(w, r, g.cfg.MaxBodyBytes); err != nil {
		g.metrics.answeredBody(endpointToken, err)
		return
	}
	// Until the room has joined its store its state is the config's, not
	// the room's: it is not what a visitor is told.
	if g.shared.Joined() && g.shared.Room.State(now) == admission.StateClosed {
		g.metrics.answered(endpointToken, "closed", "closed")
		g.writeClosedJSON(w, r)
		return
	}
	who, lane, err := g.visitor(r, now)
	if err != nil {
		g.metrics.answered(endpointToken, "invalid", "login")
		writeError(w, http.StatusUnauthorized, "identity", "login required: "+err.Error())
		return
	}
	view := g.door.View(lane, now)
	if v, ok := httpwire.CookieValue(r, g.cookies.wait); ok && v != "" {
		// A valid token is returned unchanged, joined or not: it was
		// placed on the room's clock by a node that had joined.
		tk, err := g.door.Resume(lane, v, who, now)
		if err == nil {
			g.metrics.answered(endpointToken, "issued", "kept")
			g.writeWaitToken(w, r, http.StatusOK, tk, view, "")
			return
		}
		// An expired or foreign token just means a new one.
		g.log.Debug("replacing waiting token", zap.String("room", g.cfg.Room), zap.Error(err))
	}
	if !g.joinedOr503(w) {
		g.metrics.answered(endpointToken, "unavailable", "starting")
		return
	}
	tk, err := g.door.Issue(r.Context(), lane, who, now)
	if err != nil {
		g.metrics.answered(endpointToken, "error", "internal")
		g.log.Error("issuing token", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "internal", "could not issue a token")
		return
	}
	g.metrics.issued.Inc()
	g.metrics.answered(endpointToken, "issued", "new")
	g.writeWaitToken(w, r, http.StatusOK, tk, view, "")
}

// joinedOr503 answers 503 with Retry-After while the room has not joined
// its state store (whatever on_unavailable says): a token issued on the
// room's own clock would be read against the stored one once it joins,
// ahead of visitors already waiting; an admission judged on it could pass
// a visitor the room's clock has not reached, or whom a pause or close
// made through another node holds back (docs/SCALING.md, "Starting while
// the store is down").
func (g *Gateway) joinedOr503(w http.ResponseWriter) bool {
	if g.shared.Joined() {
		return true
	}
	w.Header().Set("Retry-After", "2")
	writeError(w, http.StatusServiceUnavailable, "unavailable", "the waiting room is starting; try again shortly")
	return false
}

func (g *Gateway) serveAdmit(w http.ResponseWriter, r *http.Request) {
	now := g.now()
	req, err := g.readAdmit(w, r)
	if err != nil {
		g.metrics.answeredBody(endpointAdmit, err)
		return
	}
	if !g.joinedOr503(w) {
		g.metrics.answered(endpointAdmit, "unavailable", "starting")
		return
	}
	token := req.Token
	if token == "" {
		token, _ = httpwire.CookieValue(r, g.cookies.wait)
	}
	if token == "" {
		g.metrics.answered(endpointAdmit, "invalid", "no_token")
		writeError(w, http.StatusBadRequest, "no_token", "no waiting token: POST "+g.cfg.Prefix+"/token first")
		return
	}
	// Every decision, the busy one included, is the gate's: the gateway only
	// carries it to HTTP.
	who, lane, err := g.visitor(r, now)
	if err != nil {
		g.metrics.answered(endpointAdmit, "invalid", "login")
		writeError(w, http.StatusUnauthorized, "identity", "login required: "+err.Error())
		return
	}
	view := g.door.View(lane, now)
	d := g.door.Decide(r.Context(), lane, admission.Attempt{Token: token, Nonce: req.Nonce, Visitor: who, Now: now})
	switch d.Outcome {
	case admission.OutcomeAdmit: // counted by admit: the hook may still refuse
		g.admit(w, r, lane, d, req.Return, now)
	case admission.OutcomeWait, admission.OutcomeBusy, admission.OutcomeEarly:
		g.metrics.answered(endpointAdmit, d.Outcome.String(), d.Outcome.String())
		g.writeWaitToken(w, r, http.StatusTooManyRequests, d.Next, view, d.Outcome.String())
	case admission.OutcomeInvalid:
		status, code := invalidStatus(d.Err)
		g.metrics.answered(endpointAdmit, "invalid", code)
		if code == "pow" {
			g.metrics.powFailures.Inc()
		}
		writeError(w, status, code, d.Err.Error())
	case admission.OutcomeReused:
		g.metrics.answered(endpointAdmit, "reused", "token_used")
		writeError(w, http.StatusConflict, "token_used", "this waiting token was already used; request a new one")
	case admission.OutcomeClosed:
		g.metrics.answered(endpointAdmit, "closed", "closed")
		g.writeClosedJSON(w, r)
	default:
		reason := "ledger"
		switch {
		case d.Outcome != admission.OutcomeUnavailable:
			reason = "unavailable"
		case r.Context().Err() != nil:
			// The visitor went away while its attempt waited: nothing
			// failed, and nobody reads the answer.
			g.metrics.answered(endpointAdmit, d.Outcome.String(), "canceled")
			writeError(w, http.StatusServiceUnavailable, "unavailable", "the request ended before its answer")
			return
		}
		g.metrics.answered(endpointAdmit, d.Outcome.String(), reason)
		g.log.Error("admission unavailable", zap.String("room", g.cfg.Room), zap.Error(d.Err))
		w.Header().Set("Retry-After", "2")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "admission is unavailable right now; your place is kept")
	}
}

// readAdmit reads an admit body; on failure it has answered 413 or 400.
func (g *Gateway) readAdmit(w http.ResponseWriter, r *http.Request) (admitRequest, error) {
	bp := reply.Body()
	defer reply.PutBody(bp)
	body, err := reply.ReadBody(w, r, g.cfg.MaxBodyBytes, (*bp)[:0])
	*bp = body[:0]
	if err != nil {
		return admitRequest{}, err
	}
	if req, ok := httpwire.ParseAdmit(body); ok {
		return req, nil
	}
	var req admitRequest
	return req, reply.Unmarshal(w, body, &req)
}

// admit completes an admission: the hook, then the pass cookie.
func (g *Gateway) admit(w http.ResponseWriter, r *http.Request, lane string, d admission.Decision, ret string, now time.Time) {
	pass, session := d.Pass, ""
	if g.hook != nil {
		res := g.hook.call(r.Context(), g.hookURL(r), g.cfg.Room, d.Pass, d.PassClaims)
		switch {
		case res.err == nil && res.admit:
			session = res.session
		case res.err == nil || g.hook.onFailure == "closed":
			// The seat service is full (409/429) or down with a closed
			// policy: back to waiting; the place keeps its admission as a
			// slot at its next checkpoint (Gate.Requeue).
			if res.err != nil {
				g.metrics.upstreamErrors.WithLabelValues("hook").Inc()
				g.log.Warn("admission hook failed; visitor keeps waiting", zap.String("room", g.cfg.Room), zap.Error(res.err))
			}
			if d.Again {
				// An earlier attempt with this token was admitted and its
				// pass may be out: the place stays used whatever the hook
				// says now (a requeue would release it for a second pass).
				g.refuseAgain(w, res.err)
				return
			}
			back := g.door.Requeue(r.Context(), lane, d, now)
			if back.Outcome != admission.OutcomeWait {
				g.metrics.answered(endpointAdmit, "unavailable", "requeue")
				w.Header().Set("Retry-After", "2")
				writeError(w, http.StatusServiceUnavailable, "unavailable", "admission is unavailable right now; your place is kept")
				return
			}
			g.metrics.answered(endpointAdmit, "deferred", hookReason(res.err))
			g.writeWaitToken(w, r, http.StatusTooManyRequests, back.Next, g.door.View(lane, now), "deferred")
			return
		default:
			g.metrics.upstreamErrors.WithLabelValues("hook").Inc()
			g.log.Warn("admission hook failed; admitting without a session (on_failure open)", zap.String("room", g.cfg.Room), zap.Error(res.err))
		}
	}
	if session != "" {
		d.PassClaims.Ses = session
		signed, err := g.door.SignPass(d.PassClaims)
		if err != nil {
			g.metrics.answered(endpointAdmit, "error", "internal")
			writeError(w, http.StatusInternalServerError, "internal", "could not sign the pass")
			return
		}
		pass = signed
	}
	if d.Again { // counted as an admission when it was made
		g.metrics.answered(endpointAdmit, "admit", "again")
	} else {
		g.countAdmission(r, d, now)
	}
	expires := d.PassClaims.Expiry()
	// An admission is the pass's first presentation: the visitor counts
	// as on the site before their first request reaches it.
	g.shared.See(d.PassClaims.ID, now)
	setCookie(w, r, g.cookies.pass, pass, expires, g.cfg.trusted)
	setCookie(w, r, g.cookies.wait, "", time.Unix(0, 0), g.cfg.trusted)
	writeJSON(w, http.StatusOK, admitResponse{Admitted: true, Redirect: safeReturn(ret), Pass: pass, Session: session, Expires: expires.Unix()})
}

// countAdmission records an admission made now in the metrics and OnAdmit.
func (g *Gateway) countAdmission(r *http.Request, d admission.Decision, now time.Time) {
	g.metrics.answered(endpointAdmit, "admit", "admitted")
	g.metrics.admissions.Inc()
	g.metrics.laneAdmissions.WithLabelValues(laneLabel(d.Claims.Lane)).Inc()
	g.shared.CountAdmitted(d.Claims.Lane)
	if d.Claims != nil {
		waited := max(0, now.Sub(time.Unix(d.Claims.IssuedAt, 0)))
		g.metrics.waited.Observe(waited.Seconds())
		if g.opts.OnAdmit != nil {
			g.opts.OnAdmit(r, waited)
		}
	}
}

// refuseAgain answers a repeated admission the hook turned away: 409 (the
// place is used, its first answer stands) or, if the hook failed, 503 to
// ask again later with the place still used.
func (g *Gateway) refuseAgain(w http.ResponseWriter, hookErr error) {
	if hookErr != nil {
		g.metrics.answered(endpointAdmit, "unavailable", "hook_failed")
		w.Header().Set("Retry-After", "2")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "admission is unavailable right now; your place is kept")
		return
	}
	g.metrics.answered(endpointAdmit, "reused", "hook_refused")
	writeError(w, http.StatusConflict, "token_used", "this waiting token was already used; request a new one")
}

// hookReason is the reason a visitor the hook did not take is counted
// under: refused (it answered full) or failed.
func hookReason(err error) string {
	if err != nil {
		return "hook_failed"
	}
	return "hook_refused"
}

type statusJSON struct {
	Room            string   `json:"room"`
	State           string   `json:"state"`
	Reason          string   `json:"reason,omitempty"`
	SaleStart       string   `json:"sale_start,omitempty"`
	Rate            float64  `json:"rate"`
	EstimateSeconds *float64 `json:"estimate_seconds,omitempty"`
	EstimateKnown   bool     `json:"estimate_known"`
	Waiting         float64  `json:"waiting"`
}

// serveStatus is the public room status, the same for everyone, cacheable
// for a second. Its figures are the admin API's (room.Shared.Status): the rate
// is the whole room's, not its default lane's share of it.
func (g *Gateway) serveStatus(w http.ResponseWriter, r *http.Request) {
	now := g.now()
	view := g.shared.Room.View(now)
	rate, _ := g.shared.TotalRate()
	st := statusJSON{Room: view.Name, State: string(view.State), Rate: rate, Waiting: math.Round(g.shared.Room.Population(now))}
	if view.State == admission.StateClosed {
		st.Reason = g.shared.ClosedReason()
	}
	if !view.SaleStart.IsZero() {
		st.SaleStart = view.SaleStart.UTC().Format(time.RFC3339)
	}
	if est, ok := view.EstimateWait(now); ok {
		secs := math.Round(est.Seconds())
		st.EstimateSeconds = &secs
		st.EstimateKnown = true
	}
	w.Header().Set("Cache-Control", "public, max-age=1")
	writeJSON(w, http.StatusOK, st)
}

func (g *Gateway) writeWaitToken(w http.ResponseWriter, r *http.Request, status int, tk admission.WaitToken, view admission.View, outcome string) {
	c := tk.Claims
	// The page waits Retry-After from the answer: counted from the
	// attempt, a decision that waited on the store (the start's crowd)
	// would send the page late by that wait.
	sent := g.now()
	retry := c.NextAttempt().Sub(sent)
	if !tk.Wake.IsZero() {
		retry = tk.Wake.Sub(sent) // sooner than nxt while scheduled
	}
	body := ticketJSON{
		Room: view.Name, Lane: c.Lane, State: string(view.State), Token: tk.Token,
		Challenge: c.Ch, Difficulty: c.Dif, NextAttempt: c.Nxt,
		RetryAfter: math.Max(0, retry.Seconds()), Outcome: outcome,
	}
	secs := math.Round(tk.Estimate.Seconds())
	if tk.EstimateKnown {
		body.EstimateSeconds = &secs
		body.EstimateKnown = true
	}
	if !view.SaleStart.IsZero() {
		body.SaleStart = view.SaleStart.UTC().Format(time.RFC3339)
	}
	// This is every waiting visitor's answer: its Vary, Set-Cookie and,
	// when it is told to wait, Retry-After in one array (answerHeaders).
	own := 2
	if status == http.StatusTooManyRequests {
		own++
	}
	h := answerHeaders{h: w.Header(), v: make([]string, 0, own)}
	l, varies := g.pages.LocaleFor(r)
	if varies {
		h.add("Vary", "Accept-Language")
	}
	body.Lang, body.Message = l.Name(), l.StateMessage(body.State, outcome, body.SaleStart)
	body.Estimate = l.WaitText(secs, tk.EstimateKnown)
	// The token is written twice, in the cookie and in the body, as it is:
	// a token the gate signed or verified is base64url and dots
	// (admission.WaitToken), plain cookie text that needs no escape.
	body.TokenPlain = true
	addCookie(&h, r, g.cookies.wait, tk.Token, body.TokenPlain, c.Expiry(), g.cfg.trusted)
	// no-store, whatever a handler before this one set: reply.Raw, which
	// every answer here goes through, writes it when none is set.
	delete(h.h, "Cache-Control")
	if status == http.StatusTooManyRequests {
		h.set("Retry-After", strconv.Itoa(int(math.Ceil(math.Max(1, retry.Seconds())))))
	}
	httpwire.WriteTicket(w, status, &body)
}

// writeClosedJSON is the closed answer for apps: the error, and the
// closed page's text in the visitor's language.
func (g *Gateway) writeClosedJSON(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Retry-After", "60")
	reason := g.shared.ClosedReason()
	msg := "the waiting room is closed"
	if reason == "sold_out" {
		msg = "sold out"
	}
	l, _ := g.pages.LocaleFor(r)
	writeJSON(w, http.StatusServiceUnavailable, struct {
		Error errorBody   `json:"error"`
		Page  *pages.JSON `json:"page"`
	}{errorBody{Code: "closed", Message: msg, Reason: reason}, pages.ClosedJSON(l, reason == "sold_out")})
}

// invalidStatus maps a rejection to the statuses of docs/DESIGN.md, "The gateway".
func invalidStatus(err error) (int, string) {
	switch {
	case errors.Is(err, tokens.ErrMalformed), errors.Is(err, tokens.ErrNonceMalformed):
		return http.StatusBadRequest, "malformed"
	case errors.Is(err, tokens.ErrWorkInsufficient):
		return http.StatusForbidden, "pow"
	case errors.Is(err, admission.ErrIdentity):
		return http.StatusForbidden, "identity"
	case errors.Is(err, admission.ErrLane):
		return http.StatusForbidden, "lane"
	default: // signature, algorithm, key, audience, expiry, claims
		return http.StatusUnauthorized, "token_invalid"
	}
}

// safeReturn keeps redirects on this site: a path, not a URL. Browsers
// drop tabs and newlines and read a backslash as a slash, so `/\t/evil.example`
// is another host to them: any control character or backslash is refused,
// as is whatever net/url does not read as a bare path.
func safeReturn(ret string) string {
	if !strings.HasPrefix(ret, "/") || strings.HasPrefix(ret, "//") || strings.ContainsRune(ret, '\\') ||
		strings.ContainsFunc(ret, unicode.IsControl) {
		return "/"
	}
	u, err := url.Parse(ret)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return "/"
	}
	return ret
}

// serveAsset serves an embedded asset at assets/<version>/<name>.
func serveAsset(w http.ResponseWriter, r *http.Request, rest string) {
	if !pages.ServeAsset(w, r, rest) {
		writeError(w, http.StatusNotFound, "not_found", "no such asset")
	}
}
