package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
)

// issueToken issues a waiting token for room "sale" signed with ring, and
// returns it with its lottery ticket and issue time.
func issueToken(t *testing.T, ring *tokens.KeyRing, now time.Time) (token, lot string, iat int64) {
	t.Helper()
	room, err := admission.NewRoom(admission.RoomConfig{Name: "sale", State: admission.StateQueue, Rate: 1, Tau: time.Minute}, now)
	if err != nil {
		t.Fatal(err)
	}
	gate := admission.NewGate(ring, admission.Policy{}, queue.NewMemoryLedger(10, func() time.Time { return now }))
	tk, err := gate.Issue(room, admission.Visitor{}, now)
	if err != nil {
		t.Fatal(err)
	}
	return tk.Token, tk.Claims.Lot, tk.Claims.IssuedAt
}

func inspectJSON(t *testing.T, now time.Time, args ...string) (inspection, string) {
	t.Helper()
	var out strings.Builder
	if err := inspect(args, &out, now); err != nil {
		t.Fatalf("inspect %v: %v", args, err)
	}
	var got inspection
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("inspect output is not JSON: %v\n%s", err, out.String())
	}
	return got, out.String()
}

// TestInspect: keys from keygen sign a token that inspect explains.
func TestInspect(t *testing.T) {
	path, ring := writeKeys(t, "test")
	now := time.Now()
	tok, lot, iat := issueToken(t, ring, now)
	wantV := strconv.FormatFloat(ring.Lottery(lot), 'g', 17, 64)

	got, raw := inspectJSON(t, now, "--keys", path, "--tau", "1m", tok)
	if got.Valid == nil || !*got.Valid || got.Lottery == nil || *got.Lottery != wantV || got.Kind != "waiting token" {
		t.Fatalf("inspect = %s", raw)
	}
	if got.Header["kid"] != "test" || !strings.Contains(got.Explanation, "eligible once") || !strings.Contains(got.Explanation, "at tau 1m0s") {
		t.Fatalf("inspect = %s", raw)
	}

	// Without keys: the claims as sent, nothing derived.
	got, raw = inspectJSON(t, now, tok)
	if got.Lottery != nil || got.Valid != nil || got.Claims["lot"] != lot {
		t.Fatalf("inspect without keys: %s", raw)
	}
	if !strings.Contains(raw, fmt.Sprintf(`"iat": %d`, iat)) {
		t.Fatalf("inspect without keys does not print iat as sent (%d): %s", iat, raw)
	}

	// Tampered: invalid, with the reason.
	tampered := tok[:len(tok)-2] + "AA"
	got, raw = inspectJSON(t, now, "--keys", path, tampered)
	if got.Valid == nil || *got.Valid || !strings.Contains(got.Reason, "signature") || got.Lottery != nil {
		t.Fatalf("tampered token: %s", raw)
	}

	// Expired: invalid, and still explained.
	got, raw = inspectJSON(t, now.Add(24*time.Hour), "--keys", path, tok)
	if got.Valid == nil || *got.Valid || !strings.Contains(got.Reason, "expired") || got.Lottery == nil || *got.Lottery != wantV {
		t.Fatalf("expired token: %s", raw)
	}
}

func TestInspectRejectsWhatIsNotAJWT(t *testing.T) {
	for _, tok := range []string{"a.b", "not-a-token", "e30.e30", "!!.e30.sig"} {
		_, stderr, code := runCLI(t, "token", "inspect", tok)
		if code != 1 || !strings.Contains(stderr, "not a JWT") {
			t.Errorf("inspect %q: exit %d, stderr %q", tok, code, stderr)
		}
	}
	if _, stderr, code := runCLI(t, "token", "inspect"); code != 2 || !strings.Contains(stderr, "want one TOKEN") {
		t.Errorf("inspect without a token: exit %d, stderr %q", code, stderr)
	}
}

func TestInspectWithLiveClock(t *testing.T) {
	path, ring := writeKeys(t, "k")
	now := time.Now()
	tok, _, _ := issueToken(t, ring, now)
	var figures atomic.Value // what the admin API answers
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/rooms/sale" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, figures.Load())
	}))
	defer admin.Close()
	tests := []struct {
		figures, want string
	}{
		{`{"state":"queue","clock":-1,"clock_speed":0.01}`, "eligible in about"},
		{`{"state":"paused","clock":-1,"clock_speed":0}`, "stands still (paused)"},
		{`{"state":"queue","clock":1000,"clock_speed":0.01}`, "eligible now"},
	}
	for _, tt := range tests {
		figures.Store(tt.figures)
		got, raw := inspectJSON(t, now, "--keys", path, "--admin", admin.URL, "--admin-token", "tok", tok)
		if !strings.Contains(got.Explanation, tt.want) {
			t.Errorf("live clock %s: %s", tt.figures, raw)
		}
	}
	if _, _, code := runCLI(t, "token", "inspect", "--keys", path, "--admin", admin.URL, tok); code != 1 {
		t.Fatalf("inspect with a refused admin call: exit %d", code)
	}
}
