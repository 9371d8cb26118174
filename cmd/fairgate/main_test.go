package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: fairgate"},
		{[]string{"nope"}, 2, "unknown command"},
		{[]string{"token"}, 2, "want 'inspect'"},
		{[]string{"token", "nope"}, 2, "unknown token command"},
		{[]string{"keygen", "extra"}, 2, "unexpected argument"},
		{[]string{"version", "extra"}, 2, "unexpected argument"},
		{[]string{"help"}, 0, ""},
	}
	for _, tt := range tests {
		_, stderr, code := runCLI(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("fairgate %v: code %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}

// TestHelpListsEveryCommand: the top-level help names each command, and
// each command's -h prints its synopsis and flags to stdout, exit 0.
func TestHelpListsEveryCommand(t *testing.T) {
	top, _, code := runCLI(t, "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, c := range commands {
		if !strings.Contains(top, "\n  "+c.name) {
			t.Errorf("top-level help does not list %q:\n%s", c.name, top)
		}
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"keygen", "-h"}, []string{"fairgate keygen", "-kid"}},
		{[]string{"token", "--help"}, []string{"fairgate token inspect", "fairgate token lottery"}},
		{[]string{"token", "inspect", "-h"}, []string{"fairgate token inspect", "-keys", "-admin"}},
		{[]string{"token", "lottery", "-h"}, []string{"fairgate token lottery", "-key"}},
		{[]string{"solve", "-h"}, []string{"fairgate solve [--] CHALLENGE DIFFICULTY"}},
		{[]string{"sim", "-h"}, []string{"fairgate sim", "-prequeue"}},
		{[]string{"proxy", "-h"}, []string{"fairgate proxy", "-upstream", "-metrics-public"}},
		{[]string{"proxy", "init-tables", "-h"}, []string{"fairgate proxy init-tables", "-table", "-dynamodb-endpoint"}},
		{[]string{"demo", "-h"}, []string{"fairgate demo", "-crowd"}},
		{[]string{"version", "-h"}, []string{"fairgate version"}},
		// `seats --help` names its subcommands.
		{[]string{"seats", "--help"}, []string{"fairgate seats [serve]", "fairgate seats layout", "fairgate seats init-tables", "-keys"}},
		{[]string{"seats", "layout", "-h"}, []string{"fairgate seats layout", "-id"}},
		{[]string{"seats", "init-tables", "-h"}, []string{"fairgate seats init-tables", "-table-prefix"}},
	}
	for _, tt := range tests {
		out, stderr, code := runCLI(t, tt.args...)
		if code != 0 || stderr != "" {
			t.Errorf("fairgate %v: exit %d, stderr %q", tt.args, code, stderr)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("fairgate %v: help lacks %q:\n%s", tt.args, w, out)
			}
		}
	}
}

// TestBadFlagPrintsItsErrorOnce: a bad flag's error is printed once, by
// the flag package, not again by the CLI.
func TestBadFlagPrintsItsErrorOnce(t *testing.T) {
	for _, args := range [][]string{
		{"keygen", "--nope"},
		{"token", "lottery", "--nope", "LOT"},
		{"token", "inspect", "--tau", "soon", "TOKEN"},
		{"sim", "--rate"},
		{"seats", "--nope"},
		{"seats", "layout", "--nope"},
		{"proxy", "--nope"},
		{"demo", "--nope"},
	} {
		stdout, stderr, code := runCLI(t, args...)
		if code != 2 || stdout != "" {
			t.Errorf("fairgate %v: exit %d, stdout %q; want 2 and nothing", args, code, stdout)
		}
		if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, " -h')") {
			t.Errorf("fairgate %v: stderr %q; want one line pointing at -h", args, stderr)
		}
	}
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// builtBinary builds cmd/fairgate once, to test what a user runs.
func builtBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fairgate-cli")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "fairgate")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = err
			binary = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building fairgate: %v\n%s", buildErr, binary)
	}
	return binary
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" && buildErr == nil {
		os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

// TestBinary runs the built binary as a user does: exit status and streams.
func TestBinary(t *testing.T) {
	bin := builtBinary(t)
	tests := []struct {
		args       []string
		code       int
		wantStdout string
		wantStderr string
	}{
		{[]string{"--help"}, 0, "usage: fairgate", ""},
		{[]string{"version"}, 0, "fairgate ", ""},
		{[]string{"seats", "--help"}, 0, "fairgate seats init-tables", ""},
		{[]string{"keygen", "--nope"}, 2, "", "fairgate keygen: usage: flag provided but not defined: -nope (see 'fairgate keygen -h')\n"},
		{[]string{"solve", "-Y2hhbGxlbmdl", "4"}, 0, "", ""},
		{[]string{"solve", "--", "-Y2hhbGxlbmdl", "4"}, 0, "", ""},
	}
	for _, tt := range tests {
		cmd := exec.Command(bin, tt.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if code != tt.code || err != nil && tt.code == 0 {
			t.Errorf("fairgate %v: exit %d (%v), stderr %q", tt.args, code, err, stderr.String())
		}
		if !strings.Contains(stdout.String(), tt.wantStdout) {
			t.Errorf("fairgate %v: stdout %q lacks %q", tt.args, stdout.String(), tt.wantStdout)
		}
		if tt.wantStderr != "" && stderr.String() != tt.wantStderr || tt.code == 0 && stderr.Len() != 0 {
			t.Errorf("fairgate %v: stderr %q, want %q", tt.args, stderr.String(), tt.wantStderr)
		}
	}
}
