package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimCommand runs a tiny sale with every strategy in one run, two runs
// at once, and both profiles: the table, the plot and the profiles are
// written.
func TestSimCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation skipped in -short mode")
	}
	dir := t.TempDir()
	plot, cpu, mem := filepath.Join(dir, "sim.svg"), filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	var out bytes.Buffer
	err := simulate(context.Background(), []string{"--prequeue", "60", "--arrivals", "60", "--prequeue-span", "10s",
		"--arrival-span", "10s", "--rate", "5", "--share", "0.1", "--fixed-tau", "30s", "--mixed", "--parallel", "2",
		"--plot", plot, "--cpuprofile", cpu, "--memprofile", mem}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "every strategy played in one run") || !strings.Contains(out.String(), "k anonymous tokens") {
		t.Errorf("table:\n%s", out.String())
	}
	for _, f := range []string{plot, cpu, mem} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}
