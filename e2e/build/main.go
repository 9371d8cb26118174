// Command build builds Caddy with fairgate from xcaddy.json, the build
// manifest in the JSON shape of xcaddy's Builder, so the manifest itself is
// what the end-to-end tests exercise. Relative replacement paths are taken
// from the manifest's directory, as xcaddy's CLI does for `--with …=./path`.
//
//	go run ./e2e/build xcaddy.json /tmp/caddy
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/caddyserver/xcaddy"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: build MANIFEST OUTPUT")
		os.Exit(2)
	}
	if err := build(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
}

func build(manifest, output string) error {
	raw, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	var b xcaddy.Builder
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return fmt.Errorf("%s: %w", manifest, err)
	}
	base, err := filepath.Abs(filepath.Dir(manifest))
	if err != nil {
		return err
	}
	for i, r := range b.Replacements {
		if p := string(r.New); strings.HasPrefix(p, ".") {
			b.Replacements[i].New = xcaddy.ReplacementPath(filepath.Join(base, p))
		}
	}
	if b.TimeoutBuild == 0 {
		b.TimeoutBuild = 10 * time.Minute
	}
	if b.TimeoutGet == 0 {
		b.TimeoutGet = 5 * time.Minute
	}
	out, err := filepath.Abs(output)
	if err != nil {
		return err
	}
	return b.Build(context.Background(), out)
}
