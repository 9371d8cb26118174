package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/internal/httpserver"
	"github.com/fairgate/fairgate/room"
	"github.com/fairgate/fairgate/room/stores"
)

// Server is `fairgate proxy`: the gateway in front of a reverse proxy to
// one upstream, and an admin listener for the admin API and /metrics.
type Server struct {
	gateway  *Gateway
	shared   *room.Shared
	store    roomstate.Store // nil on memory
	public   http.Handler
	admin    http.Handler
	log      *zap.Logger
	tlsCert  string
	tlsKey   string
	shutdown time.Duration
	timeouts httpserver.Timeouts
}

// ServerConfig configures a Server.
type ServerConfig struct {
	Upstream *url.URL
	Gateway  Config
	// StatePath is the bolt file of a config without state_store, or
	// whose bolt store names no path (`fairgate proxy --state`, default
	// DefaultStateFile). Empty: such a config runs on memory, and a bolt
	// store needs its path.
	StatePath string
	// AdminToken is the bearer token of the admin API and /metrics
	// (required).
	AdminToken string
	// MetricsPublic serves /metrics without the admin token, for a
	// scraper that cannot send one (`fairgate proxy --metrics-public`).
	MetricsPublic bool
	// TLSCert and TLSKey, when set, serve the public listener over TLS.
	TLSCert, TLSKey string
	// ShutdownGrace bounds a graceful shutdown. Default: 15s.
	ShutdownGrace time.Duration
	// ReadHeaderTimeout, ReadTimeout (the whole request, body included)
	// and IdleTimeout bound how long a client may hold a connection of
	// either listener. Defaults: 10s, 60s and 120s (internal/httpserver).
	// Uploads slower than ReadTimeout through the proxy are cut off.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration

	Logger *zap.Logger
	// Transport to the upstream; nil means a tuned one (NewReverseProxy).
	Transport http.RoundTripper
}

// NewServer builds the proxy.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Upstream == nil || (cfg.Upstream.Scheme != "http" && cfg.Upstream.Scheme != "https") || cfg.Upstream.Host == "" {
		return nil, errors.New("upstream must be an absolute http:// or https:// URL such as http://127.0.0.1:8080")
	}
	if cfg.AdminToken == "" {
		return nil, errors.New("an admin token is required")
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	st, err := cfg.Gateway.SettleStateStore(cfg.StatePath)
	if err != nil {
		return nil, err
	}
	store, err := stores.Open(context.Background(), st)
	if err != nil {
		return nil, err
	}
	shared, err := NewSharedOn(context.Background(), cfg.Gateway, st, store, time.Now)
	if err != nil {
		if store != nil {
			store.Close()
		}
		return nil, err
	}
	fail := func(err error) (*Server, error) {
		if store != nil {
			store.Close()
		}
		return nil, err
	}
	// A store that does not answer (unreachable, timing out, throttling)
	// does not stop the start: the room serves unjoined (its waiting page,
	// the tokens it is shown and valid passes; new tokens and admissions
	// get 503 with Retry-After) and its loop joins once the store answers.
	// A store that answers with a refusal (a missing table, bad
	// credentials) is a config error, and so is a bolt file held by
	// another process (OpenStateStore above).
	if err := shared.Join(context.Background()); err != nil {
		if !roomstate.Unwell(err) {
			return fail(err)
		}
		log.Warn("the room state store is not answering: serving unjoined until it does", zap.Error(err))
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	gw, err := New(cfg.Gateway, shared, Options{Logger: log, Registerer: reg})
	if err != nil {
		return fail(err)
	}
	if err := gw.ApplyConfig(); err != nil {
		// A config the store cannot take yet waits: the room's loop
		// applies it once the store takes it (the room's loop).
		var down *room.UnavailableError
		if !errors.As(err, &down) {
			return fail(err)
		}
	}
	rp := newReverseProxy(cfg.Upstream, cfg.Transport, log, gw.metrics.upstreamErrors.WithLabelValues("origin").Inc)
	rooms := room.NewRooms()
	rooms.Put(shared)
	mux := http.NewServeMux()
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	if !cfg.MetricsPublic {
		metrics = requireBearer(cfg.AdminToken, metrics)
	}
	mux.Handle("/metrics", metrics)
	mux.Handle("/", adminHandler(rooms, cfg.AdminToken, time.Now))
	grace := cfg.ShutdownGrace
	if grace == 0 {
		grace = 15 * time.Second
	}
	return &Server{gateway: gw, shared: shared, store: store, public: gw.Wrap(rp), admin: mux, log: log,
		tlsCert: cfg.TLSCert, tlsKey: cfg.TLSKey, shutdown: grace,
		timeouts: httpserver.Timeouts{Header: cfg.ReadHeaderTimeout, Read: cfg.ReadTimeout, Idle: cfg.IdleTimeout}}, nil
}

// NewReverseProxy is the upstream half of `fairgate proxy`: streaming,
// websockets and X-Forwarded-* as httputil.ReverseProxy does them; an
// unreachable upstream is a 502 JSON error while the waiting room goes on.
// A nil transport is fairgate's, tuned for a busy site (many idle
// connections kept per host); a nil logger logs nothing.
func NewReverseProxy(upstream *url.URL, transport http.RoundTripper, log *zap.Logger) *httputil.ReverseProxy {
	return newReverseProxy(upstream, transport, log, func() {})
}

// newReverseProxy is NewReverseProxy calling failed for each request the
// upstream did not answer.
func newReverseProxy(upstream *url.URL, transport http.RoundTripper, log *zap.Logger, failed func()) *httputil.ReverseProxy {
	if transport == nil {
		transport = newTransport()
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host
		},
		Transport: transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			failed()
			log.Warn("upstream unreachable", zap.String("path", r.URL.Path), zap.Error(err))
			writeError(w, http.StatusBadGateway, "upstream", "the site behind the waiting room is not answering")
		},
	}
}

// handler is the public handler: waiting room in front of the upstream.
func (s *Server) handler() http.Handler { return s.public }

// adminHandler serves the admin API and /metrics.
func (s *Server) adminHandler() http.Handler { return s.admin }

// Serve runs both listeners until ctx ends, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context, public, admin net.Listener) error {
	defer s.gateway.Close()
	ctx, cancel := context.WithCancel(ctx)
	running := make(chan struct{})
	defer func() {
		cancel()
		<-running // the room's loop gives its budget back before the store closes
		if s.store != nil {
			if err := s.store.Close(); err != nil {
				s.log.Warn("closing the state store", zap.Error(err))
			}
		}
	}()
	go func() {
		defer close(running)
		s.shared.Run(ctx, time.Now)
	}()
	pub := httpserver.New(s.public, s.timeouts)
	adm := httpserver.New(s.admin, s.timeouts)
	err := httpserver.Serve(ctx, s.shutdown,
		httpserver.Serving{Server: pub, Listener: public, CertFile: s.tlsCert, KeyFile: s.tlsKey},
		httpserver.Serving{Server: adm, Listener: admin})
	if errors.Is(err, httpserver.ErrNotDrained) {
		s.log.Warn("connections did not drain in time", zap.Error(err))
		return nil
	}
	return err
}
