package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/fairgate/fairgate/admission/tokens"
	"io"
	"os"
	"time"
)

// keygen is `fairgate keygen`: a new key file, the JSON that every front
// door's keys option and loadKeys read.
func keygen(_ context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("keygen", stdout)
	kid := fs.String("kid", time.Now().UTC().Format("2006-01-02"), "id of the new signing key")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	cfg, err := tokens.GenerateKeys(*kid)
	if err != nil {
		return err
	}
	return writeJSON(stdout, cfg)
}

// loadKeys reads a key file as keygen writes it.
func loadKeys(path string) (*tokens.KeyRing, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading keys: %w", err)
	}
	var cfg tokens.KeysConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("parsing keys %s: %w", path, err)
	}
	ring, err := cfg.Load(tokens.Environment{})
	if err != nil {
		return nil, fmt.Errorf("loading keys: %w", err)
	}
	return ring, nil
}
