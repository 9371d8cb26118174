package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	caddy.RegisterModule(new(App))
}

const appID = "waiting_room"

// App is the `waiting_room` app: one per config, loaded by the config's
// first waiting_room handler; it needs no configuration of its own. It
// knows the config's handlers, refuses a room configured twice with
// different settings, and makes the handlers' settings live when Caddy
// emits `started` — after every module of the config provisioned and every
// app started, the first moment a config is certain to run. Until then a
// reload leaves every room as it was.
type App struct {
	mu       sync.Mutex
	handlers []*Handler
	settings map[string][]byte // room -> the JSON of its first handler
	events   *caddyevents.App
	ctx      caddy.Context
}

// liveApp is the App of the config that started last: admin API changes
// are emitted through its events app.
var liveApp atomic.Pointer[App]

// emit sends a waiting room event through Caddy's events app (subscribe
// with the `events` global option). It costs nothing without subscribers.
func (a *App) emit(name string, data map[string]any) {
	if a != nil && a.events != nil {
		a.events.Emit(a.ctx, name, data)
	}
}

// CaddyModule returns the Caddy module information.
func (*App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  appID,
		New: func() caddy.Module { return new(App) },
	}
}

// Provision subscribes to Caddy's `started` event.
func (a *App) Provision(ctx caddy.Context) error {
	a.settings = map[string][]byte{}
	a.ctx = ctx
	events, err := ctx.App("events")
	if err != nil {
		return fmt.Errorf("waiting_room: %w", err)
	}
	a.events = events.(*caddyevents.App)
	return a.events.On("started", a)
}

// register adds a handler of this config. Two handlers of one room must
// agree on every setting: they share one room, and which one's settings
// applied would be an accident of order.
func (a *App) register(h *Handler) error {
	js, err := json.Marshal(h)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if first, ok := a.settings[h.room]; ok && !bytes.Equal(first, js) {
		return fmt.Errorf("room %q is configured twice with different settings: give each waiting_room its own room name, or the same settings", h.room)
	}
	a.settings[h.room] = js
	a.handlers = append(a.handlers, h)
	h.app = a
	return nil
}

// Handle implements caddyevents.Handler: on `started`, this config runs.
func (a *App) Handle(context.Context, caddy.Event) error {
	a.mu.Lock()
	handlers := a.handlers
	a.mu.Unlock()
	for _, h := range handlers {
		h.activate()
	}
	liveApp.Store(a)
	return nil
}

// Start implements caddy.App. Every app is provisioned by now, so the
// config's routes are known: a room whose waiting page could not reach its
// endpoints is refused here (see checkEndpointsRouted), which makes Caddy
// reject the whole config. The rest waits for `started`.
func (a *App) Start() error {
	a.mu.Lock()
	handlers := a.handlers
	a.mu.Unlock()
	httpApp, err := a.ctx.AppIfConfigured("http")
	if errors.Is(err, caddy.ErrNotConfigured) {
		return nil // handlers outside an http app: nothing routes to them
	}
	if err != nil {
		return fmt.Errorf("waiting_room: %w", err)
	}
	return checkEndpointsRouted(httpApp.(*caddyhttp.App), handlers)
}

// Stop implements caddy.App; rooms outlive a config (see pooledRoom).
func (a *App) Stop() error { return nil }

// Interface guards
var (
	_ caddy.App           = (*App)(nil)
	_ caddy.Provisioner   = (*App)(nil)
	_ caddyevents.Handler = (*App)(nil)
)
