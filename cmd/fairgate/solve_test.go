package main

import (
	"github.com/fairgate/fairgate/admission/tokens"
	"strings"
	"testing"
)

func TestSolve(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		challenge string // "" when the call must fail
		code      int
		stderr    string
	}{
		{"plain challenge", []string{"Y2hhbGxlbmdl", "10"}, "Y2hhbGxlbmdl", 0, ""},
		// A base64url challenge begins with '-' one time in 64: it is a
		// challenge, not an unknown flag.
		{"challenge beginning with a dash", []string{"-Y2hhbGxlbmdl", "10"}, "-Y2hhbGxlbmdl", 0, ""},
		{"challenge that looks like a long flag", []string{"--Y2hhbGxl", "10"}, "--Y2hhbGxl", 0, ""},
		{"after --", []string{"--", "-Y2hhbGxlbmdl", "10"}, "-Y2hhbGxlbmdl", 0, ""},
		{"challenge -h with a difficulty", []string{"-h", "10"}, "-h", 0, ""},
		{"one argument", []string{"abc"}, "", 2, "want CHALLENGE DIFFICULTY"},
		{"three arguments", []string{"abc", "10", "x"}, "", 2, "want CHALLENGE DIFFICULTY"},
		{"difficulty not a number", []string{"abc", "x"}, "", 2, "not a number"},
		{"difficulty out of range", []string{"abc", "99"}, "", 1, "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, append([]string{"solve"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.stderr)
			}
			if tt.challenge == "" {
				return
			}
			if err := tokens.VerifyWork(tt.challenge, 10, strings.TrimSpace(out)); err != nil {
				t.Fatalf("nonce %q for %q: %v", out, tt.challenge, err)
			}
		})
	}
}
