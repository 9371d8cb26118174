package admission

import (
	"strconv"
)

// The claims of a token the codec signed are the flat JSON object Sign's
// json.Marshal wrote: string and number values under the exact keys of the
// json tags. decodeClaims reads that shape directly, at a fraction of
// encoding/json's cost; anything else in a payload (an escape, a byte
// beyond ASCII, a key spelled otherwise, null, a nested value) makes it
// give up, and json.Unmarshal decodes the payload instead.
// FuzzDecodeClaims holds it to json.Unmarshal's results.

// claimFields is a claims type decodeClaims can fill.
type claimFields interface {
	// field is the address of the field key names by its json tag, or nil.
	field(key string) any
	// reset zeroes the claims, before json.Unmarshal takes over.
	reset()
}

func (r *Registered) field(key string) any {
	switch key {
	case "jti":
		return &r.ID
	case "aud":
		return &r.Audience
	case "sub":
		return &r.Subject
	case "iat":
		return &r.IssuedAt
	case "exp":
		return &r.ExpiresAt
	}
	return nil
}

func (c *WaitClaims) field(key string) any {
	switch key {
	case "lot":
		return &c.Lot
	case "srv":
		return &c.Srv
	case "ch":
		return &c.Ch
	case "dif":
		return &c.Dif
	case "nxt":
		return &c.Nxt
	case "bnd":
		return &c.Bnd
	case "lane":
		return &c.Lane
	}
	return c.Registered.field(key)
}

func (c *WaitClaims) reset() { *c = WaitClaims{} }

func (c *PassClaims) field(key string) any {
	switch key {
	case "wid":
		return &c.Wid
	case "ses":
		return &c.Ses
	case "bnd":
		return &c.Bnd
	}
	return c.Registered.field(key)
}

func (c *PassClaims) reset() { *c = PassClaims{} }

// decodeClaims fills dst from a flat JSON object of plain strings and
// numbers, reporting false where it cannot (dst is then partly filled).
func decodeClaims(b []byte, dst claimFields) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		key, next, ok := plainString(b, i)
		if !ok {
			return false
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		switch p := dst.field(key).(type) {
		case *string:
			s, next, ok := plainString(b, i)
			if !ok {
				return false
			}
			*p, i = s, next
		case *int64:
			n, next, ok := integer(b, i)
			if !ok {
				return false
			}
			*p, i = n, next
		case *int:
			n, next, ok := integer(b, i)
			if !ok || int64(int(n)) != n {
				return false
			}
			*p, i = int(n), next
		case *float64:
			end, ok := number(b, i)
			if !ok {
				return false
			}
			f, err := strconv.ParseFloat(string(b[i:end]), 64)
			if err != nil {
				return false
			}
			*p, i = f, end
		default:
			return false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads a JSON string at b[i] made of printable ASCII without
// escapes, returning it and the index after its closing quote.
func plainString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return string(b[i+1 : j]), j + 1, true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return "", 0, false
		}
	}
	return "", 0, false
}

// integer reads a JSON number at b[i] that is a whole int64.
func integer(b []byte, i int) (int64, int, bool) {
	end, ok := number(b, i)
	if !ok {
		return 0, 0, false
	}
	n, err := strconv.ParseInt(string(b[i:end]), 10, 64)
	return n, end, err == nil
}

// number returns the end of the JSON number at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b []byte, i int) (int, bool) {
	digits := func(j int) int {
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		return j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}
