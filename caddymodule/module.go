// Package caddymodule is fairgate's Caddy adapter: the HTTP handler
// `http.handlers.waiting_room`, its Caddyfile directive `waiting_room`, and
// the admin API `admin.api.waiting_room`. It is thin: everything a visitor
// meets is package gateway; this package maps Caddy's lifecycle onto it.
package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/gateway"
	"github.com/fairgate/fairgate/room"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

func init() {
	caddy.RegisterModule(Handler{})
	caddy.RegisterModule(AdminAPI{})
}

// Caddy's lifecycle demands this global state: a reload provisions new
// handlers while the old ones still serve, and what a queued visitor relies
// on (serving clock, bucket, used tokens, generated keys) must pass from one
// to the next. rooms is what the admin API sees.
var (
	pool   = caddy.NewUsagePool()
	stores = caddy.NewUsagePool() // opened state stores, by room.StateStore.StoreKey
	rooms  = room.NewRooms()
)

// pooledStore is an opened state store shared by the rooms of this process
// that point at it; it closes when the last handler using it is cleaned up.
type pooledStore struct{ store roomstate.Store }

// Destruct closes the store.
func (p *pooledStore) Destruct() error {
	if p.store == nil {
		return nil
	}
	return p.store.Close()
}

// defaultStatePath is the bolt file of a room whose state_store names
// none: in Caddy's data directory, beside its certificates.
func defaultStatePath() string {
	return filepath.Join(caddy.AppDataDir(), "fairgate", "rooms.db")
}

// Handler is a virtual waiting room in front of the routes after it. Its
// JSON is fairgate's gateway config (the same struct `fairgate proxy` reads),
// plus keys_from.
//
// It sets these placeholders for the routes after it and for logs:
//
//	{http.waiting_room.room}     the room's name
//	{http.waiting_room.state}    the room's state: open, queue, scheduled, paused or closed
//	{http.waiting_room.outcome}  what the room did with the request: passed,
//	                             open, bypassed, waiting, closed or api
//
// It reads Caddy's request placeholders in admission_hook's url, and the
// environment placeholders ({env.NAME}) in keys_from and keys.
type Handler struct {
	gateway.Config

	// KeysFrom loads the whole key ring from a placeholder or a file, e.g.
	// `{env.FAIRGATE_KEYS}` holding the JSON `fairgate keygen` prints, or
	// `/etc/fairgate/keys.json`. It replaces `keys`. Default: unset (`keys`
	// is read).
	KeysFrom string `json:"keys_from,omitempty"`

	gw   *gateway.Gateway
	room string
	// roomValue is room as {http.waiting_room.room}'s value, boxed once.
	roomValue any
	poolKey   string
	storeKey  string
	pooled    *pooledRoom
	app       *App
	logger    *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.waiting_room",
		New: func() caddy.Module { return new(Handler) },
	}
}

// pooledRoom is a room's shared state in the usage pool, with the
// controller loop that goes with it. A room a config creates stays out of
// sight (no controller, not in the admin API) until that config runs.
type pooledRoom struct {
	shared *room.Shared
	// active is closed once the room is live and its first config
	// applied. Caddy serves a config from opening its listeners until
	// `started`, when the room joins its store: a request in that moment
	// waits for the join (activationWait at most) rather than being told
	// the room is starting.
	active     chan struct{}
	activeOnce sync.Once
	mu         sync.Mutex
	live       bool
	stop       context.CancelFunc
	done       chan struct{}
}

// activationWait bounds how long a request waits for its config to start:
// a config Caddy rolls back never starts.
const activationWait = 2 * time.Second

// testHookAwaiting is called when a request starts waiting for its room.
var testHookAwaiting = func() {}

// awaitActive returns once the room is active (markActive), ctx is done or
// activationWait has passed.
func (p *pooledRoom) awaitActive(ctx context.Context) {
	select {
	case <-p.active:
		return
	default:
	}
	testHookAwaiting()
	t := time.NewTimer(activationWait)
	defer t.Stop()
	select {
	case <-p.active:
	case <-ctx.Done():
	case <-t.C:
	}
}

// activate joins the room's stored state, starts the room's controller and
// lists it in the admin API, once. A join that fails is retried by the
// room's loop.
func (p *pooledRoom) activate(log *zap.Logger) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
		return
	}
	switch err := p.shared.Join(context.Background()); {
	case err == nil:
	case roomstate.Unwell(err):
		log.Warn("the room state store is not answering: serving unjoined until it does (new tokens and admissions 503)", zap.Error(err))
	default:
		log.Error("the room state store refused the join (a missing table? refused credentials?): serving unjoined, trying again every poll", zap.Error(err))
	}
	runCtx, stop := context.WithCancel(context.Background())
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		p.shared.Run(runCtx, time.Now)
	}()
	rooms.Put(p.shared)
	p.live, p.stop = true, stop
}

// markActive lets the requests waiting for the room through.
func (p *pooledRoom) markActive() { p.activeOnce.Do(func() { close(p.active) }) }

// Destruct stops the room's controller when its last handler is gone,
// and waits for it: it gives its budget back to the store first.
func (p *pooledRoom) Destruct() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
		p.stop()
		<-p.done
		rooms.Delete(p.shared)
		p.live = false
	}
	return nil
}

// Provision sets up the handler: keys resolved, the room's shared state
// taken from the pool (or created), the gateway built over it. It changes
// nothing a visitor or operator can see: Caddy may still reject this config
// (a later module fails to provision, an app fails to start), and then the
// running config must keep its room exactly as it was. The room takes this
// config's settings when Caddy emits `started` (see App).
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	cfg, err := h.resolvedConfig()
	if err != nil {
		return fmt.Errorf("waiting room %s: %w", h.RoomName(), err)
	}
	h.room = cfg.RoomName()
	h.roomValue = h.room
	appVal, err := ctx.App(appID)
	if err != nil {
		return err
	}
	first, err := appVal.(*App).register(h)
	if err != nil {
		return err
	}
	if first {
		if err := checkRoutes(ctx, h.room, cfg.EndpointPrefix()); err != nil {
			return err
		}
	}
	st, err := cfg.SettleStateStore(defaultStatePath())
	if err != nil {
		return fmt.Errorf("waiting room %s: %w", h.room, err)
	}
	if first {
		if err := st.CheckPath(); err != nil {
			return fmt.Errorf("waiting room %s: %w", h.room, err)
		}
	}
	// The store opens on its first call, when the config runs and the
	// room joins it (pooledRoom.activate): `caddy validate` and a config
	// Caddy rejects leave the store alone.
	sv, _, err := stores.LoadOrNew(st.StoreKey(), func() (caddy.Destructor, error) {
		if st.Type == room.StoreMemory {
			return &pooledStore{}, nil
		}
		return &pooledStore{store: &lazyStore{settings: st}}, nil
	})
	if err != nil {
		return fmt.Errorf("waiting room %s: %w", h.room, err)
	}
	h.storeKey = st.StoreKey()
	store := sv.(*pooledStore).store
	// A room is one per store and store settings: a reload that moves it
	// to another store, or changes how it uses the store (on_unavailable,
	// budget_block, poll, call_timeout, node), gives it a new shared state,
	// joined to that store.
	h.poolKey = h.room + "\x00" + st.RoomKey()
	val, _, err := pool.LoadOrNew(h.poolKey, func() (caddy.Destructor, error) {
		sh, err := gateway.NewSharedOn(ctx, cfg, st, store, time.Now)
		if err != nil {
			return nil, err
		}
		return &pooledRoom{shared: sh, active: make(chan struct{})}, nil
	})
	if err != nil {
		return fmt.Errorf("waiting room %s: %w", h.room, err)
	}
	h.pooled = val.(*pooledRoom)
	// On an error below Caddy calls Cleanup, which releases the room: it
	// must not be released here as well.
	h.gw, err = gateway.New(cfg, h.pooled.shared, gateway.Options{
		Logger:        h.logger,
		Registerer:    gatewayRegisterer(ctx),
		OnDisposition: setOutcome,
		ClientIP:      clientIP,
		ReturnURI:     originalURI,
		HookURL:       expandPlaceholders,
		OnAdmit:       h.emitAdmitted,
		OnGeneratedKeys: func() {
			if first {
				h.logger.Warn(gateway.NoKeysWarning, zap.String("room", h.room))
			}
		},
	})
	if err != nil {
		return fmt.Errorf("waiting room %s: %w", h.room, err)
	}
	return nil
}

// gatewayRegisterer is where a gateway registers its room's metrics: nowhere
// when the config's registry is the admin endpoint's, which reports every
// live room (see AdminAPI.Provision); else the config's registry (Caddy
// runs without an admin endpoint), where they stay until the registry goes
// with its config.
func gatewayRegisterer(ctx caddy.Context) prometheus.Registerer {
	reg := ctx.GetMetricsRegistry()
	if reg == nil || reg == adminRegistry.Load() {
		return nil
	}
	return keepRegistered{reg}
}

// keepRegistered ignores Unregister: a config's registry is dropped with the
// config, and a rejected config must not take a room's metrics with it.
type keepRegistered struct{ prometheus.Registerer }

func (keepRegistered) Unregister(prometheus.Collector) bool { return false }

// activate makes this handler's config live in its room; App calls it
// when the config this handler belongs to has started.
func (h *Handler) activate() {
	h.pooled.activate(h.logger)
	before := h.pooled.shared.Status(time.Now())
	if err := h.gw.ApplyConfig(); err != nil {
		h.logger.Error("applying the room's settings", zap.String("room", h.room), zap.Error(err))
	}
	h.pooled.markActive()
	emitStateChange(h.app, before, h.pooled.shared.Status(time.Now()), "config")
}

// emitStateChange emits `waiting_room_state_changed` when a room's state
// or closed reason changed; by is `config` or `admin_api`.
func emitStateChange(app *App, before, after room.RoomStatus, by string) {
	if before.State == after.State && before.Reason == after.Reason {
		return
	}
	app.emit("waiting_room_state_changed", map[string]any{
		"room": after.Room, "from": before.State, "to": after.State, "reason": after.Reason, "by": by,
	})
}

// emitAdmitted emits `waiting_room_admitted` for one admission.
func (h *Handler) emitAdmitted(_ *http.Request, waited time.Duration) {
	h.app.emit("waiting_room_admitted", map[string]any{"room": h.room, "waited_seconds": waited.Seconds()})
}

// resolvedConfig expands placeholders in the key settings. Secrets stay out
// of the config JSON that way.
func (h *Handler) resolvedConfig() (gateway.Config, error) {
	cfg := h.Config
	repl := caddy.NewReplacer()
	if h.KeysFrom != "" {
		text := strings.TrimSpace(repl.ReplaceAll(h.KeysFrom, ""))
		if text == "" {
			return cfg, fmt.Errorf("keys_from %s is empty: is the environment variable set?", h.KeysFrom)
		}
		if !strings.HasPrefix(text, "{") {
			b, err := os.ReadFile(text)
			if err != nil {
				return cfg, fmt.Errorf("keys_from: %w", err)
			}
			text = string(b)
		}
		var keys tokens.KeysConfig
		if err := json.Unmarshal([]byte(text), &keys); err != nil {
			return cfg, fmt.Errorf("keys_from: not the JSON of `fairgate keygen`: %w", err)
		}
		cfg.Keys = keys
	}
	if len(cfg.Keys.Keys) > 0 {
		keys := make(map[string]string, len(cfg.Keys.Keys))
		for id, secret := range cfg.Keys.Keys {
			keys[id] = repl.ReplaceAll(secret, "")
		}
		cfg.Keys.Keys = keys
		cfg.Keys.Lottery = repl.ReplaceAll(cfg.Keys.Lottery, "")
		cfg.Keys.Signing = repl.ReplaceAll(cfg.Keys.Signing, "")
	}
	return cfg, nil
}

// UnmarshalJSON decodes the handler strictly, as Caddy decodes modules,
// and refuses what the JSON cannot say apart from unset (`"rate": 0`).
func (h *Handler) UnmarshalJSON(b []byte) error {
	type plain Handler // without this method
	if err := caddy.StrictUnmarshalJSON(b, (*plain)(h)); err != nil {
		return err
	}
	if err := room.CheckExplicitZeros(b); err != nil {
		return fmt.Errorf("waiting room %s: %w", h.RoomName(), err)
	}
	return nil
}

// Validate is done by Provision (the config is checked as it is settled);
// here only what needs no provisioning.
func (h *Handler) Validate() error {
	if h.KeysFrom != "" && len(h.Keys.Keys) > 0 {
		return fmt.Errorf("waiting room: set keys or keys_from, not both")
	}
	if len(h.TrustedProxies) > 0 {
		return errTrustedProxies
	}
	return nil
}

var errTrustedProxies = fmt.Errorf("waiting room: trusted_proxies is for `fairgate proxy`; in Caddy the room uses the client address Caddy determines, so set Caddy's own trusted_proxies server option")

// Cleanup closes this handler's gateway and releases its room from the pool;
// the room's state lives on while a newer config uses it.
func (h *Handler) Cleanup() error {
	if h.gw != nil {
		h.gw.Close()
	}
	var err error
	if h.pooled != nil {
		_, err = pool.Delete(h.poolKey)
	}
	if h.storeKey != "" {
		// After the room: its loop has stopped using the store.
		if _, e := stores.Delete(h.storeKey); err == nil {
			err = e
		}
	}
	return err
}

// ServeHTTP implements caddyhttp.MiddlewareHandler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if h.gw == nil {
		return caddyhttp.Error(http.StatusServiceUnavailable, fmt.Errorf("waiting room %s is not provisioned", h.room))
	}
	if h.pooled != nil {
		h.pooled.awaitActive(r.Context())
	}
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		repl.Set("http.waiting_room.room", h.roomValue)
		repl.Set("http.waiting_room.state", boxed(stateValues, h.gw.Room().Room.State(time.Now())))
	}
	rest := &restOfRoute{next: next}
	h.gw.Handle(w, r, rest)
	return rest.err
}

// restOfRoute is the rest of Caddy's route as the gateway's next handler,
// keeping the error it returns for ServeHTTP to return.
type restOfRoute struct {
	next caddyhttp.Handler
	err  error
}

func (n *restOfRoute) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.err = n.next.ServeHTTP(w, r)
}

// stateValues and dispositionValues are the placeholder values ServeHTTP
// and setOutcome set on every request, each boxed once: a string boxed
// per request is an allocation per request.
var (
	stateValues = boxAll(admission.StateOpen, admission.StateQueue, admission.StateScheduled,
		admission.StatePaused, admission.StateClosed)
	dispositionValues = boxAll(gateway.DispositionPassed, gateway.DispositionOpen, gateway.DispositionBypassed,
		gateway.DispositionWaiting, gateway.DispositionClosed, gateway.DispositionAPI, gateway.DispositionRefused)
)

func boxAll[S ~string](all ...S) map[S]any {
	m := make(map[S]any, len(all))
	for _, s := range all {
		m[s] = string(s)
	}
	return m
}

// boxed is s as a placeholder value: from values, else boxed now.
func boxed[S ~string](values map[S]any, s S) any {
	if v, ok := values[s]; ok {
		return v
	}
	return string(s)
}

// clientIP is the client address Caddy determined, by its own
// trusted_proxies and client_ip_headers.
func clientIP(r *http.Request) (netip.Addr, bool) {
	s, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}

// originalURI is the request's URI as it arrived, before any rewrite: the
// page an admitted visitor asked for.
func originalURI(r *http.Request) string {
	if orig, ok := r.Context().Value(caddyhttp.OriginalRequestCtxKey).(http.Request); ok && orig.URL != nil {
		return orig.URL.RequestURI()
	}
	return r.URL.RequestURI()
}

// expandPlaceholders fills Caddy's request placeholders in s, e.g.
// {http.request.host} in the admission hook URL.
func expandPlaceholders(r *http.Request, s string) string {
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		return repl.ReplaceAll(s, "")
	}
	return s
}

// setOutcome publishes what the gateway did as {http.waiting_room.outcome}.
func setOutcome(r *http.Request, o gateway.Disposition) {
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		repl.Set("http.waiting_room.outcome", boxed(dispositionValues, o))
	}
}

// AdminAPI is `admin.api.waiting_room`: the live rooms of this process.
//
//	GET  /waiting_room/rooms          every room's live figures
//	GET  /waiting_room/rooms/{room}   one room's
//	POST /waiting_room/rooms/{room}   change state, reason, sale_start, rate, burst, difficulty, tau
//
// A change of state is emitted as the event `waiting_room_state_changed`
// (room, from, to, reason, by), as is one a reloaded config makes; each
// admission as `waiting_room_admitted` (room, waited_seconds). Subscribe
// with Caddy's `events` global option.
type AdminAPI struct{}

// CaddyModule returns the Caddy module information.
func (AdminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.waiting_room",
		New: func() caddy.Module { return new(AdminAPI) },
	}
}

// adminRegistry is the metrics registry of Caddy's current admin endpoint.
var adminRegistry atomic.Pointer[prometheus.Registry]

// Provision reports every live room's metrics in the registry of the admin
// endpoint being set up. Caddy replaces the admin endpoint, and the
// registry its /metrics serves, before it provisions the apps of a new
// config, and keeps it when it rejects that config; so the rooms' metrics
// are registered here, from the live rooms, not by the config's handlers.
func (AdminAPI) Provision(ctx caddy.Context) error {
	reg := ctx.GetMetricsRegistry()
	if reg == nil {
		return nil
	}
	if err := reg.Register(gateway.RoomsCollector(rooms, time.Now)); err != nil {
		return fmt.Errorf("waiting room metrics: %w", err)
	}
	adminRegistry.Store(reg)
	return nil
}

// Routes implements caddy.AdminRouter.
func (AdminAPI) Routes() []caddy.AdminRoute {
	api := gateway.AdminAPI(rooms, time.Now)
	return []caddy.AdminRoute{{
		Pattern: "/waiting_room/",
		Handler: caddy.AdminHandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			_, name, _ := strings.Cut(r.URL.Path, "/rooms/")
			sh, ok := rooms.Get(strings.Trim(name, "/"))
			if !ok || r.Method == http.MethodGet {
				api.ServeHTTP(w, r)
				return nil
			}
			before := sh.Status(time.Now())
			api.ServeHTTP(w, r)
			emitStateChange(liveApp.Load(), before, sh.Status(time.Now()), "admin_api")
			return nil
		}),
	}}
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
	_ caddy.AdminRouter           = (*AdminAPI)(nil)
	_ caddy.Provisioner           = (*AdminAPI)(nil)
	_ caddy.Destructor            = (*pooledRoom)(nil)
)
