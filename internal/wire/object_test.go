package wire

import (
	"encoding/json"
	"strconv"
	"testing"
)

// flat is an object of every kind of field DecodeObject fills.
type flat struct {
	S string  `json:"s"`
	I int64   `json:"i"`
	N int     `json:"n"`
	F float64 `json:"f"`
}

func (o *flat) field(key string) any {
	switch key {
	case "s":
		return &o.S
	case "i":
		return &o.I
	case "n":
		return &o.N
	case "f":
		return &o.F
	}
	return nil
}

// FuzzDecodeObject: whatever DecodeObject accepts, json.Unmarshal accepts
// too, with the same result; with Fast off it accepts nothing.
func FuzzDecodeObject(f *testing.F) {
	for _, seed := range []string{`{"s":"x","i":-7,"n":3,"f":0.5}`, `{}`, ` { "f" : -0.5e-3 , "n":4}`, `{"n":1.0}`, `{"S":"x"}`,
		`{"s":"a\u0041"}`, `{"f":1e400}`, `{"i":9223372036854775808}`, `{"s":null}`, `{"s":"x"}x`, `{"s":"x",}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		var own, std flat
		if DecodeObject(payload, own.field) {
			if err := json.Unmarshal([]byte(payload), &std); err != nil || own != std {
				t.Fatalf("%q: DecodeObject %+v; json.Unmarshal %+v, %v", payload, own, std, err)
			}
		}
		defer SetFast(SetFast(false))
		if DecodeObject(payload, own.field) {
			t.Fatalf("%q decoded with Fast off", payload)
		}
	})
}

// TestIntegerMatchesParseInt: integer reads what strconv.ParseInt reads of
// a JSON number, at the edges of int64 too.
func TestIntegerMatchesParseInt(t *testing.T) {
	for _, s := range []string{"0", "-0", "7", "-7", "1795441192869", "999999999999999999", "-999999999999999999", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "-9223372036854775809", "18446744073709551616", "99999999999999999999", "1.0", "1e3", "-"} {
		n, end, ok := integer(s, 0)
		want, err := strconv.ParseInt(s, 10, 64)
		if _, numOK := number(s, 0); !numOK {
			err = strconv.ErrSyntax
		}
		if ok != (err == nil) || ok && (n != want || end != len(s)) {
			t.Errorf("integer(%q) = %d, %d, %v; ParseInt %d, %v", s, n, end, ok, want, err)
		}
	}
}

// TestWholeFloatMatchesParseFloat: wholeFloat reads digits only, at most
// 15, as strconv.ParseFloat reads them, and leaves anything else to it.
func TestWholeFloatMatchesParseFloat(t *testing.T) {
	for _, tc := range []struct {
		s  string
		ok bool
	}{
		{"0", true}, {"7", true}, {"1930824000", true}, {"999999999999999", true},
		{"9999999999999999", false}, {"", false}, {"-0", false}, {"-7", false}, {"0.5", false}, {"1e3", false},
	} {
		f, ok := wholeFloat(tc.s)
		if ok != tc.ok {
			t.Errorf("wholeFloat(%q) reports %v, want %v", tc.s, ok, tc.ok)
		}
		if want, _ := strconv.ParseFloat(tc.s, 64); ok && f != want {
			t.Errorf("wholeFloat(%q) = %v, ParseFloat %v", tc.s, f, want)
		}
	}
}
