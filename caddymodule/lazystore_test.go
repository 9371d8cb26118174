package caddymodule

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/fairgate/fairgate/admission/roomstate/boltstore"
)

// TestValidateLeavesTheBoltFileAlone: `caddy validate` (which provisions a
// config and never runs it) must not open the room's bolt file: a running
// Caddy holds it, and opening would wait call_timeout and fail the
// validation of a good config.
func TestValidateLeavesTheBoltFileAlone(t *testing.T) {
	t.Setenv("FAIRGATE_IT_KEYS", testKeysJSON)
	path := filepath.Join(t.TempDir(), "rooms.db")
	held, err := boltstore.Open(path, time.Second) // the running Caddy
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	body := `{
	admin off
}
http://localhost:0 {
	waiting_room validate {
		keys_from {env.FAIRGATE_IT_KEYS}
		state_store bolt {
			path ` + path + `
			call_timeout 3s
		}
	}
	respond "origin"
}
`
	adapter := caddyfile.Adapter{ServerType: httpcaddyfile.ServerType{}}
	out, _, err := adapter.Adapt([]byte(body), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		t.Fatal(err)
	}
	var cfg caddy.Config
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := caddy.Validate(&cfg); err != nil {
		t.Fatalf("validating a good config while another process holds its bolt file: %v", err)
	}
	if took := time.Since(start); took >= 3*time.Second {
		t.Fatalf("validation waited %v for the bolt file", took)
	}
}
