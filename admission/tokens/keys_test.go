package tokens

import (
	"encoding/base64"
	"errors"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestKeysConfigLoad(t *testing.T) {
	k1 := base64.StdEncoding.EncodeToString(secretOf("a"))
	k2 := base64.RawURLEncoding.EncodeToString(secretOf("b"))
	lot := base64.StdEncoding.EncodeToString(secretOf("lot"))
	env := Environment{
		Getenv: func(name string) string {
			return map[string]string{"FG_K2": k2, "FG_LOT": lot}[name]
		},
		ReadFile: func(path string) ([]byte, error) {
			if path == "/secrets/k1" {
				return []byte(k1 + "\n"), nil
			}
			return nil, fs.ErrNotExist
		},
	}
	tests := []struct {
		name    string
		cfg     KeysConfig
		wantErr string
	}{
		{"inline", KeysConfig{Signing: "a", Keys: map[string]string{"a": k1}, Lottery: lot}, ""},
		{"env and file", KeysConfig{Signing: "b", Keys: map[string]string{"a": "file:/secrets/k1", "b": "env:FG_K2"}, Lottery: "env:FG_LOT"}, ""},
		{"no keys", KeysConfig{Signing: "a", Lottery: lot}, "no signing keys"},
		{"signing key missing", KeysConfig{Signing: "z", Keys: map[string]string{"a": k1}, Lottery: lot}, "not among"},
		{"unset env", KeysConfig{Signing: "a", Keys: map[string]string{"a": "env:NOPE"}, Lottery: lot}, "NOPE is empty"},
		{"missing file", KeysConfig{Signing: "a", Keys: map[string]string{"a": "file:/nope"}, Lottery: lot}, "reading secret file"},
		{"not base64", KeysConfig{Signing: "a", Keys: map[string]string{"a": "!!!"}, Lottery: lot}, "not base64"},
		{"short", KeysConfig{Signing: "a", Keys: map[string]string{"a": "c2hvcnQ="}, Lottery: lot}, "need at least 32"},
		{"no lottery", KeysConfig{Signing: "a", Keys: map[string]string{"a": k1}}, "lottery key"},
		{"lottery reuses signing key", KeysConfig{Signing: "a", Keys: map[string]string{"a": k1}, Lottery: k1}, "must not also be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ring, err := tt.cfg.Load(env)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if ring.SigningID() != tt.cfg.Signing {
					t.Fatalf("signing id %q, want %q", ring.SigningID(), tt.cfg.Signing)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestGenerateKeysLoads(t *testing.T) {
	cfg, err := GenerateKeys("2026-11")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := cfg.Load(Environment{ReadFile: func(string) ([]byte, error) { return nil, errors.New("unused") }})
	if err != nil {
		t.Fatalf("generated keys do not load: %v", err)
	}
	if got := ring.ids(); len(got) != 1 || got[0] != "2026-11" {
		t.Fatalf("ids %v", got)
	}
}

// TestIdentityLot: one draw per subject and room, different across either,
// and a valid lottery ticket (16 bytes, standard padded base64).
func TestIdentityLot(t *testing.T) {
	ring := testRing(t, "k1", "k1")
	a := ring.IdentityLot("sale", "alice")
	if a != ring.IdentityLot("sale", "alice") {
		t.Fatal("the same subject drew twice")
	}
	for _, other := range []string{ring.IdentityLot("sale", "bob"), ring.IdentityLot("other", "alice"), ring.IdentityLot("sal", "ealice")} {
		if other == a {
			t.Fatalf("draws collide: %s", a)
		}
	}
	if b, err := base64.StdEncoding.DecodeString(a); err != nil || len(b) != 16 {
		t.Fatalf("lot %q: %v", a, err)
	}
}

// TestDrawPhaseIsIndependent: a draw's checkpoint phase (which nxt shows)
// and its lottery number (which stays secret) come from different halves
// of the hash, so nxt says nothing of v: over many tickets the two are
// uncorrelated, each uniform, and Lottery is the draw's number.
func TestDrawPhaseIsIndependent(t *testing.T) {
	ring := testRing(t, "k1", "k1")
	const n = 4000
	var sv, sp, svv, spp, svp float64
	for i := range n {
		lot := ring.IdentityLot("sale", strconv.Itoa(i))
		d := ring.Draw(lot)
		if d.Number != ring.Lottery(lot) {
			t.Fatalf("Lottery(%q) %v, draw's number %v", lot, ring.Lottery(lot), d.Number)
		}
		if d.Number < 0 || d.Number >= 1 || d.Phase < 0 || d.Phase >= 1 {
			t.Fatalf("draw %+v outside [0, 1)", d)
		}
		sv, sp, svv, spp, svp = sv+d.Number, sp+d.Phase, svv+d.Number*d.Number, spp+d.Phase*d.Phase, svp+d.Number*d.Phase
	}
	mv, mp := sv/n, sp/n
	r := (svp/n - mv*mp) / math.Sqrt((svv/n-mv*mv)*(spp/n-mp*mp))
	// Standard errors: 1/sqrt(12n) = 0.005 for a mean, 1/sqrt(n) = 0.016 for r.
	if math.Abs(mv-0.5) > 0.025 || math.Abs(mp-0.5) > 0.025 || math.Abs(r) > 0.08 {
		t.Fatalf("means %.4f and %.4f, correlation %.4f: want two independent uniform numbers", mv, mp, r)
	}
}
