package gateway

import (
	"crypto"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/golang-jwt/jwt/v5"
)

var errNoIdentity = errors.New("no login token")

// identityVerifier checks the site's own login JWT and yields its subject.
// Verified logins are cached until they expire: with identity configured,
// every protected request asks, and an RS256 verification costs tens of
// microseconds.
type identityVerifier struct {
	cfg Identity
	// laneOf is the first lane whose claim a verified login carries.
	laneOf   func(claims map[string]any) string
	key      any
	verified *ristretto.Cache[string, verifiedLogin]
}

type verifiedLogin struct {
	subject string
	// lane is the first lane whose claim the login carries, "" for none.
	lane    string
	expires time.Time
}

func newIdentityVerifier(cfg Identity, laneOf func(claims map[string]any) string) (*identityVerifier, error) {
	if cfg.Cookie == "" && cfg.Header == "" {
		return nil, errors.New("set cookie or header")
	}
	if jwt.GetSigningMethod(cfg.Algorithm) == nil || cfg.Algorithm == "none" {
		return nil, fmt.Errorf("unknown algorithm %q", cfg.Algorithm)
	}
	raw, err := tokens.ResolveText(cfg.Key, tokens.Environment{})
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	// Each login costs 1: without IgnoreInternalCost ristretto adds its own
	// bookkeeping to every cost, and MaxCost would hold a few hundred logins.
	cache, err := ristretto.NewCache(&ristretto.Config[string, verifiedLogin]{NumCounters: 1 << 18, MaxCost: 1 << 15, BufferItems: 64, IgnoreInternalCost: true})
	if err != nil {
		return nil, fmt.Errorf("login cache: %w", err)
	}
	v := &identityVerifier{cfg: cfg, laneOf: laneOf, verified: cache}
	switch {
	case strings.HasPrefix(cfg.Algorithm, "HS"):
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("HMAC key must be base64: %w", err)
		}
		v.key = b
	case strings.HasPrefix(cfg.Algorithm, "RS"), strings.HasPrefix(cfg.Algorithm, "PS"):
		v.key, err = jwt.ParseRSAPublicKeyFromPEM([]byte(raw))
	case strings.HasPrefix(cfg.Algorithm, "ES"):
		v.key, err = jwt.ParseECPublicKeyFromPEM([]byte(raw))
	case cfg.Algorithm == "EdDSA":
		var k crypto.PublicKey
		k, err = jwt.ParseEdPublicKeyFromPEM([]byte(raw))
		v.key = k
	default:
		return nil, fmt.Errorf("unsupported algorithm %q", cfg.Algorithm)
	}
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	return v, nil
}

// subject verifies the request's login token and returns its sub.
func (v *identityVerifier) subject(r *http.Request, now time.Time) (string, error) {
	l, err := v.login(r, now)
	return l.subject, err
}

// login verifies the request's login token and returns its sub and lane.
func (v *identityVerifier) login(r *http.Request, now time.Time) (verifiedLogin, error) {
	token := ""
	if v.cfg.Cookie != "" {
		if c, err := r.Cookie(v.cfg.Cookie); err == nil {
			token = c.Value
		}
	}
	if token == "" && v.cfg.Header != "" {
		token = r.Header.Get(v.cfg.Header)
		if strings.EqualFold(v.cfg.Header, "Authorization") {
			token, _ = strings.CutPrefix(token, "Bearer ")
		}
	}
	if token == "" {
		return verifiedLogin{}, errNoIdentity
	}
	if hit, ok := v.verified.Get(token); ok && now.Before(hit.expires) {
		return hit, nil
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{v.cfg.Algorithm}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(5 * time.Second),
		jwt.WithTimeFunc(func() time.Time { return now }),
	}
	if v.cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(v.cfg.Issuer))
	}
	if v.cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(v.cfg.Audience))
	}
	claims := jwt.MapClaims{}
	if _, err := jwt.ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return v.key, nil }, opts...); err != nil {
		return verifiedLogin{}, fmt.Errorf("login token: %w", err)
	}
	sub, err := claims.GetSubject()
	if err != nil || sub == "" {
		return verifiedLogin{}, errors.New("login token has no sub")
	}
	login := verifiedLogin{subject: sub, lane: v.laneOf(claims)}
	// WithExpirationRequired made sure exp is there.
	if exp, _ := claims.GetExpirationTime(); exp != nil && exp.After(now) {
		login.expires = exp.Time
		v.verified.SetWithTTL(token, login, 1, exp.Sub(now))
	}
	return login, nil
}

func (v *identityVerifier) close() { v.verified.Close() }
