package main

import (
	"encoding/json"
	"github.com/fairgate/fairgate/admission/tokens"
	"os"
	"path/filepath"
	"testing"
)

// writeKeys runs keygen and saves its output as a key file.
func writeKeys(t *testing.T, kid string) (path string, ring *tokens.KeyRing) {
	t.Helper()
	keys, stderr, code := runCLI(t, "keygen", "--kid", kid)
	if code != 0 {
		t.Fatalf("keygen exit %d: %s", code, stderr)
	}
	path = filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(path, []byte(keys), 0o600); err != nil {
		t.Fatal(err)
	}
	ring, err := loadKeys(path)
	if err != nil {
		t.Fatalf("loading keygen's output: %v", err)
	}
	return path, ring
}

func TestKeygen(t *testing.T) {
	path, ring := writeKeys(t, "2026-11")
	if ring.SigningID() != "2026-11" {
		t.Fatalf("signing key %q, want the --kid", ring.SigningID())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg tokens.KeysConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	_, other := writeKeys(t, "2026-11")
	if other.Lottery("AAAAAAAAAAAAAAAAAAAAAA==") == ring.Lottery("AAAAAAAAAAAAAAAAAAAAAA==") {
		t.Fatal("two keygen runs made the same lottery key")
	}
}

func TestLoadKeysErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing.json"), bad, empty} {
		if _, err := loadKeys(path); err == nil {
			t.Errorf("loadKeys(%s) succeeded", filepath.Base(path))
		}
	}
}
