// Package pass reads what the e2e drivers need from a fairgate pass without
// verifying it: the drivers count admissions, the gateway checks passes.
package pass

import "github.com/golang-jwt/jwt/v5"

// ID is a pass's jti ("" if it does not parse): one admission, however many
// times its pass is answered (a retry of the admitted token gets its own
// pass back).
func ID(pass string) string {
	return claims(pass).ID
}

// IssuedAt is a pass's iat in Unix seconds (0 if it has none or does not
// parse): the second its node decided the admission.
func IssuedAt(pass string) int64 {
	if c := claims(pass); c.IssuedAt != nil {
		return c.IssuedAt.Unix()
	}
	return 0
}

// claims are the pass's registered claims, unverified; zero if the pass
// does not parse.
func claims(pass string) jwt.RegisteredClaims {
	var c jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(pass, &c); err != nil {
		return jwt.RegisteredClaims{}
	}
	return c
}
