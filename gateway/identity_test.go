package gateway

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fairgate/fairgate/room"
)

func TestIdentity(t *testing.T) {
	secret := []byte("site-login-secret-0123456789abcdef")
	login := func(sub string, exp time.Time) string { return signLogin(t, secret, sub, exp) }
	e := newEnv(t, Config{
		Config: room.Config{Room: "sale", State: "open"},
		Identity: &Identity{
			Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(secret), Required: true,
		},
	}, nil)
	exp := e.clock.Now().Add(time.Hour)
	if resp, body := e.do("POST", "/_fairgate/token", ""); resp.StatusCode != 401 {
		t.Fatalf("no login: %d %s", resp.StatusCode, body)
	}
	resp, body := e.do("POST", "/_fairgate/token", "", "Authorization", "Bearer "+login("alice", exp))
	if resp.StatusCode != 200 {
		t.Fatalf("alice: %d %s", resp.StatusCode, body)
	}
	var tk ticketJSON
	_ = json.Unmarshal(body, &tk)
	nonce := solveFor(t, tk)
	resp, body = e.do("POST", "/_fairgate/admit", `{"nonce":"`+nonce+`"}`, "Authorization", "Bearer "+login("mallory", exp))
	if resp.StatusCode != 403 || !strings.Contains(string(body), "identity") {
		t.Fatalf("alice's token used by mallory: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("POST", "/_fairgate/admit", `{"nonce":"`+nonce+`"}`, "Authorization", "Bearer "+login("alice", exp))
	if resp.StatusCode != 200 {
		t.Fatalf("alice admitted: %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.do("POST", "/_fairgate/token", "", "Authorization", "Bearer "+login("alice", e.clock.Now().Add(-time.Hour))); resp.StatusCode != 401 {
		t.Fatalf("expired login: %d", resp.StatusCode)
	}
}

// TestOptionalIdentity: with identity configured but not required, an
// anonymous visitor's pass works without a login, a logged-in visitor's
// pass only with that login.
func TestOptionalIdentity(t *testing.T) {
	secret := []byte("site-login-secret-0123456789abcdef")
	e := newEnv(t, Config{
		Config: room.Config{Room: "sale", State: "open"},
		Identity: &Identity{
			Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(secret),
		},
	}, nil)
	e.admitted()
	if resp, body := e.do("GET", "/shop", ""); resp.StatusCode != 200 || string(body) != "origin:/shop" {
		t.Fatalf("anonymous pass: %d %s", resp.StatusCode, body)
	}
	login, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: "bob", ExpiresAt: jwt.NewNumericDate(e.clock.Now().Add(time.Hour))}).SignedString(secret)
	// Closing the room shows whether the pass is what let a request through.
	closed := "closed"
	_ = e.gw.Room().Apply(room.RoomChange{State: &closed}, e.clock.Now())
	if resp, _ := e.do("GET", "/shop", "", "Authorization", "Bearer "+login, "Accept", "application/json"); resp.StatusCode != 503 {
		t.Fatalf("an anonymous pass used with bob's login: %d", resp.StatusCode)
	}
}

// TestIdentityCacheHoldsItsCapacity: the verified-login cache holds
// thousands of logins, not the few hundred it held while ristretto's own
// bookkeeping counted against its capacity (each login then re-verified its
// JWT at every attempt).
func TestIdentityCacheHoldsItsCapacity(t *testing.T) {
	v, err := newIdentityVerifier(Identity{Header: "Authorization", Algorithm: "HS256",
		Key: base64.StdEncoding.EncodeToString([]byte("site-login-secret-0123456789abcdef"))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	const logins = 5000
	for i := range logins {
		v.verified.SetWithTTL("login-"+strconv.Itoa(i), verifiedLogin{subject: strconv.Itoa(i)}, 1, time.Hour)
	}
	v.verified.Wait()
	held := 0
	for i := range logins {
		if _, ok := v.verified.Get("login-" + strconv.Itoa(i)); ok {
			held++
		}
	}
	if held < logins*99/100 {
		t.Errorf("the login cache holds %d of %d logins", held, logins)
	}
}
