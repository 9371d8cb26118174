package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"
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
		{[]string{"solve", "abc"}, 2, "want CHALLENGE DIFFICULTY"},
		{[]string{"solve", "abc", "x"}, 2, "not a number"},
		{[]string{"solve", "abc", "99"}, 1, "out of range"},
		{[]string{"token"}, 2, "want 'inspect'"},
		{[]string{"token", "lottery", "LOT"}, 2, "--key"},
		{[]string{"token", "inspect", "a.b"}, 1, "not a JWT"},
		{[]string{"help"}, 0, ""},
	}
	for _, tt := range tests {
		_, stderr, code := runCLI(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("fairgate %v: code %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}

func TestSolvePrintsAValidNonce(t *testing.T) {
	out, _, code := runCLI(t, "solve", "Y2hhbGxlbmdl", "10")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if err := admission.VerifyWork("Y2hhbGxlbmdl", 10, strings.TrimSpace(out)); err != nil {
		t.Fatalf("nonce %q: %v", out, err)
	}
}

func TestLotteryMatchesVector(t *testing.T) {
	out, _, code := runCLI(t, "token", "lottery", "--key", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "AAAAAAAAAAAAAAAAAAAAAA==")
	v, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
	if code != 0 || err != nil || v != 0.008536238395564097 {
		t.Fatalf("lottery printed %q (exit %d)", out, code)
	}
}

// TestKeygenAndInspect: keys from keygen sign a token that inspect explains.
func TestKeygenAndInspect(t *testing.T) {
	keys, _, code := runCLI(t, "keygen", "--kid", "test")
	if code != 0 {
		t.Fatalf("keygen exit %d", code)
	}
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(path, []byte(keys), 0o600); err != nil {
		t.Fatal(err)
	}
	ring, err := loadKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	room, err := admission.NewRoom(admission.RoomConfig{Name: "sale", State: admission.StateQueue, Rate: 1, Tau: time.Minute}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	gate := admission.NewGate(ring, admission.Policy{}, admission.NewMemoryLedger(10, time.Now))
	tk, err := gate.Issue(room, admission.Visitor{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	out, stderr, code := runCLI(t, "token", "inspect", "--keys", path, "--tau", "1m", tk.Token)
	if code != 0 {
		t.Fatalf("inspect exit %d: %s", code, stderr)
	}
	var got inspection
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("inspect output is not JSON: %v\n%s", err, out)
	}
	wantV := strconv.FormatFloat(ring.Lottery(tk.Claims.Lot), 'g', 17, 64)
	if got.Valid == nil || !*got.Valid || got.Lottery == nil || *got.Lottery != wantV || got.Kind != "waiting token" {
		t.Fatalf("inspect = %s", out)
	}
	if !strings.Contains(got.Explanation, "eligible once") {
		t.Fatalf("no explanation: %s", out)
	}

	// Without keys: claims only. With a tampered token: invalid, with the reason.
	out, _, _ = runCLI(t, "token", "inspect", tk.Token)
	if strings.Contains(out, "lottery_number") || !strings.Contains(out, tk.Claims.Lot) {
		t.Fatalf("inspect without keys: %s", out)
	}
	tampered := tk.Token[:len(tk.Token)-2] + "AA"
	out, _, _ = runCLI(t, "token", "inspect", "--keys", path, tampered)
	if !strings.Contains(out, `"valid": false`) || !strings.Contains(out, "signature") {
		t.Fatalf("tampered token: %s", out)
	}
}

func TestInspectWithLiveClock(t *testing.T) {
	keys, _, _ := runCLI(t, "keygen", "--kid", "k")
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(path, []byte(keys), 0o600); err != nil {
		t.Fatal(err)
	}
	ring, _ := loadKeys(path)
	room, _ := admission.NewRoom(admission.RoomConfig{Name: "sale", State: admission.StateQueue, Rate: 1, Tau: time.Minute}, time.Now())
	tk, _ := admission.NewGate(ring, admission.Policy{}, admission.NewMemoryLedger(10, time.Now)).Issue(room, admission.Visitor{}, time.Now())
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/rooms/sale" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `{"state":"queue","clock":-1,"clock_speed":0.01}`)
	}))
	defer admin.Close()
	out, stderr, code := runCLI(t, "token", "inspect", "--keys", path, "--admin", admin.URL, "--admin-token", "tok", tk.Token)
	if code != 0 || !strings.Contains(out, "eligible in about") {
		t.Fatalf("inspect with the live clock: %d %s %s", code, out, stderr)
	}
	if _, _, code := runCLI(t, "token", "inspect", "--keys", path, "--admin", admin.URL, tk.Token); code != 1 {
		t.Fatalf("inspect with a refused admin call: exit %d", code)
	}
}
