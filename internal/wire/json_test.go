package wire

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAppendersMatchEncodingJSON(t *testing.T) {
	strs := []string{"", "plain", `quote " backslash \`, "<script>&amp;</script>", "\b\f\n\r\t\x00\x01\x1f\x7f",
		"Sie sind in der Warteschlange – ça va, 待ってください", "bad \xff utf8 \xc3", "line\u2028para\u2029end", "😀"}
	for _, s := range strs {
		if got, want := string(AppendString(nil, s)), jsonOf(t, s); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
	floats := []float64{0, 1, -1, 0.5, 2.366279471, 86400, 1e-6, 9.99e-7, 1e-9, 1.5e-10, 1e20, 1e21, 1.23e25, -3e-8,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 123456789.123456789}
	for _, f := range floats {
		got, ok := AppendFloat(nil, f)
		if want := jsonOf(t, f); !ok || string(got) != want {
			t.Errorf("AppendFloat(%v) = %s, %v; want %s", f, got, ok, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, ok := AppendFloat(nil, f); ok {
			t.Errorf("AppendFloat(%v) ok; JSON has no such number", f)
		}
	}
	if got := string(AppendBool(AppendInt(nil, -42), true)); got != "-42true" {
		t.Errorf("AppendInt, AppendBool = %s", got)
	}
}

// TestAppendStringEveryByteAnywhere: AppendString and plainText read
// eight bytes a step, then the rest one by one (NoneMarked): every byte,
// and every sequence encoding/json treats apart, at every position of the
// steps and the rest, is written as encoding/json writes it, and counted
// plain only when encoding/json writes it as it is (and, in ASCII,
// always then).
func TestAppendStringEveryByteAnywhere(t *testing.T) {
	var pieces []string
	for c := range 256 {
		pieces = append(pieces, string([]byte{byte(c)}))
	}
	pieces = append(pieces, "\u2028", "\u2029", "é", "\xe2\x80")
	const n = 18 // two eight-byte steps and a rest of two
	for _, piece := range pieces {
		for at := 0; at+len(piece) <= n; at++ {
			s := strings.Repeat("a", at) + piece + strings.Repeat("a", n-at-len(piece))
			want := jsonOf(t, s)
			if got := string(AppendString(nil, s)); got != want {
				t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
			}
			// Plain only where encoding/json writes s as it is; beyond
			// ASCII it may say no (the careful path writes the same).
			asIs := want == `"`+s+`"`
			if got := plainText(s); got && !asIs || !got && asIs && piece[0] < utf8.RuneSelf {
				t.Fatalf("plainText(%q) = %v; encoding/json writes %s", s, got, want)
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "<&>", "\u2028", "\xff", `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(AppendString(nil, s)), jsonOf(t, s); got != want {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, 1e-7, 1e21, 2.5} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		got, ok := AppendFloat(nil, v)
		want, err := json.Marshal(v)
		if ok != (err == nil) || ok && string(got) != string(want) {
			t.Fatalf("AppendFloat(%v) = %s, %v; encoding/json: %s, %v", v, got, ok, want, err)
		}
	})
}
