package main

import (
	"encoding/json"
	"github.com/fairgate/fairgate/admission/tokens"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKeysAdd: `fairgate keys add` adds a key to a ring and signs with it;
// what the old key signed still verifies and the lottery key is untouched.
func TestKeysAdd(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys.json")
	out, _, code := runCLI(t, "keygen", "--kid", "old")
	if code != 0 {
		t.Fatalf("keygen: %d", code)
	}
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	before := readRing(t, file)
	oldRing, err := before.Load(tokens.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	pass := tokens.PassClaims{Registered: tokens.Registered{ID: "p1", Audience: "sale", Subject: "anon:x", IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()}, Wid: "w1"}
	signed, err := tokens.NewCodec(oldRing, time.Second).Sign(&pass)
	if err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code := runCLI(t, "keys", "add", "--file", file, "--kid", "new")
	if code != 0 || !strings.Contains(stdout, "caddy reload --force") {
		t.Fatalf("keys add: %d %s %s", code, stdout, stderr)
	}
	after := readRing(t, file)
	if after.Signing != "new" || len(after.Keys) != 2 || after.Keys["old"] != before.Keys["old"] || after.Lottery != before.Lottery {
		t.Fatalf("ring after keys add: signing %q, %d keys, old kept %v, lottery kept %v",
			after.Signing, len(after.Keys), after.Keys["old"] == before.Keys["old"], after.Lottery == before.Lottery)
	}
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("mode after keys add: %v %v", info.Mode(), err)
	}
	newRing, err := after.Load(tokens.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.NewCodec(newRing, time.Second).ParsePass(signed, "sale", now); err != nil {
		t.Fatalf("a pass signed by the old key after rotation: %v", err)
	}

	if _, stderr, code := runCLI(t, "keys", "add", "--file", file, "--kid", "new"); code != 1 || !strings.Contains(stderr, `already has a key "new"`) {
		t.Fatalf("duplicate kid: %d %s", code, stderr)
	}
	if _, _, code := runCLI(t, "keys", "add", "--file", file); code != 2 {
		t.Fatalf("missing --kid: %d", code)
	}
}

func readRing(t *testing.T, file string) tokens.KeysConfig {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var k tokens.KeysConfig
	if err := json.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	return k
}
