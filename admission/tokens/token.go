package tokens

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Rejection reasons for tokens. Each is distinct so the gateway can answer
// with the right status and operators can tell attacks from clock skew.
var (
	ErrMalformed   = errors.New("token malformed")
	errAlgorithm   = errors.New("token algorithm not allowed")
	errUnknownKey  = errors.New("token signed with an unknown key")
	errSignature   = errors.New("token signature invalid")
	errAudience    = errors.New("token is for another room")
	ErrExpired     = errors.New("token expired")
	errNotYetValid = errors.New("token not valid yet")
	errClaims      = errors.New("token claims invalid")
)

// maxTokenBytes bounds the tokens the codec will look at. Real tokens are
// under 600 bytes; refusing larger ones before decoding keeps forged input cheap.
const maxTokenBytes = 2048

// Registered holds the registered JWT claims fairgate uses, as plain numbers
// and strings: decoding them costs a fraction of jwt.RegisteredClaims, and
// golang-jwt's validator still checks exp, iat and aud through the jwt.Claims
// methods below. The audience is a single string, as fairgate signs it.
type Registered struct {
	ID        string `json:"jti"`
	Audience  string `json:"aud"`
	Subject   string `json:"sub"`
	IssuedAt  int64  `json:"iat"`
	ExpiresAt int64  `json:"exp"`
}

// GetExpirationTime implements jwt.Claims.
func (r Registered) GetExpirationTime() (*jwt.NumericDate, error) {
	return numericDate(r.ExpiresAt), nil
}

// GetIssuedAt implements jwt.Claims.
func (r Registered) GetIssuedAt() (*jwt.NumericDate, error) { return numericDate(r.IssuedAt), nil }

// GetNotBefore implements jwt.Claims; fairgate tokens have no nbf.
func (r Registered) GetNotBefore() (*jwt.NumericDate, error) { return nil, nil }

// GetIssuer implements jwt.Claims; fairgate tokens have no iss.
func (r Registered) GetIssuer() (string, error) { return "", nil }

// GetSubject implements jwt.Claims.
func (r Registered) GetSubject() (string, error) { return r.Subject, nil }

// GetAudience implements jwt.Claims.
func (r Registered) GetAudience() (jwt.ClaimStrings, error) {
	if r.Audience == "" {
		return nil, nil
	}
	return jwt.ClaimStrings{r.Audience}, nil
}

func (r *Registered) registered() *Registered { return r }

// Expiry is exp as a time.
func (r Registered) Expiry() time.Time { return time.Unix(r.ExpiresAt, 0) }

func numericDate(sec int64) *jwt.NumericDate {
	if sec == 0 {
		return nil
	}
	return jwt.NewNumericDate(time.Unix(sec, 0))
}

// WaitClaims is the payload of a waiting token (see docs/DESIGN.md, "Tokens").
type WaitClaims struct {
	Registered
	// Lot is the lottery ticket: 16 random bytes, standard padded base64.
	Lot string `json:"lot"`
	// Srv is the serving-clock reading at entry.
	Srv float64 `json:"srv"`
	// Ch is the proof-of-work challenge, unpadded base64url.
	Ch string `json:"ch"`
	// Dif is the proof-of-work difficulty in leading zero bits.
	Dif int `json:"dif"`
	// Nxt is the checkpoint the token is judged at, Unix milliseconds: a
	// point of the draw's checkpoint grid, or the admission slot held.
	Nxt int64 `json:"nxt"`
	// Bnd, when set, binds the token to a network: a keyed hash of the
	// client address the gateway saw at issue (an extension to the source design's
	// claims, present only when IP binding is configured).
	Bnd string `json:"bnd,omitempty"`
	// Lane is the priority lane the place waits in, empty for the default
	// lane (docs/FAIRNESS.md, "Lanes"). The gateway decides it from the
	// verified login at issue and checks it against the login at every
	// attempt.
	Lane string `json:"lane,omitempty"`
	// Pos is the place's arrival rank plus one in a fifo room, negated for
	// a place taken in the pre-queue; absent in a lottery room.
	Pos int64 `json:"pos,omitempty"`
	// Lk is the luck span L of a fifo place taken after the start, in
	// ranks: the luck window times the rate ranks were handed out at. Its
	// key is its rank plus L times its exponential draw (docs/FAIRNESS.md,
	// "Queue orders"); the draw itself stays secret.
	Lk float64 `json:"lk,omitempty"`
}

// Place names the token's place in line, as the ledger, the pacer and the
// population know it: its draw. Every version of a token carries the same
// draw, and with identity so does every token one login takes in a room, in
// any lane (KeyRing.IdentityLot): a login holds one place, one slot and one
// pass however many tokens or tabs it has.
func (c *WaitClaims) Place() string { return c.Lot }

// NextAttempt is Nxt as a time.
func (c *WaitClaims) NextAttempt() time.Time { return time.UnixMilli(c.Nxt) }

// PassClaims is the payload of a pass: proof that a visitor was admitted.
type PassClaims struct {
	Registered
	// Wid is the id of the waiting token this pass came from.
	Wid string `json:"wid"`
	// Ses is the session id the admission hook returned, if any.
	Ses string `json:"ses,omitempty"`
	// Bnd is the waiting token's network binding, carried over so that a
	// gateway with bind_pass can hold the pass to that address.
	Bnd string `json:"bnd,omitempty"`
}

// Codec signs and strictly verifies fairgate's JWTs with a key ring.
type Codec struct {
	keys   *KeyRing
	leeway time.Duration
	// headers are the encoded JOSE headers the codec writes, one per key
	// in the ring's order (KeyRing.order), as signer names keys. They
	// never change: encoding each once saves a map marshal per
	// signature, and a token whose header is one of them is decoded
	// without golang-jwt (see parse).
	headers []string
	// signHeader is the signing key's header, headers[0].
	signHeader string
}

// NewCodec returns a codec that tolerates leeway of clock skew on exp and iat.
func NewCodec(keys *KeyRing, leeway time.Duration) *Codec {
	c := &Codec{keys: keys, leeway: leeway}
	for _, id := range keys.order {
		h, _ := json.Marshal(map[string]string{"alg": jwt.SigningMethodHS256.Alg(), "kid": id, "typ": "JWT"})
		c.headers = append(c.headers, base64.RawURLEncoding.EncodeToString(h))
	}
	c.signHeader = c.headers[0] // the signing key is first in order
	return c
}

// Keys is the codec's key ring.
func (c *Codec) Keys() *KeyRing { return c.keys }

// Sign signs claims with HS256 and the ring's signing key, named in the
// kid header: the token golang-jwt's SigningMethodHS256 would make, with
// the key's pooled HMAC instead of a new one per signature.
func (c *Codec) Sign(claims jwt.Claims) (string, error) {
	var scratch [512]byte
	payload, ok := []byte(nil), false
	if f, fast := claims.(claimFields); fast {
		payload, ok = encodeClaims(scratch[:0], f)
	}
	if !ok {
		var err error
		if payload, err = json.Marshal(claims); err != nil {
			return "", fmt.Errorf("encoding claims: %w", err)
		}
	}
	return c.keys.signJWS(c.signHeader, payload), nil
}

// ParseWait verifies a waiting token for room at time now.
func (c *Codec) ParseWait(token, room string, now time.Time) (*WaitClaims, error) {
	claims := new(WaitClaims)
	if err := c.parse(token, room, now, claims); err != nil {
		return nil, err
	}
	if claims.ID == "" || claims.Lot == "" || claims.Ch == "" || claims.IssuedAt == 0 ||
		claims.Dif < 0 || claims.Dif > maxDifficulty {
		return nil, fmt.Errorf("%w: waiting token is missing fields", errClaims)
	}
	return claims, nil
}

// ParsePass verifies a pass for room at time now.
func (c *Codec) ParsePass(token, room string, now time.Time) (*PassClaims, error) {
	claims := new(PassClaims)
	if err := c.parse(token, room, now, claims); err != nil {
		return nil, err
	}
	if claims.ID == "" || claims.Wid == "" {
		return nil, fmt.Errorf("%w: pass is missing fields", errClaims)
	}
	return claims, nil
}

// strictBase64 refuses non-zero padding bits, as golang-jwt's
// WithStrictDecoding does.
var strictBase64 = base64.RawURLEncoding.Strict()

// parse verifies token into claims. The ring's HMAC check comes first, so a
// forged token costs no decoding. A token the ring signed under a header this
// codec writes can only have been made by Sign: its claims are decoded and
// checked here (exp required, iat, aud, leeway: golang-jwt's rules, which
// TestParseMatchesGolangJWT holds it to), at a fraction of golang-jwt's cost.
// Any other header goes through golang-jwt in full (parseJWT).
func (c *Codec) parse(token, room string, now time.Time, claims jwt.Claims) error {
	if len(token) > maxTokenBytes {
		return fmt.Errorf("%w: longer than %d bytes", ErrMalformed, maxTokenBytes)
	}
	signer := c.keys.signer(token)
	if signer < 0 {
		return c.classifyUnsigned(token)
	}
	header, rest, _ := strings.Cut(token, ".")
	if header != c.headers[signer] {
		return c.parseJWT(token, room, now, claims)
	}
	payload, _, _ := strings.Cut(rest, ".")
	// The claims are decoded on the stack and made a string once: every
	// string claim is a substring of it, not an allocation of its own.
	var buf [maxTokenBytes * 3 / 4]byte
	n, err := strictBase64.Decode(buf[:], []byte(payload))
	if err != nil {
		return fmt.Errorf("%w: claims are not base64url", ErrMalformed)
	}
	raw := string(buf[:n])
	if f, ok := claims.(claimFields); !ok || !decodeClaims(raw, f) {
		if ok {
			f.reset()
		}
		if err := json.Unmarshal([]byte(raw), claims); err != nil {
			return fmt.Errorf("%w: claims are not JSON: %v", ErrMalformed, err)
		}
	}
	reg, ok := claims.(interface{ registered() *Registered })
	if !ok {
		return c.parseJWT(token, room, now, claims)
	}
	return c.validate(reg.registered(), room, now)
}

// validate applies golang-jwt's validator's rules as parseJWT configures
// it, and classify's order among its reasons: audience, expiry, issue time,
// then missing claims.
func (c *Codec) validate(r *Registered, room string, now time.Time) error {
	switch {
	case r.Audience != "" && r.Audience != room:
		return errAudience
	case r.ExpiresAt != 0 && !now.Before(time.Unix(r.ExpiresAt, 0).Add(c.leeway)):
		return ErrExpired
	case r.IssuedAt != 0 && now.Before(time.Unix(r.IssuedAt, 0).Add(-c.leeway)):
		return errNotYetValid
	case r.ExpiresAt == 0:
		return fmt.Errorf("%w: exp claim is required", errClaims)
	case r.Audience == "":
		return fmt.Errorf("%w: aud claim is required", errClaims)
	}
	return nil
}

// parseJWT verifies token with golang-jwt: HS256 only, expiry required,
// iat checked, audience room, leeway, strict base64.
func (c *Codec) parseJWT(token, room string, now time.Time, claims jwt.Claims) error {
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithAudience(room),
		jwt.WithLeeway(c.leeway),
		jwt.WithStrictDecoding(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	var keyErr error
	_, err := parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		secret, ok := c.keys.secret(kid)
		if !ok {
			keyErr = errUnknownKey
			return nil, keyErr
		}
		return secret, nil
	})
	if err == nil {
		return nil
	}
	return classify(err, keyErr)
}

// classifyUnsigned names the reason a token no ring key signed is refused.
// The cheap reasons come first, so a forged token never costs more than a
// good one: only a token with an unknown kid or algorithm is decoded further,
// by golang-jwt, to tell which.
func (c *Codec) classifyUnsigned(token string) error {
	if strings.Count(token, ".") != 2 {
		return fmt.Errorf("%w: not three segments", ErrMalformed)
	}
	header, _, _ := strings.Cut(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		return fmt.Errorf("%w: header is not base64url", ErrMalformed)
	}
	var h struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return fmt.Errorf("%w: header is not JSON", ErrMalformed)
	}
	if h.Alg != jwt.SigningMethodHS256.Alg() {
		return fmt.Errorf("%w: %q", errAlgorithm, h.Alg)
	}
	if _, ok := c.keys.secret(h.Kid); !ok {
		return errUnknownKey
	}
	return errSignature
}

// classify maps golang-jwt's errors to fairgate's reasons. The order matters:
// golang-jwt joins several sentinel errors into one.
func classify(err, keyErr error) error {
	switch {
	case keyErr != nil:
		return keyErr
	case errors.Is(err, jwt.ErrTokenMalformed):
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		// Raised for an algorithm golang-jwt does not know.
		return fmt.Errorf("%w: %v", errAlgorithm, err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid) && errors.Is(err, jwt.ErrSignatureInvalid):
		return errSignature
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		// WithValidMethods rejects `none` and every other algorithm this way,
		// before any key is looked at.
		return fmt.Errorf("%w: %v", errAlgorithm, err)
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return errAudience
	case errors.Is(err, jwt.ErrTokenExpired):
		return ErrExpired
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued), errors.Is(err, jwt.ErrTokenNotValidYet):
		return errNotYetValid
	default:
		return fmt.Errorf("%w: %v", errClaims, err)
	}
}
