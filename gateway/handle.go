package gateway

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"go.uber.org/zap"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/gateway/pages"
	"github.com/fairgate/fairgate/room"
)

// New builds a gateway over shared state (see NewShared). It changes
// nothing in the shared state: ApplyConfig does, once the caller knows the
// gateway will serve.
func New(cfg Config, shared *room.Shared, opts Options) (*Gateway, error) {
	s, err := cfg.settle()
	if err != nil {
		return nil, err
	}
	if err := shared.Fits(s.room); err != nil {
		// Refused before anything runs: Caddy rejects the reload.
		return nil, err
	}
	g := &Gateway{cfg: s, shared: shared, log: opts.Logger, now: opts.Now, notify: opts.OnDisposition, opts: opts}
	if g.notify == nil {
		g.notify = func(*http.Request, Disposition) {}
	}
	if g.log == nil {
		g.log = zap.NewNop()
	}
	if g.now == nil {
		g.now = time.Now
	}
	var gateOpts []admission.GateOption
	if opts.Random != nil {
		gateOpts = append(gateOpts, admission.WithRandom(opts.Random))
	}
	if s.Hook != nil {
		// The hook may still turn the admission away after its pass is
		// out: another tab must not hold that pass meanwhile.
		gateOpts = append(gateOpts, admission.WithoutTabPasses())
	}
	door, generated, err := shared.Door(s.room, gateOpts...)
	if err != nil {
		return nil, err
	}
	g.door = door
	switch {
	case generated && opts.OnGeneratedKeys != nil:
		opts.OnGeneratedKeys()
	case generated:
		g.log.Warn(NoKeysWarning, zap.String("room", s.Room))
	}
	if g.bypass, err = newMatcher(s.Bypass.Paths); err != nil {
		return nil, fmt.Errorf("bypass paths: %w", err)
	}
	for _, ua := range s.Bypass.UserAgents {
		m, err := newRegexpMatcher(ua)
		if err != nil {
			return nil, fmt.Errorf("bypass user_agents: %w", err)
		}
		g.agents = append(g.agents, m)
	}
	for _, c := range s.Bypass.CIDRs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("bypass cidrs: %w", err)
		}
		g.cidrs = append(g.cidrs, p)
	}
	if s.Identity != nil {
		if g.identity, err = newIdentityVerifier(*s.Identity, s.room.LaneOf); err != nil {
			return nil, fmt.Errorf("identity: %w", err)
		}
	}
	if g.metrics, err = newMetrics(opts.Registerer, shared, g.now); err != nil {
		return nil, err
	}
	if s.Hook != nil {
		g.hook = newHookClient(*s.Hook, opts.Client)
	}
	if s.Cache != nil {
		if g.cache, err = newCache(*s.Cache, g.metrics, g.now); err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
	}
	// Each pass costs 1 (IgnoreInternalCost, as the login cache), so the
	// cache holds MaxCost passes rather than the few thousand ristretto's
	// own per-item bookkeeping would leave room for.
	g.passes, err = ristretto.NewCache(&ristretto.Config[string, *tokens.PassClaims]{
		NumCounters: 1 << 20, MaxCost: 1 << 17, BufferItems: 64, IgnoreInternalCost: true,
	})
	if err != nil {
		return nil, fmt.Errorf("pass cache: %w", err)
	}
	if g.pages, err = pages.New(pages.Config{
		Prefix: s.Prefix, Room: s.Room, WaitingStatus: s.WaitingStatus, Language: s.language,
		ClosedPage: s.ClosedPage, SoldOutPage: s.SoldOutPage, WaitingPage: s.WaitingPage,
	}, g.log); err != nil {
		return nil, err
	}
	g.cookies = cookieNames{wait: "fairgate_wait_" + s.Room, pass: "fairgate_pass_" + s.Room}
	g.api = g.apiRoutes()
	g.admitPath, g.tokenPath = g.cfg.Prefix+"/admit", g.cfg.Prefix+"/token"
	return g, nil
}

// Handle serves r: the gateway's own endpoints, or the protected site
// through next when the visitor may pass (Options.OnDisposition learns
// which).
func (g *Gateway) Handle(w http.ResponseWriter, r *http.Request, next http.Handler) {
	stripOwnHeaders(r.Header)
	if err := checkPath(r.URL); err != nil {
		g.notify(r, DispositionRefused)
		writeError(w, http.StatusBadRequest, "ambiguous_path", err.Error())
		return
	}
	if strings.HasPrefix(r.URL.Path, g.cfg.Prefix+"/") {
		g.notify(r, DispositionAPI)
		// The admit poll, every waiting visitor's request every few
		// seconds, and the token, every visitor's first, go straight to
		// their handlers: the mux's pattern matching was 4% of each, to
		// find the route it has for exactly this method and path
		// (apiRoutes).
		if r.Method == http.MethodPost {
			switch r.URL.Path {
			case g.admitPath:
				g.serveAdmit(w, r)
				return
			case g.tokenPath:
				g.serveToken(w, r)
				return
			}
		}
		g.api.ServeHTTP(w, r)
		return
	}
	now := g.now()
	if g.bypassed(r) {
		g.notify(r, DispositionBypassed)
		g.forward(w, r, next)
		return
	}
	if pass, claims, ok := g.validPass(r, now); ok {
		g.notify(r, DispositionPassed)
		id := claims.ID
		g.shared.See(id, now)
		pass = g.renewPass(w, r, pass, claims, now)
		r.Header.Set(passHeader, pass)
		es := &endSession{ResponseWriter: w, end: func(h http.Header) { g.endSession(h, r, id) }}
		g.forward(es, r, next)
		es.check() // an answer with no body and no WriteHeader: its headers are not sent yet
		return
	}
	switch g.shared.Room.View(now).State {
	case admission.StateOpen:
		g.notify(r, DispositionOpen)
		g.forward(w, r, next)
	case admission.StateClosed:
		g.notify(r, DispositionClosed)
		g.metrics.held.WithLabelValues("closed").Inc()
		g.serveClosed(w, r)
	default:
		g.notify(r, DispositionWaiting)
		if wantsJSON(r) {
			g.metrics.held.WithLabelValues("waiting_json").Inc()
		} else {
			g.metrics.held.WithLabelValues("waiting_page").Inc()
		}
		g.serveWaiting(w, r, now)
	}
}

// ServeHTTP makes a gateway with no upstream: everything past the waiting
// room answers 404. Useful for tests and for serving only the API.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.Handle(w, r, http.NotFoundHandler())
}

// Wrap returns a handler that puts the gateway in front of next.
func (g *Gateway) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.Handle(w, r, next) })
}
