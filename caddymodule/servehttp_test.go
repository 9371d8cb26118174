package caddymodule

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/gateway"
)

// TestServeHTTPPlaceholdersAndError serves one request in each kind of
// room: the placeholders say the room, its state and what the gateway
// did, and the rest of the route's error is ServeHTTP's.
func TestServeHTTPPlaceholdersAndError(t *testing.T) {
	routeErr := errors.New("upstream down")
	tests := []struct {
		state, path  string
		wantOutcome  string
		wantRouteErr bool
	}{
		{"open", "/shop", "open", true},
		{"queue", "/shop", "waiting", false},
		{"queue", "/_fairgate/token", "api", false},
		{"closed", "/shop", "closed", false},
	}
	for _, tt := range tests {
		t.Run(tt.state+tt.path, func(t *testing.T) {
			h := gatewayHandler(t, tt.state)
			repl := caddy.NewReplacer()
			r := httptest.NewRequest(http.MethodGet, tt.path, nil)
			if tt.path == "/_fairgate/token" {
				r.Method = http.MethodPost
			}
			r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
			next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return routeErr })
			err := h.ServeHTTP(httptest.NewRecorder(), r, next)
			if got := errors.Is(err, routeErr); got != tt.wantRouteErr {
				t.Fatalf("ServeHTTP's error %v, want the route's: %t", err, tt.wantRouteErr)
			}
			for name, want := range map[string]string{
				"http.waiting_room.room": "sale", "http.waiting_room.state": tt.state, "http.waiting_room.outcome": tt.wantOutcome,
			} {
				if got, _ := repl.Get(name); got != want {
					t.Errorf("{%s} = %#v, want %q", name, got, want)
				}
			}
		})
	}
}

// TestBoxedIsTheString: each boxed value is its string, whether boxed
// once or, for a value not listed, now.
func TestBoxedIsTheString(t *testing.T) {
	for _, s := range []admission.State{admission.StateOpen, admission.StateQueue, admission.StateScheduled, admission.StatePaused, admission.StateClosed, "unlisted"} {
		if got := boxed(stateValues, s); got != any(string(s)) {
			t.Errorf("state %q boxed as %#v", s, got)
		}
	}
	for _, d := range []gateway.Disposition{gateway.DispositionPassed, gateway.DispositionOpen, gateway.DispositionBypassed,
		gateway.DispositionWaiting, gateway.DispositionClosed, gateway.DispositionAPI, gateway.DispositionRefused, "unlisted"} {
		if got := boxed(dispositionValues, d); got != any(string(d)) {
			t.Errorf("disposition %q boxed as %#v", d, got)
		}
	}
}
