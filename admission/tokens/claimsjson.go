package tokens

import (
	"math"
	"reflect"
	"strconv"
	"strings"
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
	case "pos":
		return &c.Pos
	case "lk":
		return &c.Lk
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
// b is a string so that each key and string claim is a substring of it,
// not an allocation of its own.
func decodeClaims(b string, dst claimFields) bool {
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
			f, err := strconv.ParseFloat(b[i:end], 64)
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

func skipSpace(b string, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads a JSON string at b[i] made of printable ASCII without
// escapes, returning it and the index after its closing quote.
func plainString(b string, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	j := i + 1
	for j < len(b) && plainByte[b[j]] {
		j++
	}
	if j < len(b) && b[j] == '"' {
		return b[i+1 : j], j + 1, true
	}
	return "", 0, false
}

// plainByte is printable ASCII but the quote and the backslash: what
// plainString reads without decoding (a table: claims are read on every
// poll).
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// integer reads a JSON number at b[i] that is a whole int64: a sign and
// digits, read here (strconv.ParseInt's generality was most of reading a
// token's five integers); a fraction or an exponent is refused, as
// ParseInt refuses it.
func integer(b string, i int) (int64, int, bool) {
	end, ok := number(b, i)
	if !ok {
		return 0, 0, false
	}
	digits, neg := strings.CutPrefix(b[i:end], "-")
	limit := uint64(math.MaxInt64)
	if neg {
		limit++ // -2^63
	}
	var u uint64
	for k := 0; k < len(digits); k++ {
		c := digits[k]
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		d := uint64(c - '0')
		if u > (limit-d)/10 {
			return 0, 0, false
		}
		u = u*10 + d
	}
	if neg {
		return -int64(u), end, true
	}
	return int64(u), end, true
}

// number returns the end of the JSON number at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b string, i int) (int, bool) {
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

// claimKeys are a claims type's JSON keys in json.Marshal's order, with
// their omitempty, read from its struct tags once. known is false when
// field does not know every key: such a type is encoded by json.Marshal.
type claimKeys struct {
	keys  []claimKey
	known bool
}

type claimKey struct {
	name      string
	omitEmpty bool
}

var (
	waitKeys = keysOf(&WaitClaims{})
	passKeys = keysOf(&PassClaims{})
)

func keysOf(c claimFields) claimKeys {
	out := claimKeys{known: true}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(c).Elem()) {
		tag, ok := f.Tag.Lookup("json")
		if !ok || f.Anonymous || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		out.keys = append(out.keys, claimKey{name: name, omitEmpty: opts == "omitempty"})
		if p := c.field(name); p == nil || reflect.TypeOf(p).Elem() != f.Type {
			out.known = false
		}
	}
	return out
}

// encodeClaims appends claims as json.Marshal writes them, without its
// reflection, reporting false (having appended garbage) when it cannot:
// a type with keys field does not know, a string that json.Marshal would
// escape, a float that is not finite. FuzzEncodeClaims holds it to
// json.Marshal's bytes.
func encodeClaims(b []byte, c claimFields) ([]byte, bool) {
	var ks claimKeys
	switch c.(type) {
	case *WaitClaims:
		ks = waitKeys
	case *PassClaims:
		ks = passKeys
	}
	if !ks.known {
		return b, false
	}
	b = append(b, '{')
	first := true
	for _, k := range ks.keys {
		p := c.field(k.name)
		if k.omitEmpty && isZero(p) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(append(append(b, '"'), k.name...), '"', ':')
		switch v := p.(type) {
		case *string:
			if !plainText(*v) {
				return b, false
			}
			b = append(append(append(b, '"'), *v...), '"')
		case *int64:
			b = strconv.AppendInt(b, *v, 10)
		case *int:
			b = strconv.AppendInt(b, int64(*v), 10)
		case *float64:
			var ok bool
			if b, ok = appendFloat(b, *v); !ok {
				return b, false
			}
		default:
			return b, false
		}
	}
	return append(b, '}'), true
}

func isZero(p any) bool {
	switch v := p.(type) {
	case *string:
		return *v == ""
	case *int64:
		return *v == 0
	case *int:
		return *v == 0
	case *float64:
		return *v == 0
	}
	return false
}

// plainText reports whether json.Marshal writes s as it is, quoted.
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendFloat writes f as encoding/json does (ES6 number formatting).
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
