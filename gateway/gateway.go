// Package gateway is fairgate's HTTP gateway as plain net/http: the waiting
// page and its API, passes, bypass rules, room states, the response cache,
// the admin API and the standalone reverse proxy. The Caddy module is a thin
// adapter over it.
package gateway

import (
	"errors"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/gateway/cache"
	"github.com/fairgate/fairgate/gateway/pages"
	"github.com/fairgate/fairgate/internal/wire/httpwire"
	"github.com/fairgate/fairgate/room"
)

// Options are what a Gateway needs besides its Config.
type Options struct {
	// Logger; nil means no logs.
	Logger *zap.Logger
	// Registerer for metrics; nil means not registered.
	Registerer prometheus.Registerer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Client makes admission hook calls; nil means a client with the hook's timeout.
	Client *http.Client
	// OnDisposition, if set, learns what the gateway does with a request
	// before it does it (the Caddy module sets a placeholder from it).
	OnDisposition func(*http.Request, Disposition)
	// ClientIP, if set, is the client's address as the server in front
	// determined it (Caddy's, by its trusted_proxies); nil means the peer
	// address, or X-Forwarded-For from Config.TrustedProxies.
	ClientIP func(*http.Request) (netip.Addr, bool)
	// ReturnURI, if set, is where an admitted visitor goes back to (Caddy:
	// the request as it arrived, before any rewrite); nil means r's URI.
	ReturnURI func(*http.Request) string
	// HookURL, if set, expands the admission hook URL for a request (Caddy:
	// its placeholders); nil means the URL as configured.
	HookURL func(r *http.Request, url string) string
	// OnAdmit, if set, learns of each admission and how long the visitor
	// waited since entering (the waiting token's iat).
	OnAdmit func(r *http.Request, waited time.Duration)
	// OnGeneratedKeys, if set, is called instead of the NO KEYS CONFIGURED
	// warning when the config has no keys (the Caddy module warns once per
	// room and config load, not once per handler).
	OnGeneratedKeys func()
	// Random replaces crypto/rand for token ids, tickets and challenges.
	// Only for simulations: predictable tickets are a broken queue.
	Random io.Reader
}

// Gateway is one waiting room in front of one site.
type Gateway struct {
	cfg      settings
	shared   *room.Shared
	door     *room.Door
	log      *zap.Logger
	now      func() time.Time
	metrics  *metrics
	bypass   *matcher
	agents   []*regexpMatcher
	cidrs    []netip.Prefix
	identity *identityVerifier
	hook     *hookClient
	cache    *cache.Cache
	passes   *ristretto.Cache[string, *tokens.PassClaims]
	pages    *pages.Pages
	api      *http.ServeMux
	// admitPath and tokenPath are the admit poll's and the token's
	// paths, the routes Handle dispatches without api's pattern matching.
	admitPath string
	tokenPath string
	cookies   cookieNames
	notify    func(*http.Request, Disposition)
	opts      Options
}

// Disposition is what the gateway did with a request, for logs and
// placeholders (the Caddy module's {http.waiting_room.outcome}). It is not
// an admission attempt's result: that is admission.Outcome.
type Disposition string

// Request dispositions.
const (
	DispositionPassed   Disposition = "passed"   // a valid pass, forwarded
	DispositionOpen     Disposition = "open"     // room open, forwarded
	DispositionBypassed Disposition = "bypassed" // a bypass rule, forwarded
	DispositionWaiting  Disposition = "waiting"  // shown the waiting page or JSON
	DispositionClosed   Disposition = "closed"   // shown the closed page
	DispositionAPI      Disposition = "api"      // one of the gateway's endpoints
	DispositionRefused  Disposition = "refused"  // an ambiguous path, answered 400
)

// NoKeysWarning is logged when a room signs with keys it generated.
const NoKeysWarning = "NO KEYS CONFIGURED: generated keys for this process only; a restart will invalidate every waiting token and pass. Run `fairgate keygen` and configure keys."

// ApplyConfig makes the config's room settings (state, sale_start, rate,
// burst, difficulty, tau, fixed_speed, ledger_size) live in the shared room,
// changing only what differs from the config applied before, so a live change
// made through the admin API stays unless the config changes that setting.
// Call it once the gateway is certain to serve: a config that is rejected
// must leave the room as it was.
// On a state store that cannot take the change now, the error is an
// *UnavailableError and the room's loop applies the config once it can.
func (g *Gateway) ApplyConfig() error { return g.shared.ApplyConfig(g.cfg.room, g.now()) }

// Close releases the gateway's caches and metrics. The shared state stays.
func (g *Gateway) Close() {
	g.passes.Close()
	if g.identity != nil {
		g.identity.close()
	}
	if g.cache != nil {
		g.cache.Close()
	}
	g.metrics.unregister()
}

// Room is the room's shared state.
func (g *Gateway) Room() *room.Shared { return g.shared }

func (g *Gateway) bypassed(r *http.Request) bool {
	if matchRequest(g.bypass, r) {
		return true
	}
	for _, m := range g.cfg.Bypass.Methods {
		if strings.EqualFold(m, r.Method) {
			return true
		}
	}
	if len(g.cidrs) > 0 {
		if ip, ok := g.clientIP(r); ok {
			for _, p := range g.cidrs {
				if p.Contains(ip) {
					return true
				}
			}
		}
	}
	ua := r.UserAgent()
	for _, m := range g.agents {
		if m.MatchString(ua) {
			return true
		}
	}
	return false
}

// validPass returns the visitor's pass and its id if it verifies. Verified
// passes are cached, so a protected request costs a lookup rather than a
// JWT parse; a forged one is refused by the key ring's HMAC check before
// any decoding.
func (g *Gateway) validPass(r *http.Request, now time.Time) (token string, claims *tokens.PassClaims, ok bool) {
	token, ok = httpwire.CookieValue(r, g.cookies.pass)
	if !ok || token == "" {
		return "", nil, false
	}
	if claims, ok := g.passes.Get(token); ok {
		if now.Before(claims.Expiry()) && g.identityMatches(r, claims.Subject) && g.addressMatches(r, claims.Bnd) {
			g.metrics.passCached.Inc()
			return token, claims, true
		}
		return "", nil, false
	}
	claims, err := g.door.VerifyPass(token, now)
	if err != nil {
		g.metrics.passChecks.WithLabelValues("invalid").Inc()
		return "", nil, false
	}
	if !g.identityMatches(r, claims.Subject) {
		g.metrics.passChecks.WithLabelValues("other_visitor").Inc()
		return "", nil, false
	}
	if !g.addressMatches(r, claims.Bnd) {
		g.metrics.passChecks.WithLabelValues("other_address").Inc()
		return "", nil, false
	}
	g.metrics.passChecks.WithLabelValues("verified").Inc()
	g.passes.SetWithTTL(token, claims, 1, claims.Expiry().Sub(now))
	return token, claims, true
}

// renewPass gives a visitor on the site of a room sized by capacity a pass
// that lasts session_length from now, once less than half of it is left
// (admission.RenewPass): their visit lasts as long as they are active. It
// returns the pass to forward: the renewed one, or token as it was (a
// rate room's session_length is its sizing, and a pass that cannot be
// signed now stays valid as it is).
func (g *Gateway) renewPass(w http.ResponseWriter, r *http.Request, token string, claims *tokens.PassClaims, now time.Time) string {
	if !g.shared.SizedByCapacity() {
		return token
	}
	renewed, ok := admission.RenewPass(*claims, now, time.Duration(g.cfg.SessionLength))
	if !ok {
		return token
	}
	signed, err := g.door.SignPass(&renewed)
	if err != nil {
		g.log.Warn("renewing a pass", zap.String("room", g.cfg.Room), zap.Error(err))
		return token
	}
	g.metrics.passesRenewed.Inc()
	setCookie(w, r, g.cookies.pass, signed, renewed.Expiry(), g.cfg.trusted)
	return signed
}

// endSession acts on the origin's answer headers h to a request with pass
// id: with EndSessionHeader the pass stops counting as active and its
// cookie is cleared. The header never reaches the visitor.
func (g *Gateway) endSession(h http.Header, r *http.Request, id string) {
	if !hasOwnHeader(h, EndSessionHeader) {
		return
	}
	stripOwnHeaders(h)
	g.shared.End(id, g.now())
	g.metrics.sessionsEnded.Inc()
	clearCookie(h, r, g.cookies.pass, g.cfg.trusted)
}

// endSession is the visitor's ResponseWriter on a request with a pass: it
// lets the gateway read the origin's answer headers before they are sent.
type endSession struct {
	http.ResponseWriter
	end     func(http.Header)
	checked bool
}

func (e *endSession) check() {
	if !e.checked {
		e.checked = true
		e.end(e.ResponseWriter.Header())
	}
}

func (e *endSession) WriteHeader(code int) {
	if code >= 200 { // informational answers carry no session headers
		e.check()
	}
	e.ResponseWriter.WriteHeader(code)
}

func (e *endSession) Write(b []byte) (int, error) {
	e.check()
	return e.ResponseWriter.Write(b)
}

// Flush keeps streaming answers streaming.
func (e *endSession) Flush() {
	e.check()
	_ = http.NewResponseController(e.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the writer beneath.
func (e *endSession) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// identityMatches checks a pass's subject against the logged-in visitor,
// when identity is configured: a pass cannot be handed to another account.
// Without a login (where that is allowed) only an anonymous pass counts.
func (g *Gateway) identityMatches(r *http.Request, subject string) bool {
	if g.identity == nil {
		return true
	}
	sub, err := g.identity.subject(r, g.now())
	switch {
	case err == nil:
		return sub == subject
	case errors.Is(err, errNoIdentity) && !g.cfg.Identity.Required:
		return strings.HasPrefix(subject, admission.AnonymousPrefix)
	default:
		return false
	}
}

// addressMatches holds a pass to the address it was admitted from, when
// bind_pass is set: bnd must be the keyed hash of the client's address now.
func (g *Gateway) addressMatches(r *http.Request, bnd string) bool {
	if !g.cfg.BindPass {
		return true
	}
	ip, ok := clientIP(r, g.cfg.trusted)
	return ok && bnd != "" && bnd == g.door.Bind(ip.String())
}

// newCache is the response cache for the configured paths.
func newCache(cfg Cache, m *metrics, now func() time.Time) (*cache.Cache, error) {
	paths, err := newMatcher(cfg.Paths)
	if err != nil {
		return nil, err
	}
	return cache.New(cache.Config{
		Match: func(r *http.Request) bool { return matchRequest(paths, r) },
		Strip: stripOwnHeaders,
		TTL:   time.Duration(cfg.TTL), StaleWhileRevalidate: time.Duration(cfg.StaleWhileRevalidate),
		MaxRetryAfter: time.Duration(cfg.MaxRetryAfter),
		MaxBytes:      cfg.MaxBytes, MaxEntryBytes: cfg.MaxEntryBytes,
		Requests: m.cacheRequests, Now: now,
	})
}

func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if g.cache != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		g.cache.Serve(w, r, next)
		return
	}
	next.ServeHTTP(w, r)
}

// visitor establishes who is asking: their login subject (if identity is
// configured) and network binding (if bind_ip is set), and the lane their
// login grants: the default lane ("") without a login.
func (g *Gateway) visitor(r *http.Request, now time.Time) (v admission.Visitor, lane string, err error) {
	if g.identity != nil {
		login, err := g.identity.login(r, now)
		switch {
		case err == nil:
			v.Subject = login.subject
			lane = login.lane
		case errors.Is(err, errNoIdentity) && !g.cfg.Identity.Required:
		default:
			return v, lane, err
		}
	}
	if g.cfg.BindIP {
		ip, ok := g.clientIP(r)
		if !ok {
			return v, lane, errors.New("client address unknown")
		}
		v.Binding = g.door.Bind(ip.String())
	}
	return v, lane, nil
}

// clientIP is the visitor's address (see Options.ClientIP).
func (g *Gateway) clientIP(r *http.Request) (netip.Addr, bool) {
	if g.opts.ClientIP != nil {
		return g.opts.ClientIP(r)
	}
	return clientIP(r, g.cfg.trusted)
}

// returnURI is where the visitor returns once admitted (see Options.ReturnURI).
func (g *Gateway) returnURI(r *http.Request) string {
	if g.opts.ReturnURI != nil {
		return g.opts.ReturnURI(r)
	}
	return r.URL.RequestURI()
}

// hookURL is the admission hook's URL for r (see Options.HookURL).
func (g *Gateway) hookURL(r *http.Request) string {
	if g.opts.HookURL != nil {
		return g.opts.HookURL(r, g.cfg.Hook.URL)
	}
	return g.cfg.Hook.URL
}

type cookieNames struct{ wait, pass string }
