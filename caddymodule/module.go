// Package caddymodule is fairgate's Caddy adapter: the HTTP handler
// `http.handlers.waiting_room`, its Caddyfile directive `waiting_room`, and
// the admin API `admin.api.waiting_room`. It is thin: everything a visitor
// meets is package proxy; this package maps Caddy's lifecycle onto it.
package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/proxy"
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
	pool  = caddy.NewUsagePool()
	rooms = proxy.NewRooms()
)

// Handler is a virtual waiting room in front of the routes after it. Its
// JSON is fairgate's gateway config (the same struct `fairgate proxy` reads),
// plus keys_from.
type Handler struct {
	proxy.Config

	// KeysFrom loads the whole key ring from a placeholder or a file, e.g.
	// `{env.FAIRGATE_KEYS}` holding the JSON `fairgate keygen` prints, or
	// `/etc/fairgate/keys.json`. It replaces `keys`.
	KeysFrom string `json:"keys_from,omitempty"`

	gw     *proxy.Gateway
	room   string
	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.waiting_room",
		New: func() caddy.Module { return new(Handler) },
	}
}

// pooledRoom is a room's shared state in the usage pool, with the
// controller loop that goes with it.
type pooledRoom struct {
	shared *proxy.Shared
	stop   context.CancelFunc
}

// Destruct stops the room's controller when its last handler is gone.
func (p *pooledRoom) Destruct() error {
	p.stop()
	rooms.Delete(p.shared)
	return nil
}

// Provision sets up the handler: keys resolved, the room's shared state
// taken from the pool (or created), the gateway built over it.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	cfg, err := h.resolvedConfig()
	if err != nil {
		return err
	}
	h.room = cfg.Room
	if h.room == "" {
		h.room = "main"
	}
	val, _, err := pool.LoadOrNew(h.room, func() (caddy.Destructor, error) {
		sh, err := proxy.NewShared(cfg, time.Now)
		if err != nil {
			return nil, err
		}
		runCtx, stop := context.WithCancel(context.Background())
		go sh.Run(runCtx, time.Now)
		rooms.Put(sh)
		return &pooledRoom{shared: sh, stop: stop}, nil
	})
	if err != nil {
		return fmt.Errorf("waiting room %s: %w", h.room, err)
	}
	h.gw, err = proxy.New(cfg, val.(*pooledRoom).shared, proxy.Options{
		Logger:     h.logger,
		Registerer: ctx.GetMetricsRegistry(),
		OnOutcome:  setOutcome,
	})
	if err != nil {
		_, _ = pool.Delete(h.room)
		return fmt.Errorf("waiting room %s: %w", h.room, err)
	}
	return nil
}

// resolvedConfig expands placeholders in the key settings. Secrets stay out
// of the config JSON that way.
func (h *Handler) resolvedConfig() (proxy.Config, error) {
	cfg := h.Config
	repl := caddy.NewReplacer()
	if h.KeysFrom != "" {
		text := strings.TrimSpace(repl.ReplaceAll(h.KeysFrom, ""))
		if !strings.HasPrefix(text, "{") {
			b, err := os.ReadFile(text)
			if err != nil {
				return cfg, fmt.Errorf("keys_from: %w", err)
			}
			text = string(b)
		}
		var keys admission.KeysConfig
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

// Validate is done by Provision (the config is checked as it is settled);
// here only what needs no provisioning.
func (h *Handler) Validate() error {
	if h.KeysFrom != "" && len(h.Keys.Keys) > 0 {
		return fmt.Errorf("waiting room: set keys or keys_from, not both")
	}
	return nil
}

// Cleanup closes this handler's gateway and releases its room from the pool;
// the room's state lives on while a newer config uses it.
func (h *Handler) Cleanup() error {
	if h.gw != nil {
		h.gw.Close()
	}
	_, err := pool.Delete(h.room)
	return err
}

// ServeHTTP implements caddyhttp.MiddlewareHandler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if h.gw == nil {
		return caddyhttp.Error(http.StatusServiceUnavailable, fmt.Errorf("waiting room %s is not provisioned", h.room))
	}
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		repl.Set("http.waiting_room.room", h.room)
		repl.Set("http.waiting_room.state", string(h.gw.Room().Room.View(time.Now()).State))
	}
	var nextErr error
	h.gw.Handle(w, r, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nextErr = next.ServeHTTP(w, r)
	}))
	return nextErr
}

// setOutcome publishes what the gateway did as {http.waiting_room.outcome}.
func setOutcome(r *http.Request, o proxy.Outcome) {
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		repl.Set("http.waiting_room.outcome", string(o))
	}
}

// AdminAPI is `admin.api.waiting_room`: the live rooms of this process.
//
//	GET  /waiting_room/rooms          every room's live figures
//	GET  /waiting_room/rooms/{room}   one room's
//	POST /waiting_room/rooms/{room}   change state, reason, sale_start, rate, burst, difficulty
type AdminAPI struct{}

// CaddyModule returns the Caddy module information.
func (AdminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.waiting_room",
		New: func() caddy.Module { return new(AdminAPI) },
	}
}

// Routes implements caddy.AdminRouter.
func (AdminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{
		Pattern: "/waiting_room/",
		Handler: caddy.AdminHandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			proxy.ServeAdmin(w, r, rooms, time.Now())
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
	_ caddy.Destructor            = (*pooledRoom)(nil)
)
