package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/fairgate/fairgate/gateway"
	"github.com/fairgate/fairgate/room"
)

// TestRequestBeforeStartWaitsForTheJoin: Caddy serves a config from
// opening its listeners until `started`, when the room joins its store (a
// restart under load sends requests into that moment). A new visitor's
// token asked then waits for the join and is issued, not answered 503
// "starting".
func TestRequestBeforeStartWaitsForTheJoin(t *testing.T) {
	cfg := gateway.Config{Config: room.Config{Room: "sale", State: "queue", Keys: testKeys,
		StateStore: &room.StateStore{Type: room.StoreBolt, Path: filepath.Join(t.TempDir(), "rooms.db")}}}
	st, err := cfg.SettleStateStore("")
	if err != nil {
		t.Fatal(err)
	}
	store := &lazyStore{settings: st}
	t.Cleanup(func() { _ = store.Close() })
	sh, err := gateway.NewSharedOn(context.Background(), cfg, st, store, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(cfg, sh, gateway.Options{ClientIP: clientIP})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{room: "sale", roomValue: "sale", gw: gw, logger: zap.NewNop(),
		pooled: &pooledRoom{shared: sh, active: make(chan struct{})}}
	t.Cleanup(func() {
		_ = h.pooled.Destruct()
		gw.Close()
	})

	awaiting := make(chan struct{})
	testHookAwaiting = func() { close(awaiting) }
	t.Cleanup(func() { testHookAwaiting = func() {} })
	answered := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
		_ = h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/_fairgate/token", nil), next)
		answered <- rec
	}()
	select {
	case <-awaiting:
	case rec := <-answered:
		t.Fatalf("a token asked before the config started was answered at once: %d %.200s, want it to wait for the join", rec.Code, rec.Body)
	}
	h.activate()
	if rec := <-answered; rec.Code != http.StatusOK {
		t.Fatalf("a token asked before the config started: %d %.200s, want 200 once the room joined", rec.Code, rec.Body)
	}
}
