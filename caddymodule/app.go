package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
)

func init() {
	caddy.RegisterModule(new(App))
}

const appID = "waiting_room"

// App is the `waiting_room` app: one per config, loaded by the config's
// first waiting_room handler; it needs no configuration of its own. It
// knows the config's handlers, refuses a room configured twice with
// different settings, checks each room's place in the routes once (see
// checkEndpointsRouted), and makes the handlers' settings live when Caddy
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

// register adds a handler of this config and reports whether it is the
// first of its room. Two handlers of one room must agree on every setting:
// they share one room, and which one's settings applied would be an
// accident of order.
func (a *App) register(h *Handler) (bool, error) {
	js, err := json.Marshal(h)
	if err != nil {
		return false, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	first, seen := a.settings[h.room]
	if seen && !bytes.Equal(first, js) {
		return false, fmt.Errorf("room %q is configured twice with different settings (%s): give each waiting_room its own room name, or the same settings",
			h.room, settingsDiff(first, js))
	}
	a.settings[h.room] = js
	a.handlers = append(a.handlers, h)
	h.app = a
	return !seen, nil
}

// settingsDiff names the options two handlers' JSON set differently, with
// both values: `rate 5 and 20`. Secrets are named, not shown.
func settingsDiff(a, b []byte) string {
	var ma, mb map[string]json.RawMessage
	_ = json.Unmarshal(a, &ma)
	_ = json.Unmarshal(b, &mb)
	all := map[string]json.RawMessage{}
	maps.Copy(all, ma)
	maps.Copy(all, mb)
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(all)) {
		va, vb := ma[k], mb[k]
		if bytes.Equal(va, vb) {
			continue
		}
		if k == "keys" || k == "keys_from" || k == "identity" {
			diffs = append(diffs, k)
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s %s and %s", k, orUnset(va), orUnset(vb)))
	}
	return strings.Join(diffs, "; ")
}

func orUnset(v json.RawMessage) string {
	if v == nil {
		return "unset"
	}
	return string(v)
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

// Start implements caddy.App. Every check is done by now (at provision,
// so `caddy validate` refuses what `caddy run` would); the rest waits for
// `started`.
func (a *App) Start() error { return nil }

// Stop implements caddy.App; rooms outlive a config (see pooledRoom).
func (a *App) Stop() error { return nil }

// Interface guards
var (
	_ caddy.App           = (*App)(nil)
	_ caddy.Provisioner   = (*App)(nil)
	_ caddyevents.Handler = (*App)(nil)
)
