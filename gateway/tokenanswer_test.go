package gateway

import (
	"encoding/base64"
	"maps"
	"math/rand/v2"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/room"
)

// tokenID is the id claim of a signed token's payload: a version 7 UUID,
// its time bits the wall clock's (google/uuid reads it itself).
var tokenID = regexp.MustCompile(`"jti":"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"`)

// TestNewTokenAnswerBytes pins a new token's answer byte for byte: with a
// seeded random stream and the test clock, everything but the token id
// (and so the signature) is fixed, so the status, every header and the
// body are compared whole with the token written as <token>, and the
// token's own header and claims with the id written as <id>.
func TestNewTokenAnswerBytes(t *testing.T) {
	clock := newFakeClock()
	gw := seededGateway(t, clock, 3)

	w := httptest.NewRecorder()
	gw.ServeHTTP(w, browserRequest("/_fairgate/token", "{}", "")())
	token := tokenOf(t, w.Body.String())
	var got strings.Builder
	got.WriteString(strconv.Itoa(w.Code) + "\n")
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range w.Header() {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		for _, v := range w.Header()[k] {
			got.WriteString(k + ": " + v + "\n")
		}
	}
	got.WriteString("\n" + w.Body.String())
	if g := strings.ReplaceAll(got.String(), token, "<token>"); g != wantNewTokenAnswer {
		t.Errorf("answer:\n%s\nwant:\n%s", g, wantNewTokenAnswer)
	}

	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a JWS", token)
	}
	header, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	if !tokenID.Match(payload) {
		t.Fatalf("payload %s: no version 7 UUID for its id", payload)
	}
	if g := string(header) + "\n" + tokenID.ReplaceAllString(string(payload), `"jti":"<id>"`); g != wantNewTokenJWS {
		t.Errorf("token:\n%s\nwant:\n%s", g, wantNewTokenJWS)
	}
	if _, err := gw.door.Codec().ParseWait(token, "sale", clock.Now()); err != nil {
		t.Errorf("the token does not verify: %v", err)
	}
}

// tokenOf is the token in a waiting answer's body.
func tokenOf(t *testing.T, body string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `"token":"`)
	token, _, ok2 := strings.Cut(rest, `"`)
	if !ok || !ok2 || token == "" {
		t.Fatalf("no token in %s", body)
	}
	return token
}

const wantNewTokenAnswer = `200
Cache-Control: no-store
Content-Length: 700
Content-Type: application/json
Set-Cookie: fairgate_wait_sale=<token>; Path=/; Expires=Sun, 09 Mar 2031 12:10:03 GMT; HttpOnly; SameSite=Lax
Vary: Accept-Language
X-Content-Type-Options: nosniff

{"room":"sale","state":"queue","token":"<token>","challenge":"--ku_hvgyyzoZNKdbWRBRQ","difficulty":16,"next_attempt":1930824003025,"retry_after":3.025,"estimate_seconds":1800,"estimate_known":true,"lang":"en","message":"You're in line. This page will let you in automatically.","estimate":"about 30 min"}
`

const wantNewTokenJWS = `{"alg":"HS256","kid":"k1","typ":"JWT"}
{"jti":"<id>","aud":"sale","sub":"anon:mq0Di-H_KQVjY2X0s7CUeg","iat":1930824000,"exp":1930824603,"lot":"5UAi+bluBEIJLBZG7zeC2w==","srv":0,"ch":"--ku_hvgyyzoZNKdbWRBRQ","dif":16,"nxt":1930824003025}`

// TestWaitTokenAnswerIsNoStore: a token's answer, new or kept, is
// no-store, whatever Cache-Control a handler before the gateway set.
func TestWaitTokenAnswerIsNoStore(t *testing.T) {
	cfg := Config{Config: room.Config{Room: "sale", Keys: testKeys, Tau: Duration(30 * time.Minute), FixedSpeed: true}}
	clock := newFakeClock()
	shared, err := NewShared(cfg, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := New(cfg, shared, Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.ApplyConfig(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	first := httptest.NewRecorder()
	gw.ServeHTTP(first, browserRequest("/_fairgate/token", "{}", "")())
	cookie := "fairgate_wait_sale=" + tokenOf(t, first.Body.String())
	for _, tt := range []struct{ name, cookie, before string }{
		{"new", "", ""},
		{"new, a policy set before", "", "public, max-age=60"},
		{"kept, a policy set before", cookie, "public, max-age=60"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			if tt.before != "" {
				w.Header().Set("Cache-Control", tt.before)
			}
			gw.ServeHTTP(w, browserRequest("/_fairgate/token", "{}", tt.cookie)())
			if got := w.Header().Values("Cache-Control"); w.Code != 200 || !slices.Equal(got, []string{"no-store"}) {
				t.Fatalf("%d, Cache-Control %q, want 200 and no-store", w.Code, got)
			}
		})
	}
}

// TestPollAnswerBytes pins the admit poll's "keep waiting" answer byte
// for byte, as TestNewTokenAnswerBytes pins a new token's, with and
// without a Vary and a Set-Cookie from a handler before the gateway (kept,
// and added to); each header it writes is apart from the others.
func TestPollAnswerBytes(t *testing.T) {
	clock := newFakeClock()
	gw := seededGateway(t, clock, 5)
	tk, err := gw.door.Issue(t.Context(), "", admission.Visitor{}, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	nonce, err := tokens.Solve(t.Context(), tk.Claims.Ch, tk.Claims.Dif)
	if err != nil {
		t.Fatal(err)
	}
	clock.Set(tk.Claims.NextAttempt())
	poll := browserRequest("/_fairgate/admit", `{"nonce":"`+strconv.FormatUint(nonce, 10)+`"}`, "fairgate_wait_sale="+tk.Token)

	before := "Set-Cookie: theme=dark\nVary: Accept-Encoding\n"
	for name, set := range map[string]bool{"a Vary and a cookie before": true, "nothing before": false} {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			want := wantPollAnswer
			if set {
				w.Header()["Vary"] = []string{"Accept-Encoding"}
				w.Header()["Set-Cookie"] = []string{"theme=dark"}
			} else {
				for line := range strings.Lines(before) {
					want = strings.Replace(want, line, "", 1)
				}
			}
			gw.ServeHTTP(w, poll())
			token := tokenOf(t, w.Body.String())
			var got strings.Builder
			got.WriteString(strconv.Itoa(w.Code) + "\n")
			for _, k := range slices.Sorted(maps.Keys(w.Header())) {
				for _, v := range w.Header()[k] {
					got.WriteString(k + ": " + v + "\n")
				}
			}
			got.WriteString("\n" + w.Body.String())
			if g := strings.ReplaceAll(got.String(), token, "<token>"); g != want {
				t.Fatalf("answer:\n%s\nwant:\n%s", g, want)
			}

			h := w.Header()
			answered := maps.Clone(h)
			for k := range answered {
				answered[k] = slices.Clone(answered[k])
			}
			for k := range answered {
				h.Add(k, "added")
				for name, v := range answered {
					if name == k {
						v = append(slices.Clone(v), "added")
					}
					if got := h[name]; !slices.Equal(got, v) {
						t.Fatalf("after adding to %s: %s is %q, want %q", k, name, got, v)
					}
				}
				h[k] = answered[k]
			}
		})
	}
}

const wantPollAnswer = `429
Cache-Control: no-store
Content-Length: 717
Content-Type: application/json
Retry-After: 3
Set-Cookie: theme=dark
Set-Cookie: fairgate_wait_sale=<token>; Path=/; Expires=Sun, 09 Mar 2031 12:10:04 GMT; HttpOnly; SameSite=Lax
Vary: Accept-Encoding
Vary: Accept-Language
X-Content-Type-Options: nosniff

{"room":"sale","state":"queue","token":"<token>","challenge":"N5AR5AKZQvoUuBPn1PWNLQ","difficulty":16,"next_attempt":1930824004672,"retry_after":2.243,"estimate_seconds":1800,"estimate_known":true,"outcome":"wait","lang":"en","message":"You're in line. This page will let you in automatically.","estimate":"about 30 min"}
`

// seededGateway is a room at a fixed speed on clock whose random stream
// is seeded: every answer's bytes but a token's id are the same each run.
func seededGateway(t *testing.T, clock *fakeClock, seed byte) *Gateway {
	t.Helper()
	cfg := Config{Config: room.Config{Room: "sale", Keys: testKeys, Tau: Duration(30 * time.Minute), FixedSpeed: true}}
	shared, err := NewShared(cfg, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := New(cfg, shared, Options{Now: clock.Now, Random: rand.NewChaCha8([32]byte{seed})})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.ApplyConfig(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	return gw
}
