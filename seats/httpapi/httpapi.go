// Package httpapi serves the seat service's JSON API (docs/DESIGN.md, "The
// seat API"): events and seat maps for everyone, cacheable; sessions, holds,
// checkout and confirmation for admitted visitors with a valid pass.
package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/seats"
)

// PassHeader carries the gateway's pass, as the gateway forwards it.
const PassHeader = "Fairgate-Pass"

// Config configures the API.
type Config struct {
	// Codec verifies passes with the gateway's keys; Room is their audience.
	Codec *admission.Codec
	Room  string
	// DefaultEvent is the event of a session opened without naming one
	// (the admission hook does not).
	DefaultEvent string
	// AdminToken guards event creation.
	AdminToken string
	// MaxEventBytes bounds an event import. Default 16 MiB.
	MaxEventBytes int64
	Logger        *zap.Logger
}

// API is the seat service's HTTP handler.
type API struct {
	svc *seats.Service
	cfg Config
	mux *http.ServeMux
}

// New returns the API over a service.
func New(svc *seats.Service, cfg Config) *API {
	if cfg.MaxEventBytes == 0 {
		cfg.MaxEventBytes = 16 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	a := &API{svc: svc, cfg: cfg, mux: http.NewServeMux()}
	a.mux.HandleFunc("POST /api/events", a.createEvent)
	a.mux.HandleFunc("GET /api/events/{event}", a.event)
	a.mux.HandleFunc("GET /api/events/{event}/sections/{section}", a.section)
	a.mux.HandleFunc("POST /api/sessions", a.idempotent(a.openSession))
	a.mux.HandleFunc("GET /api/sessions/{id}", a.session)
	a.mux.HandleFunc("POST /api/sessions/{id}/holds", a.idempotent(a.hold))
	a.mux.HandleFunc("DELETE /api/sessions/{id}/holds/{seat}", a.idempotent(a.release))
	a.mux.HandleFunc("POST /api/sessions/{id}/checkout", a.idempotent(a.checkout))
	a.mux.HandleFunc("POST /api/sessions/{id}/confirm", a.idempotent(a.confirm))
	a.mux.HandleFunc("DELETE /api/sessions/{id}", a.idempotent(a.cancel))
	a.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint", nil)
	})
	return a
}

// ServeHTTP implements http.Handler.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

type errorBody struct {
	Error struct {
		Code    string   `json:"code"`
		Message string   `json:"message"`
		Seats   []string `json:"seats,omitempty"`
		Session string   `json:"session,omitempty"`
	} `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	if w.Header().Get("Cache-Control") == "" {
		w.Header().Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string, seatIDs []string) {
	var b errorBody
	b.Error.Code, b.Error.Message, b.Error.Seats = code, msg, seatIDs
	writeJSON(w, status, b)
}

// fail maps a domain error to the statuses of docs/DESIGN.md, "The seat API".
func (a *API) fail(w http.ResponseWriter, err error) {
	var taken *seats.TakenError
	var exists *seats.SessionExistsError
	switch {
	case errors.As(err, &taken):
		writeError(w, http.StatusConflict, "seat_taken", "some seats are no longer available", taken.Seats)
	case errors.As(err, &exists):
		var b errorBody
		b.Error.Code, b.Error.Message, b.Error.Session = "session_exists", err.Error(), exists.Session
		writeJSON(w, http.StatusConflict, b)
	case errors.Is(err, seats.ErrTokenUsed):
		writeError(w, http.StatusConflict, "token_used", err.Error(), nil)
	case errors.Is(err, seats.ErrExists):
		writeError(w, http.StatusConflict, "exists", err.Error(), nil)
	case errors.Is(err, seats.ErrState), errors.Is(err, seats.ErrNotHeld):
		writeError(w, http.StatusConflict, "state", err.Error(), nil)
	case errors.Is(err, seats.ErrInvalid):
		writeError(w, http.StatusBadRequest, "invalid", err.Error(), nil)
	case errors.Is(err, seats.ErrForbidden):
		writeError(w, http.StatusForbidden, "forbidden", err.Error(), nil)
	case errors.Is(err, seats.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", err.Error(), nil)
	case errors.Is(err, seats.ErrExpired):
		writeError(w, http.StatusGone, "expired", err.Error(), nil)
	case errors.Is(err, seats.ErrLimit):
		writeError(w, http.StatusUnprocessableEntity, "limit", err.Error(), nil)
	case errors.Is(err, seats.ErrThrottled):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "throttled", err.Error(), nil)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the store did not answer in time", nil)
	default:
		a.cfg.Logger.Error("seat service failure", zap.Error(err))
		w.Header().Set("Retry-After", "2")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the seat store is unavailable", nil)
	}
}

// decode reads a bounded JSON body, answering 400 or 413 itself.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", "request body too large", nil)
		} else {
			writeError(w, http.StatusBadRequest, "malformed", "body is not the expected JSON: "+err.Error(), nil)
		}
		return false
	}
	return true
}

func (a *API) createEvent(w http.ResponseWriter, r *http.Request) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if a.cfg.AdminToken == "" || !ok || subtle.ConstantTimeCompare([]byte(got), []byte(a.cfg.AdminToken)) != 1 {
		writeError(w, http.StatusUnauthorized, "unauthorized", "creating events needs the admin token", nil)
		return
	}
	var ev seats.Event
	if !decode(w, r, a.cfg.MaxEventBytes, &ev) {
		return
	}
	ev, err := a.svc.CreateEvent(r.Context(), ev)
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": ev.ID, "sections": len(ev.Sections)})
}

// eventView is an event with live counts, without its seat layout.
type eventView struct {
	ID       string        `json:"id"`
	Name     string        `json:"name"`
	StartsAt time.Time     `json:"starts_at,omitzero"`
	MaxSeats int           `json:"max_seats_per_session"`
	Sections []sectionView `json:"sections"`
}

type sectionView struct {
	ID       string       `json:"id"`
	Name     string       `json:"name"`
	Category string       `json:"category,omitempty"`
	Price    int64        `json:"price"`
	Hot      bool         `json:"hot,omitempty"`
	Shape    string       `json:"shape,omitempty"`
	Counts   seats.Counts `json:"counts"`
}

func (a *API) event(w http.ResponseWriter, r *http.Request) {
	ev, counts, err := a.svc.EventCounts(r.Context(), r.PathValue("event"))
	if err != nil {
		a.fail(w, err)
		return
	}
	v := eventView{ID: ev.ID, Name: ev.Name, StartsAt: ev.StartsAt, MaxSeats: ev.MaxSeats}
	for _, s := range ev.Sections {
		v.Sections = append(v.Sections, sectionView{ID: s.ID, Name: s.Name, Category: s.Category, Price: s.Price, Hot: s.Hot, Shape: s.Shape, Counts: counts[s.ID]})
	}
	cacheable(w, r, v, 2)
}

func (a *API) section(w http.ResponseWriter, r *http.Request) {
	sec, list, err := a.svc.SectionMap(r.Context(), r.PathValue("event"), r.PathValue("section"))
	if err != nil {
		a.fail(w, err)
		return
	}
	for i := range list {
		list[i].Session = "" // whose lock it is is nobody else's business
	}
	maxAge := 2
	if sec.Hot {
		maxAge = 1
	}
	cacheable(w, r, map[string]any{"section": sec.ID, "name": sec.Name, "price": sec.Price, "seats": list}, maxAge)
}

// cacheable writes a public answer the gateway's cache may keep for
// s-maxage seconds, with an ETag.
func cacheable(w http.ResponseWriter, r *http.Request, v any, sMaxAge int) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", "encoding failed", nil)
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
	h := w.Header()
	h.Set("Cache-Control", fmt.Sprintf("public, max-age=0, s-maxage=%d", sMaxAge))
	h.Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
}

// pass verifies the request's pass, answering 401 itself.
func (a *API) pass(w http.ResponseWriter, r *http.Request, now time.Time) (*admission.PassClaims, bool) {
	token := r.Header.Get(PassHeader)
	if token == "" {
		writeError(w, http.StatusUnauthorized, "no_pass", "this needs a pass from the waiting room", nil)
		return nil, false
	}
	claims, err := a.cfg.Codec.ParsePass(token, a.cfg.Room, now)
	if err != nil {
		writeError(w, http.StatusUnauthorized, "bad_pass", "the pass does not verify: "+err.Error(), nil)
		return nil, false
	}
	return claims, true
}

// request is what an idempotent handler gets: the verified pass, the
// request's clock (the claim time of its idempotency key, so a retry writes
// exactly the same) and the store token derived from the key.
type request struct {
	pass  *admission.PassClaims
	now   time.Time
	token string
	body  []byte
}

type handler func(w http.ResponseWriter, r *http.Request, req request)

// idempotent verifies the pass and gives a write Idempotency-Key
// semantics: the first request with a key runs and its answer is kept; a
// retry gets the same answer and changes nothing more; the same key with
// another body is refused.
func (a *API) idempotent(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		now := a.svc.Now()
		claims, ok := a.pass(w, r, now)
		if !ok {
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
		if err != nil {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", "request body too large", nil)
			return
		}
		req := request{pass: claims, now: now, body: body}
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			h(w, r, req)
			return
		}
		if len(key) > 200 {
			writeError(w, http.StatusBadRequest, "invalid", "Idempotency-Key is at most 200 characters", nil)
			return
		}
		scope := sha256.Sum256([]byte(claims.Subject + "\x00" + r.Method + "\x00" + r.URL.Path + "\x00" + key))
		scoped := hex.EncodeToString(scope[:16])
		fp := sha256.Sum256(body)
		fingerprint := hex.EncodeToString(fp[:16])
		rec, claimed, err := a.svc.Store().ClaimKey(r.Context(), scoped, now)
		if err != nil {
			a.fail(w, err)
			return
		}
		if !claimed {
			switch {
			case rec.Status == 0:
				w.Header().Set("Retry-After", "1")
				writeError(w, http.StatusConflict, "in_progress", "a request with this Idempotency-Key is in progress", nil)
			case rec.Fingerprint != fingerprint:
				writeError(w, http.StatusUnprocessableEntity, "key_reused", "this Idempotency-Key was used for a different request", nil)
			default:
				w.Header().Set("Idempotent-Replayed", "true")
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Cache-Control", "no-store")
				w.WriteHeader(rec.Status)
				_, _ = w.Write(rec.Body)
			}
			return
		}
		req.now, req.token = rec.ClaimedAt, scoped
		rw := &capture{ResponseWriter: w}
		h(rw, r, req)
		if err := a.svc.Store().CompleteKey(context.WithoutCancel(r.Context()), scoped,
			seats.KeyRecord{ClaimedAt: rec.ClaimedAt, Fingerprint: fingerprint, Status: rw.status, Body: rw.body.Bytes()}); err != nil {
			a.cfg.Logger.Error("storing idempotent answer", zap.Error(err))
		}
	}
}

// capture keeps a copy of what a handler wrote.
type capture struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *capture) WriteHeader(status int) {
	c.status = status
	c.ResponseWriter.WriteHeader(status)
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.body.Write(p)
	return c.ResponseWriter.Write(p)
}

func unmarshal(w http.ResponseWriter, body []byte, v any) bool {
	if len(bytes.TrimSpace(body)) == 0 {
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "malformed", "body is not the expected JSON: "+err.Error(), nil)
		return false
	}
	return true
}

// openSession is also the gateway's admission hook: the pass comes in the
// header, the body is optional ({"event": ...}; the hook sends room, sub
// and wid, which the pass already says).
func (a *API) openSession(w http.ResponseWriter, r *http.Request, req request) {
	var body struct {
		Event string `json:"event"`
		Room  string `json:"room"`
		Sub   string `json:"sub"`
		Wid   string `json:"wid"`
	}
	if !unmarshal(w, req.body, &body) {
		return
	}
	event := firstNonEmpty(body.Event, r.URL.Query().Get("event"), a.cfg.DefaultEvent)
	if event == "" {
		writeError(w, http.StatusBadRequest, "invalid", "name the event", nil)
		return
	}
	sess, err := a.svc.OpenSession(r.Context(), event, req.pass.Subject, req.pass.Wid, req.now)
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, sessionView(sess))
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// reply returns the answer to a session call: the session, or the
// error's status. It takes the call's two results directly:
// a.reply(w)(a.svc.Checkout(…)).
func (a *API) reply(w http.ResponseWriter) func(seats.Session, error) {
	return func(sess seats.Session, err error) {
		if err != nil {
			a.fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, sessionView(sess))
	}
}

// view is a session as the API shows it.
type view struct {
	seats.Session
	SessionID string `json:"session"`
}

func sessionView(s seats.Session) view { return view{Session: s, SessionID: s.ID} }

func (a *API) session(w http.ResponseWriter, r *http.Request) {
	now := a.svc.Now()
	claims, ok := a.pass(w, r, now)
	if !ok {
		return
	}
	a.reply(w)(a.svc.Session(r.Context(), r.PathValue("id"), claims.Subject))
}

func (a *API) hold(w http.ResponseWriter, r *http.Request, req request) {
	var body struct {
		Seats []string `json:"seats"`
		Best  *struct {
			Count    int      `json:"count"`
			Sections []string `json:"sections"`
		} `json:"best"`
	}
	if !unmarshal(w, req.body, &body) {
		return
	}
	var sess seats.Session
	var err error
	switch {
	case body.Best != nil && len(body.Seats) == 0:
		sess, err = a.svc.HoldBest(r.Context(), r.PathValue("id"), req.pass.Subject, body.Best.Count, body.Best.Sections, req.now, req.token)
	case body.Best == nil && len(body.Seats) > 0:
		sess, err = a.svc.HoldSeats(r.Context(), r.PathValue("id"), req.pass.Subject, body.Seats, req.now, req.token)
	default:
		writeError(w, http.StatusBadRequest, "invalid", `send {"seats":[...]} or {"best":{"count":N}}`, nil)
		return
	}
	a.reply(w)(sess, err)
}

func (a *API) release(w http.ResponseWriter, r *http.Request, req request) {
	a.reply(w)(a.svc.ReleaseSeat(r.Context(), r.PathValue("id"), req.pass.Subject, r.PathValue("seat"), req.now))
}

func (a *API) checkout(w http.ResponseWriter, r *http.Request, req request) {
	a.reply(w)(a.svc.Checkout(r.Context(), r.PathValue("id"), req.pass.Subject, req.now, req.token))
}

func (a *API) confirm(w http.ResponseWriter, r *http.Request, req request) {
	var body struct {
		PaymentRef string `json:"payment_ref"`
	}
	if !unmarshal(w, req.body, &body) {
		return
	}
	a.reply(w)(a.svc.Confirm(r.Context(), r.PathValue("id"), req.pass.Subject, body.PaymentRef, req.now, req.token))
}

func (a *API) cancel(w http.ResponseWriter, r *http.Request, req request) {
	a.reply(w)(a.svc.Cancel(r.Context(), r.PathValue("id"), req.pass.Subject, req.now, req.token))
}
