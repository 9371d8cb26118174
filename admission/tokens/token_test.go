package tokens

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func validWait(now time.Time) *WaitClaims {
	return &WaitClaims{
		Registered: Registered{
			ID: "0193-id", Subject: "anon:x", Audience: "sale",
			IssuedAt: now.Unix(), ExpiresAt: now.Add(10 * time.Minute).Unix(),
		},
		Lot: "AAAAAAAAAAAAAAAAAAAAAA==", Ch: "Y2hhbGxlbmdl", Dif: 4, Nxt: now.UnixMilli(),
	}
}

func signWith(t *testing.T, method jwt.SigningMethod, kid string, key any, claims jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseWaitRejections(t *testing.T) {
	ring := testRing(t, "k1", "k1")
	codec := NewCodec(ring, 5*time.Second)
	good, err := codec.Sign(validWait(t0))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, ".")
	noneToken := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"k1"}`)) + "." + parts[1] + "."
	rsHeader := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT","kid":"k1"}`))
	missing := validWait(t0)
	missing.Lot = ""
	noExp := validWait(t0)
	noExp.ExpiresAt = 0
	otherRoom := validWait(t0)
	otherRoom.Audience = "other"
	future := validWait(t0.Add(time.Hour))

	tests := []struct {
		name  string
		token string
		now   time.Time
		want  error
	}{
		{"good", good, t0, nil},
		{"good within leeway after expiry", good, t0.Add(10*time.Minute + 4*time.Second), nil},
		{"expired", good, t0.Add(10*time.Minute + 6*time.Second), ErrExpired},
		{"alg none", noneToken, t0, errAlgorithm},
		{"alg none with a signature", noneToken + parts[2], t0, errAlgorithm},
		{"HS512 with the right secret", signWith(t, jwt.SigningMethodHS512, "k1", secretOf("key k1"), validWait(t0)), t0, errAlgorithm},
		{"RS256 header on an HMAC signature", rsHeader + "." + parts[1] + "." + parts[2], t0, errAlgorithm},
		{"unknown alg", base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"XX1","kid":"k1"}`)) + "." + parts[1] + "." + parts[2], t0, errAlgorithm},
		{"unknown kid", signWith(t, jwt.SigningMethodHS256, "k9", secretOf("key k9"), validWait(t0)), t0, errUnknownKey},
		{"no kid", signWith(t, jwt.SigningMethodHS256, "", secretOf("key k1"), validWait(t0)), t0, errUnknownKey},
		{"wrong secret", signWith(t, jwt.SigningMethodHS256, "k1", secretOf("guess"), validWait(t0)), t0, errSignature},
		{"other room", mustSign(t, codec, otherRoom), t0, errAudience},
		{"issued in the future", mustSign(t, codec, future), t0, errNotYetValid},
		{"no expiry", mustSign(t, codec, noExp), t0, errClaims},
		{"missing lottery", mustSign(t, codec, missing), t0, errClaims},
		{"garbage", "not a token", t0, ErrMalformed},
		{"empty", "", t0, ErrMalformed},
		{"two parts", parts[0] + "." + parts[1], t0, ErrMalformed},
		{"payload not json, signed", signRaw(parts[0]+".bm90IGpzb24", secretOf("key k1")), t0, ErrMalformed},
		{"payload changed", parts[0] + ".bm90IGpzb24." + parts[2], t0, errSignature},
		{"oversized", strings.Repeat("a", maxTokenBytes+1), t0, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims, err := codec.ParseWait(tt.token, "sale", tt.now)
			if tt.want == nil {
				if err != nil || claims.Lot == "" {
					t.Fatalf("ParseWait: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("ParseWait error %v, want %v", err, tt.want)
			}
		})
	}
}

// signRaw signs arbitrary segments, as an attacker holding the key could.
func signRaw(signingInput string, key []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signingInput))
	return signingInput + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func mustSign(t *testing.T, c *Codec, claims jwt.Claims) string {
	t.Helper()
	s, err := c.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFlippedByteRejected flips one bit in every byte of a valid token: no
// single change anywhere may still verify.
func TestFlippedByteRejected(t *testing.T) {
	codec := NewCodec(testRing(t, "k1", "k1"), 0)
	good := mustSign(t, codec, validWait(t0))
	for i := range len(good) {
		b := []byte(good)
		b[i] ^= 0x01
		if _, err := codec.ParseWait(string(b), "sale", t0); err == nil {
			t.Fatalf("token with byte %d flipped (%q) verified", i, b[i])
		}
	}
}

// TestKeyRotation: a token signed before a rotation verifies after it for as
// long as its key stays in the ring.
func TestKeyRotation(t *testing.T) {
	old := NewCodec(testRing(t, "k1", "k1"), 0)
	rotated := NewCodec(testRing(t, "k2", "k1", "k2"), 0)
	retired := NewCodec(testRing(t, "k2", "k2"), 0)
	tok := mustSign(t, old, validWait(t0))
	if _, err := rotated.ParseWait(tok, "sale", t0); err != nil {
		t.Fatalf("old token after rotation: %v", err)
	}
	newTok := mustSign(t, rotated, validWait(t0))
	if !strings.Contains(string(mustDecodeHeader(t, newTok)), `"kid":"k2"`) {
		t.Fatalf("rotated ring did not sign with k2: %s", mustDecodeHeader(t, newTok))
	}
	if _, err := retired.ParseWait(tok, "sale", t0); !errors.Is(err, errUnknownKey) {
		t.Fatalf("token of a retired key: %v, want errUnknownKey", err)
	}
	// signer names a key by its position: the codec's header there must
	// name the same key, or every token of it goes the slow way.
	for i, id := range rotated.keys.order {
		if h := rotated.headers[i]; !strings.Contains(string(mustDecodeHeader(t, h+".")), `"kid":"`+id+`"`) {
			t.Errorf("header %d names %s, want %q", i, mustDecodeHeader(t, h+"."), id)
		}
	}
	if got := rotated.keys.signer(tok); got < 0 || rotated.keys.order[got] != "k1" {
		t.Fatalf("signer of the old token: %d, want k1's position", got)
	}
}

func mustDecodeHeader(t *testing.T, tok string) []byte {
	t.Helper()
	h, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestParsePass(t *testing.T) {
	codec := NewCodec(testRing(t, "k1", "k1"), 0)
	pass := &PassClaims{Registered: Registered{ID: "p1", Audience: "sale", Subject: "u",
		IssuedAt: t0.Unix(), ExpiresAt: t0.Add(time.Minute).Unix()}, Wid: "w1", Ses: "s1"}
	tok := mustSign(t, codec, pass)
	got, err := codec.ParsePass(tok, "sale", t0)
	if err != nil || got.Wid != "w1" || got.Ses != "s1" || got.Audience != "sale" {
		t.Fatalf("ParsePass = %+v, %v", got, err)
	}
	// A waiting token is not a pass: it has no wid.
	if _, err := codec.ParsePass(mustSign(t, codec, validWait(t0)), "sale", t0); !errors.Is(err, errClaims) {
		t.Fatalf("waiting token accepted as a pass: %v", err)
	}
}

// TestParseMatchesGolangJWT holds the codec's own decoding of the tokens it
// signs to golang-jwt's verdict on the same tokens, at every edge of exp,
// iat (with leeway), aud and missing claims, for waiting tokens and passes.
func TestParseMatchesGolangJWT(t *testing.T) {
	const leeway = 5 * time.Second
	codec := NewCodec(testRing(t, "k1", "k0", "k1"), leeway)
	old := NewCodec(testRing(t, "k0", "k0", "k1"), leeway) // a token of the rotated-out key
	reasons := []error{ErrMalformed, errAlgorithm, errUnknownKey, errSignature, errAudience, ErrExpired, errNotYetValid, errClaims}
	reasonOf := func(err error) error {
		for _, r := range reasons {
			if errors.Is(err, r) {
				return r
			}
		}
		return err
	}
	exp := t0.Add(10 * time.Minute)
	cases := []struct {
		name   string
		mutate func(*Registered)
		now    time.Time
		room   string
	}{
		{"valid", nil, t0, "sale"},
		{"at exp", nil, exp, "sale"},
		{"within leeway after exp", nil, exp.Add(leeway - time.Nanosecond), "sale"},
		{"at exp plus leeway", nil, exp.Add(leeway), "sale"},
		{"iat within leeway", nil, t0.Add(-leeway), "sale"},
		{"iat beyond leeway", nil, t0.Add(-leeway - time.Nanosecond), "sale"},
		{"other room", nil, t0, "other"},
		{"empty room", nil, t0, ""},
		{"no exp", func(r *Registered) { r.ExpiresAt = 0 }, t0, "sale"},
		{"no iat", func(r *Registered) { r.IssuedAt = 0 }, t0, "sale"},
		{"no aud", func(r *Registered) { r.Audience = "" }, t0, "sale"},
		{"no aud, empty room", func(r *Registered) { r.Audience = "" }, t0, ""},
		{"no aud, expired", func(r *Registered) { r.Audience = "" }, exp.Add(time.Hour), "sale"},
		{"no exp, not yet valid", func(r *Registered) { r.ExpiresAt = 0 }, t0.Add(-time.Hour), "sale"},
		{"other room, expired", nil, exp.Add(time.Hour), "other"},
		{"expired and not yet valid", func(r *Registered) { r.IssuedAt = exp.Add(time.Hour).Unix() }, exp.Add(time.Minute), "sale"},
	}
	for _, tc := range cases {
		for _, signer := range []*Codec{codec, old} {
			wait := validWait(t0)
			pass := &PassClaims{Registered: wait.Registered, Wid: "w"}
			if tc.mutate != nil {
				tc.mutate(&wait.Registered)
				tc.mutate(&pass.Registered)
			}
			for _, claims := range []jwt.Claims{wait, pass} {
				token, err := signer.Sign(claims)
				if err != nil {
					t.Fatal(err)
				}
				var own, lib jwt.Claims = new(WaitClaims), new(WaitClaims)
				if _, ok := claims.(*PassClaims); ok {
					own, lib = new(PassClaims), new(PassClaims)
				}
				gotOwn := codec.parse(token, tc.room, tc.now, own)
				gotLib := codec.parseJWT(token, tc.room, tc.now, lib)
				if reasonOf(gotOwn) != reasonOf(gotLib) {
					t.Errorf("%s (%T): own decoding says %v, golang-jwt %v", tc.name, claims, gotOwn, gotLib)
				}
				if gotOwn == nil && !reflect.DeepEqual(own, lib) {
					t.Errorf("%s: own decoding gives %+v, golang-jwt %+v", tc.name, own, lib)
				}
			}
		}
	}
}

// TestSignMatchesGolangJWT: Sign's pooled HMAC makes golang-jwt's signature.
func TestSignMatchesGolangJWT(t *testing.T) {
	codec := NewCodec(testRing(t, "k1", "k1"), time.Second)
	token, err := codec.Sign(validWait(t0))
	if err != nil {
		t.Fatal(err)
	}
	dot := strings.LastIndexByte(token, '.')
	sig, err := jwt.SigningMethodHS256.Sign(token[:dot], secretOf("key k1"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := token[dot+1:], base64.RawURLEncoding.EncodeToString(sig); got != want {
		t.Fatalf("signature %s, golang-jwt's %s", got, want)
	}
}
