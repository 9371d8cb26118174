package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/fairgate/fairgate/admission/tokens"
	"io"
	"os"
	"path/filepath"
)

// keysCommand is `fairgate keys add`: key rotation on a key file that Caddy
// (keys_from) or `fairgate proxy` reads.
func keysCommand(_ context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "add" {
		return usageErr("want: keys add --file FILE --kid KID")
	}
	fs := newFlags("keys add", stdout)
	file := fs.String("file", "", "the key file (the JSON `fairgate keygen` printed)")
	kid := fs.String("kid", "", "id of the new key, e.g. 2026-12")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *file == "" || *kid == "" || fs.NArg() > 0 {
		return usageErr("want: keys add --file FILE --kid KID")
	}
	return addKey(*file, *kid, stdout)
}

// addKey adds a new signing key to the ring in file and makes it the one
// that signs. Every old key still verifies, so passes and waiting tokens
// signed before stay valid; the lottery key stays, so nobody's place moves.
// The file is replaced atomically, keeping its permissions.
func addKey(file, kid string, stdout io.Writer) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var ring tokens.KeysConfig
	if err := json.Unmarshal(raw, &ring); err != nil {
		return fmt.Errorf("%s is not the JSON of `fairgate keygen`: %w", file, err)
	}
	if _, err := ring.Load(tokens.Environment{}); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if _, taken := ring.Keys[kid]; taken {
		return fmt.Errorf("%s already has a key %q: choose another --kid", file, kid)
	}
	fresh, err := tokens.GenerateKeys(kid)
	if err != nil {
		return err
	}
	ring.Keys[kid] = fresh.Keys[kid]
	ring.Signing = kid
	if _, err := ring.Load(tokens.Environment{}); err != nil {
		return err
	}
	out, err := json.MarshalIndent(ring, "", "  ")
	if err != nil {
		return err
	}
	info, err := os.Stat(file)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".keys-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(out, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: key %q added and signing; %d keys verify. Reload to use it: caddy reload --force (an unchanged Caddyfile is otherwise a no-op).\n", file, kid, len(ring.Keys))
	return nil
}
