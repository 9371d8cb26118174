package admission

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
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
		if decodeClaims(payload, &own) {
			if err := json.Unmarshal(payload, &std); err != nil || !reflect.DeepEqual(own, std) {
				t.Fatalf("%q: decodeClaims %+v; json.Unmarshal %+v, %v", payload, own, std, err)
			}
		}
		var ownPass, stdPass PassClaims
		if decodeClaims(payload, &ownPass) {
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
	if !decodeClaims(raw, &got) || !reflect.DeepEqual(&got, claims) {
		t.Fatalf("Sign's payload %s: decoded %+v", raw, got)
	}
}
