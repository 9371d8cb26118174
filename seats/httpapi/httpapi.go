// Package httpapi serves the seat service's JSON API (docs/DESIGN.md, "The
// seat API"): events and seat maps for everyone, cacheable; sessions, holds,
// checkout and confirmation for admitted visitors with a valid pass.
package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/internal/bearer"
	"github.com/fairgate/fairgate/internal/etag"
	"github.com/fairgate/fairgate/internal/reply"
	"github.com/fairgate/fairgate/seats"
	"go.uber.org/zap"
)

// PassHeader carries the gateway's pass, as the gateway forwards it.
const PassHeader = "Fairgate-Pass"

// PaymentSignatureHeader carries the payment's proof on a confirm: the hex
// HMAC-SHA256, under Config.PaymentKey, of "<session>\n<payment_ref>". Only
// the payment provider's callback or the shop's backend holds the key, so a
// visitor cannot confirm without paying.
const PaymentSignatureHeader = "Fairgate-Payment-Signature"

// SignPayment is the signature a payment provider or shop backend sends
// with a confirm.
func SignPayment(key []byte, session, paymentRef string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(session + "\n" + paymentRef))
	return hex.EncodeToString(m.Sum(nil))
}

// Config configures the API.
type Config struct {
	// Codec verifies passes with the gateway's keys; Room is their audience.
	Codec *tokens.Codec
	Room  string
	// DefaultEvent is the event of a session opened without naming one
	// (the admission hook does not).
	DefaultEvent string
	// Events are the events the room's passes may open sessions for; a
	// pass for any other event is refused with 403. Default: DefaultEvent
	// alone. A room bound to no event at all opens sessions for none.
	Events []string
	// WriteTimeout bounds a write once it has started: it runs to its end
	// (or this deadline) even if the client goes away, so its answer can
	// be kept for the client's retry. Default 10s.
	WriteTimeout time.Duration
	// PaymentKey authenticates confirmations (PaymentSignatureHeader). With
	// none, every confirm is refused: `fairgate seats` will not start
	// without one.
	PaymentKey []byte
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
	// passes caches verified passes by their text until they expire: every
	// write checks one, and a signature check costs more than the hold. A
	// pass signed by a key since removed stays good until its exp, as at
	// the gateway's own cache.
	passes *ristretto.Cache[string, *tokens.PassClaims]
}

// New returns the API over a service.
func New(svc *seats.Service, cfg Config) *API {
	if cfg.MaxEventBytes == 0 {
		cfg.MaxEventBytes = 16 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if len(cfg.Events) == 0 && cfg.DefaultEvent != "" {
		cfg.Events = []string{cfg.DefaultEvent}
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	passes, err := ristretto.NewCache(&ristretto.Config[string, *tokens.PassClaims]{NumCounters: 1 << 18, MaxCost: 1 << 15, BufferItems: 64, IgnoreInternalCost: true})
	if err != nil {
		panic(fmt.Sprintf("pass cache: %v", err)) // constant, valid configuration
	}
	a := &API{svc: svc, cfg: cfg, mux: http.NewServeMux(), passes: passes}
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

// writeError answers an error (internal/reply), naming the seats lost to
// another buyer, if any.
func writeError(w http.ResponseWriter, status int, code, msg string, seatIDs []string) {
	reply.Fail(w, status, reply.Error{Code: code, Message: msg, Seats: seatIDs})
}

// fail maps a domain error to the statuses of docs/DESIGN.md, "The seat API".
func (a *API) fail(w http.ResponseWriter, err error) {
	var taken *seats.TakenError
	var exists *seats.SessionExistsError
	switch {
	case errors.As(err, &taken):
		writeError(w, http.StatusConflict, "seat_taken", "some seats are no longer available", taken.Seats)
	case errors.As(err, &exists):
		reply.Fail(w, http.StatusConflict, reply.Error{Code: "session_exists", Message: err.Error(), Session: exists.Session})
	case errors.Is(err, seats.ErrTokenUsed):
		writeError(w, http.StatusConflict, "token_used", err.Error(), nil)
	case errors.Is(err, seats.ErrExists):
		writeError(w, http.StatusConflict, "exists", err.Error(), nil)
	case errors.Is(err, seats.ErrState), errors.Is(err, seats.ErrNotHeld):
		writeError(w, http.StatusConflict, "state", err.Error(), nil)
	case errors.Is(err, seats.ErrInvalid):
		writeError(w, http.StatusBadRequest, "invalid", err.Error(), nil)
	case errors.Is(err, seats.ErrUnknownSeat):
		writeError(w, http.StatusNotFound, "unknown_seat", err.Error(), nil)
	case errors.Is(err, seats.ErrForbidden):
		writeError(w, http.StatusForbidden, "forbidden", err.Error(), nil)
	case errors.Is(err, seats.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", err.Error(), nil)
	case errors.Is(err, seats.ErrExpired):
		writeError(w, http.StatusGone, "expired", err.Error(), nil)
	case errors.Is(err, seats.ErrLimit):
		writeError(w, http.StatusUnprocessableEntity, "limit", err.Error(), nil)
	case errors.Is(err, seats.ErrKeyUsed):
		if c, ok := w.(*capture); ok {
			c.keyUsed = true
		}
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusConflict, "in_progress", "a request with this Idempotency-Key is in progress", nil)
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

func (a *API) createEvent(w http.ResponseWriter, r *http.Request) {
	if !bearer.Matches(r, a.cfg.AdminToken) {
		writeError(w, http.StatusUnauthorized, "unauthorized", "creating events needs the admin token", nil)
		return
	}
	var ev seats.Event
	if reply.Decode(w, r, a.cfg.MaxEventBytes, &ev) != nil {
		return
	}
	ev, err := a.svc.CreateEvent(r.Context(), ev)
	if err != nil {
		a.fail(w, err)
		return
	}
	reply.JSON(w, http.StatusCreated, map[string]any{"id": ev.ID, "sections": len(ev.Sections)})
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
	tag := etag.Of(body)
	h := w.Header()
	h.Set("Cache-Control", fmt.Sprintf("public, max-age=0, s-maxage=%d", sMaxAge))
	h.Set("ETag", tag)
	if etag.Matches(r.Header.Get("If-None-Match"), tag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	reply.Raw(w, http.StatusOK, append(body, '\n'))
}

// pass verifies the request's pass, answering 401 itself.
func (a *API) pass(w http.ResponseWriter, r *http.Request, now time.Time) (*tokens.PassClaims, bool) {
	text := r.Header.Get(PassHeader)
	if text == "" {
		writeError(w, http.StatusUnauthorized, "no_pass", "this needs a pass from the waiting room", nil)
		return nil, false
	}
	if claims, ok := a.passes.Get(text); ok && now.Before(claims.Expiry()) {
		return claims, true
	}
	claims, err := a.cfg.Codec.ParsePass(text, a.cfg.Room, now)
	if err != nil {
		writeError(w, http.StatusUnauthorized, "bad_pass", "the pass does not verify: "+err.Error(), nil)
		return nil, false
	}
	if claims.Subject == "" {
		writeError(w, http.StatusUnauthorized, "bad_pass", "the pass names no visitor (sub)", nil)
		return nil, false
	}
	a.passes.SetWithTTL(text, claims, 1, claims.Expiry().Sub(now))
	return claims, true
}

// request is what a write handler gets: the context its write runs in
// (detached from the client, bounded by WriteTimeout: the handler uses it,
// not the request's), the verified pass, the request's clock and, with an
// Idempotency-Key, the key the store commits with the write.
type request struct {
	ctx  context.Context
	pass *tokens.PassClaims
	now  time.Time
	key  *seats.Idempotency
	body []byte
}

type handler func(w http.ResponseWriter, r *http.Request, req request)

// idempotent verifies the pass and runs a write detached from the
// client's cancellation (bounded by WriteTimeout), with Idempotency-Key
// semantics: the store commits the key's record in the write's own
// transaction, so a retry after a crash or a timeout gets the original
// answer (a confirm's reservation id) and changes nothing more; a refusal
// is kept too; a 5xx or 429 never is, so a retry runs again. The same key
// with another body is refused. The record is read only when the write (or
// the storing of a refusal) reports the key used: a first try, the common
// case, costs no read of it.
func (a *API) idempotent(h handler) http.HandlerFunc {
	const maxWriteBody = 64 << 10
	return func(w http.ResponseWriter, r *http.Request) {
		now := a.svc.Now()
		claims, ok := a.pass(w, r, now)
		if !ok {
			return
		}
		if reply.CheckLength(w, r, maxWriteBody) != nil {
			return
		}
		bp := reply.Body()
		defer reply.PutBody(bp)
		body, err := reply.AppendAll((*bp)[:0], http.MaxBytesReader(w, r.Body, maxWriteBody))
		*bp = body
		if err != nil {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", "request body too large", nil)
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), a.cfg.WriteTimeout)
		defer cancel()
		req := request{ctx: ctx, pass: claims, now: now, body: body}
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			h(w, r, req)
			return
		}
		if len(key) > 200 {
			writeError(w, http.StatusBadRequest, "invalid", "Idempotency-Key is at most 200 characters", nil)
			return
		}
		scope := sha256.Sum256(appendScope(make([]byte, 0, 256), claims.Subject, r.Method, r.URL.Path, key))
		scoped := hex.EncodeToString(scope[:16])
		fp := sha256.Sum256(body)
		fingerprint := hex.EncodeToString(fp[:16])
		req.key = &seats.Idempotency{Key: scoped, Fingerprint: fingerprint, Status: http.StatusOK}
		rw := newCapture(w)
		defer rw.free()
		h(rw, r, req)
		switch {
		case rw.keyUsed: // another try of this request committed first
			if a.replay(ctx, w, scoped, fingerprint) {
				return
			}
		case final(rw.status) && rw.status >= 400:
			err := a.svc.Store().PutKey(ctx, scoped, seats.KeyRecord{ClaimedAt: now.UTC(), Fingerprint: fingerprint, Status: rw.status, Body: rw.body.Bytes()})
			if errors.Is(err, seats.ErrKeyUsed) && a.replay(ctx, w, scoped, fingerprint) {
				return
			}
			if err != nil && !errors.Is(err, seats.ErrKeyUsed) {
				a.cfg.Logger.Warn("storing an idempotent refusal", zap.Error(err))
			}
		}
		rw.flush()
	}
}

// appendScope appends what an Idempotency-Key is scoped to: the visitor,
// the method and the path, and the key itself, NUL-separated.
func appendScope(b []byte, subject, method, path, key string) []byte {
	b = append(append(b, subject...), 0)
	b = append(append(b, method...), 0)
	b = append(append(b, path...), 0)
	return append(b, key...)
}

// final reports whether an answer is kept for retries: not a failure of
// the service (5xx) nor a request to slow down (429).
func final(status int) bool { return status < 500 && status != http.StatusTooManyRequests }

// replay answers from the key's record, if it has one.
func (a *API) replay(ctx context.Context, w http.ResponseWriter, key, fingerprint string) bool {
	rec, found, err := a.svc.Store().Key(ctx, key)
	if err != nil {
		a.fail(w, err)
		return true
	}
	if !found {
		return false
	}
	if rec.Fingerprint != fingerprint {
		writeError(w, http.StatusUnprocessableEntity, "key_reused", "this Idempotency-Key was used for a different request", nil)
		return true
	}
	w.Header().Set("Idempotent-Replayed", "true")
	if rec.Session != nil {
		writeSession(w, rec.Status, rec.Session)
		return true
	}
	reply.Raw(w, rec.Status, rec.Body)
	return true
}

// capture holds a handler's answer until the idempotency record is
// settled. A success (< 400) has nothing left to settle (its record
// committed with the write), so it goes straight through to w.
type capture struct {
	w       http.ResponseWriter
	header  http.Header
	status  int
	passed  bool // the answer went straight to w
	body    bytes.Buffer
	keyUsed bool
}

// captures are reused: every keyed write takes one. One that held a
// large answer is not kept.
var captures = sync.Pool{New: func() any { return &capture{header: http.Header{}} }}

const maxPooledCapture = 16 << 10

func newCapture(w http.ResponseWriter) *capture {
	c := captures.Get().(*capture)
	c.w = w
	return c
}

// free returns c to the pool once its answer is written. The header's
// values went to w, which keeps them: only the map is cleared.
func (c *capture) free() {
	if c.body.Cap() > maxPooledCapture {
		return
	}
	clear(c.header)
	c.w, c.status, c.passed, c.keyUsed = nil, 0, false, false
	c.body.Reset()
	captures.Put(c)
}

func (c *capture) Header() http.Header { return c.header }

func (c *capture) WriteHeader(status int) {
	if c.status != 0 {
		return
	}
	c.status = status
	if status < 400 && !c.keyUsed {
		h := c.w.Header()
		for k, v := range c.header {
			h[k] = v
		}
		c.w.WriteHeader(status)
		c.passed = true
	}
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if c.passed {
		return c.w.Write(p)
	}
	return c.body.Write(p)
}

// flush writes a held answer to w.
func (c *capture) flush() {
	if c.passed {
		return
	}
	for k, v := range c.header {
		c.w.Header()[k] = v
	}
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.w.WriteHeader(c.status)
	_, _ = c.w.Write(c.body.Bytes())
}

// unmarshal decodes an optional body: empty is the zero value.
func unmarshal(w http.ResponseWriter, body []byte, v any) bool {
	if len(bytes.TrimSpace(body)) == 0 {
		return true
	}
	return reply.Unmarshal(w, body, v) == nil
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
	event := cmp.Or(body.Event, r.URL.Query().Get("event"), a.cfg.DefaultEvent)
	if event == "" {
		writeError(w, http.StatusBadRequest, "invalid", "name the event", nil)
		return
	}
	if !slices.Contains(a.cfg.Events, event) {
		writeError(w, http.StatusForbidden, "wrong_event", fmt.Sprintf("a pass of room %s does not open sessions for event %s", a.cfg.Room, event), nil)
		return
	}
	if req.key != nil {
		req.key.Status = http.StatusCreated
	}
	sess, err := a.svc.OpenSession(req.ctx, event, req.pass.Subject, req.pass.Wid, req.now, req.key)
	if err != nil {
		a.fail(w, err)
		return
	}
	writeSession(w, http.StatusCreated, &sess)
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
		writeSession(w, http.StatusOK, &sess)
	}
}

// writeSession answers with a session as the API shows it: its fields and
// its id again as "session", the bytes reply.JSON writes for
// struct{seats.Session; SessionID string `json:"session"`} (TestWriteSession),
// encoded by hand: every write answers with one.
func writeSession(w http.ResponseWriter, status int, s *seats.Session) {
	bp := answers.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledAnswer {
			answers.Put(bp)
		}
	}()
	b, err := seats.AppendSessionJSON((*bp)[:0], s)
	if err != nil {
		reply.EncodingFailed(w)
		return
	}
	b = seats.AppendJSONString(append(b[:len(b)-1], `,"session":`...), s.ID)
	b = append(b, "}\n"...)
	*bp = b
	reply.Raw(w, status, b)
}

// answers are reused buffers for writeSession; one over maxPooledAnswer (a
// session holding an unusual number of seats) is not kept.
var answers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooledAnswer = 16 << 10

func (a *API) session(w http.ResponseWriter, r *http.Request) {
	now := a.svc.Now()
	claims, ok := a.pass(w, r, now)
	if !ok {
		return
	}
	a.reply(w)(a.svc.Session(r.Context(), r.PathValue("id"), claims.Subject))
}

// holdBody is a hold's body: the seats, or a best-available request.
type holdBody struct {
	Seats []string `json:"seats"`
	Best  *struct {
		Count    int      `json:"count"`
		Sections []string `json:"sections"`
	} `json:"best"`
}

func (a *API) hold(w http.ResponseWriter, r *http.Request, req request) {
	var body holdBody
	if seatIDs, ok := plainSeats(req.body); ok {
		body.Seats = seatIDs
	} else if !unmarshal(w, req.body, &body) {
		return
	}
	var sess seats.Session
	var err error
	switch {
	case body.Best != nil && len(body.Seats) == 0:
		sess, err = a.svc.HoldBest(req.ctx, r.PathValue("id"), req.pass.Subject, body.Best.Count, body.Best.Sections, req.now, req.key)
	case body.Best == nil && len(body.Seats) > 0:
		sess, err = a.svc.HoldSeats(req.ctx, r.PathValue("id"), req.pass.Subject, body.Seats, req.now, req.key)
	default:
		writeError(w, http.StatusBadRequest, "invalid", `send {"seats":[...]} or {"best":{"count":N}}`, nil)
		return
	}
	a.reply(w)(sess, err)
}

// plainSeats reads the body a seat map sends with every hold,
// {"seats":["id",...]} written compactly, each id printable ASCII without
// escapes, and optional whitespace at the end, without encoding/json's
// reflection, which took a tenth of the handler's time. It decodes what
// encoding/json would; any other body (spaces, escapes, other fields, no
// seats) reports false, for the general decoder.
func plainSeats(body []byte) ([]string, bool) {
	b, ok := bytes.CutPrefix(body, []byte(`{"seats":[`))
	if !ok {
		return nil, false
	}
	var ids []string
	for {
		id, rest, ok := plainString(b)
		if !ok {
			return nil, false
		}
		ids = append(ids, id)
		if len(rest) > 0 && rest[0] == ',' {
			b = rest[1:]
			continue
		}
		end, ok := bytes.CutPrefix(rest, []byte("]}"))
		if !ok || !isJSONSpace(end) {
			return nil, false
		}
		return ids, true
	}
}

// plainString reads a JSON string at b's start whose bytes are printable
// ASCII other than a backslash (so it means itself), and returns it with
// what follows it.
func plainString(b []byte) (s string, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return string(b[1:i]), b[i+1:], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return "", nil, false
		}
	}
	return "", nil, false
}

// isJSONSpace reports whether b is only JSON's whitespace.
func isJSONSpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

func (a *API) release(w http.ResponseWriter, r *http.Request, req request) {
	a.reply(w)(a.svc.ReleaseSeat(req.ctx, r.PathValue("id"), req.pass.Subject, r.PathValue("seat"), req.now, req.key))
}

func (a *API) checkout(w http.ResponseWriter, r *http.Request, req request) {
	a.reply(w)(a.svc.Checkout(req.ctx, r.PathValue("id"), req.pass.Subject, req.now, req.key))
}

func (a *API) confirm(w http.ResponseWriter, r *http.Request, req request) {
	var body struct {
		PaymentRef string `json:"payment_ref"`
	}
	if !unmarshal(w, req.body, &body) {
		return
	}
	got, err := hex.DecodeString(r.Header.Get(PaymentSignatureHeader))
	want, _ := hex.DecodeString(SignPayment(a.cfg.PaymentKey, r.PathValue("id"), body.PaymentRef))
	if len(a.cfg.PaymentKey) == 0 || err != nil || !hmac.Equal(got, want) {
		writeError(w, http.StatusForbidden, "payment_unverified", "a confirm needs the payment provider's signature ("+PaymentSignatureHeader+")", nil)
		return
	}
	a.reply(w)(a.svc.Confirm(req.ctx, r.PathValue("id"), req.pass.Subject, body.PaymentRef, req.now, req.key))
}

func (a *API) cancel(w http.ResponseWriter, r *http.Request, req request) {
	a.reply(w)(a.svc.Cancel(req.ctx, r.PathValue("id"), req.pass.Subject, req.now, req.key))
}
