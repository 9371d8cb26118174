// Package pass reads what the e2e drivers need from a fairgate pass without
// verifying it: the drivers count admissions, the gateway checks passes.
package pass

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// ID is a pass's jti ("" if it does not parse): one admission, however many
// times its pass is answered (a retry of the admitted token gets its own
// pass back).
func ID(pass string) string {
	parts := strings.Split(pass, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		ID string `json:"jti"`
	}
	_ = json.Unmarshal(raw, &claims)
	return claims.ID
}
