package tokens

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/internal/wire"
)

// FuzzDecodeClaims: whatever decodeClaims accepts, json.Unmarshal accepts
// too, with the same result.
func FuzzDecodeClaims(f *testing.F) {
	wait, _ := json.Marshal(validWait(t0))
	pass, _ := json.Marshal(&PassClaims{Registered: validWait(t0).Registered, Wid: "w", Ses: "s", Bnd: "b"})
	for _, seed := range []string{string(wait), string(pass), `{}`, ` { "srv" : -0.5e-3 , "dif":4}`, `{"dif":1.0}`, `{"JTI":"x"}`,
		`{"jti":"a\u0041"}`, `{"srv":1e400}`, `{"iat":9223372036854775808}`, `{"lot":null}`, `{"jti":"x"}x`, `{"jti":"x",}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var own, std WaitClaims
		if decodeClaims(string(payload), &own) {
			if err := json.Unmarshal(payload, &std); err != nil || !reflect.DeepEqual(own, std) {
				t.Fatalf("%q: decodeClaims %+v; json.Unmarshal %+v, %v", payload, own, std, err)
			}
		}
		var ownPass, stdPass PassClaims
		if decodeClaims(string(payload), &ownPass) {
			if err := json.Unmarshal(payload, &stdPass); err != nil || !reflect.DeepEqual(ownPass, stdPass) {
				t.Fatalf("%q: decodeClaims %+v; json.Unmarshal %+v, %v", payload, ownPass, stdPass, err)
			}
		}
	})
}

// TestDecodeClaimsKnowsEveryField: every json key of the claim types has
// its field in decodeClaims, so a claim added later is not decoded by
// json.Unmarshal on every request unnoticed; and Sign's output is decoded
// without falling back.
func TestDecodeClaimsKnowsEveryField(t *testing.T) {
	for _, c := range []claimFields{&WaitClaims{}, &PassClaims{}} {
		typ := reflect.TypeOf(c).Elem()
		for _, f := range reflect.VisibleFields(typ) {
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			p := c.field(tag)
			if p == nil || reflect.TypeOf(p).Elem() != f.Type {
				t.Errorf("%s.%s (json %q): decodeClaims has no field of its type", typ.Name(), f.Name, tag)
			}
		}
	}
	claims := validWait(t0)
	claims.Bnd, claims.Lane, claims.Srv = "bind", "vip", 12.5
	raw, _ := json.Marshal(claims)
	var got WaitClaims
	if !decodeClaims(string(raw), &got) || !reflect.DeepEqual(&got, claims) {
		t.Fatalf("Sign's payload %s: decoded %+v", raw, got)
	}
}

// FuzzEncodeClaims: what encodeClaims writes is json.Marshal's bytes.
func FuzzEncodeClaims(f *testing.F) {
	f.Add("0193-id", "anon:x", int64(1_900_000_000), 12.5, 16, "")
	f.Add("", "", int64(0), 0.0, 0, "")
	f.Add("a<b", "ü", int64(-1), 1e-7, -3, "vip")
	f.Add("x", "y", int64(9_223_372_036_854_775_807), 1e21, 1, "\x7f")
	f.Add("x", "y", int64(1), -123456789.125, 1, "b")
	f.Fuzz(func(t *testing.T, s1, s2 string, n int64, x float64, d int, s3 string) {
		wait := &WaitClaims{
			Registered: Registered{ID: s1, Audience: s2, Subject: s3, IssuedAt: n, ExpiresAt: -n},
			Lot:        s2, Srv: x, Ch: s1, Dif: d, Nxt: n / 3, Bnd: s3, Lane: s3,
		}
		pass := &PassClaims{Registered: wait.Registered, Wid: s1, Ses: s3, Bnd: s2}
		for _, c := range []claimFields{wait, pass} {
			got, ok := encodeClaims(nil, c)
			if !ok {
				continue
			}
			want, err := json.Marshal(c)
			if err != nil || string(got) != string(want) {
				t.Fatalf("encodeClaims %s\njson.Marshal %s (%v)", got, want, err)
			}
		}
	})
}

// TestEncodeClaimsEveryField: every field set, encoded as json.Marshal
// does, by encodeClaims itself (not its fallback).
func TestEncodeClaimsEveryField(t *testing.T) {
	for _, c := range []claimFields{&WaitClaims{}, &PassClaims{}} {
		v := reflect.ValueOf(c).Elem()
		for i, f := range reflect.VisibleFields(v.Type()) {
			switch fv := v.FieldByIndex(f.Index); fv.Kind() {
			case reflect.String:
				fv.SetString(f.Name)
			case reflect.Int, reflect.Int64:
				fv.SetInt(int64(1000 + i))
			case reflect.Float64:
				fv.SetFloat(float64(i) + 0.25)
			}
		}
		got, ok := encodeClaims(nil, c)
		want, _ := json.Marshal(c)
		if !ok || string(got) != string(want) {
			t.Errorf("%T: encodeClaims %s (%v), json.Marshal %s", c, got, ok, want)
		}
	}
}

// TestCodecEitherWire: a token signed and verified with the hand-written
// claims code or with encoding/json is the same token with the same claims.
func TestCodecEitherWire(t *testing.T) {
	codec := NewCodec(testRing(t, "k1", "k1"), time.Second)
	claims := validWait(t0)
	claims.Srv, claims.Bnd, claims.Lane, claims.Pos, claims.Lk = 12.5, "bind", "vip", 42, 3.25
	var tokens [2]string
	for i, fast := range []bool{true, false} {
		was := wire.SetFast(fast)
		tok, err := codec.Sign(claims)
		if err != nil {
			t.Fatal(err)
		}
		got, err := codec.ParseWait(tok, "sale", t0)
		wire.SetFast(was)
		if err != nil || !reflect.DeepEqual(got, claims) {
			t.Fatalf("fast=%v: ParseWait = %+v, %v; want %+v", fast, got, err, claims)
		}
		tokens[i] = tok
	}
	if tokens[0] != tokens[1] {
		t.Fatalf("signed differently:\nhand-written %s\nencoding/json %s", tokens[0], tokens[1])
	}
}
