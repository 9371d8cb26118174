package main

import (
	"strconv"
	"strings"
	"testing"
)

func TestLottery(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		// The first vector of admission/tokens/testdata/lottery_vectors.json.
		{[]string{"--key", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "AAAAAAAAAAAAAAAAAAAAAA=="}, 0, "0.008536238395564097", ""},
		{[]string{"LOT"}, 2, "", "--key"},
		{[]string{"--key", "not base64!", "LOT"}, 2, "", "not base64"},
		{[]string{"--key", "AAEC", "LOT", "extra"}, 2, "", "--key"},
	}
	for _, tt := range tests {
		out, stderr, code := runCLI(t, append([]string{"token", "lottery"}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("token lottery %v: exit %d, stderr %q", tt.args, code, stderr)
			continue
		}
		if tt.stdout == "" {
			continue
		}
		got, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
		want, _ := strconv.ParseFloat(tt.stdout, 64)
		if err != nil || got != want {
			t.Errorf("token lottery %v printed %q, want %s", tt.args, out, tt.stdout)
		}
	}
}
