package caddymodule

import (
	"fmt"
	"os"
	"testing"
)

// TestMain gives the package's tests a data directory of their own, so no
// test reads or writes the rooms of the machine's Caddy (the default state
// store is in Caddy's data directory).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fairgate-caddymodule-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_DATA_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
