package wire

import (
	"math"
	"reflect"
	"strconv"
	"strings"
)

// DecodeObject fills the fields of a flat JSON object of plain strings and
// numbers, as json.Unmarshal would: field returns the address of the
// field a key names (a *string, *int64, *int or *float64), or nil. It
// reports false where it cannot (the fields are then partly filled, and
// the caller decodes with json.Unmarshal into zeroed fields): an escape, a
// byte beyond ASCII, a key field does not know, null, a nested value, or
// Fast off. b is a string so that each key and string value is a
// substring of it, not an allocation of its own.
func DecodeObject(b string, field func(key string) any) bool {
	if !Fast() {
		return false
	}
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
		if i, ok = decodeValue(b, skipSpace(b, i+1), field(key)); !ok {
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

// decodeValue reads the value at b[i] into the field p points to,
// returning the index after it.
func decodeValue(b string, i int, p any) (int, bool) {
	switch p := p.(type) {
	case *string:
		s, next, ok := plainString(b, i)
		if !ok {
			return 0, false
		}
		*p = s
		return next, true
	case *int64:
		n, next, ok := integer(b, i)
		if !ok {
			return 0, false
		}
		*p = n
		return next, true
	case *int:
		n, next, ok := integer(b, i)
		if !ok || int64(int(n)) != n {
			return 0, false
		}
		*p = int(n)
		return next, true
	case *float64:
		end, ok := number(b, i)
		if !ok {
			return 0, false
		}
		f, ok := wholeFloat(b[i:end])
		if !ok {
			var err error
			if f, err = strconv.ParseFloat(b[i:end], 64); err != nil {
				return 0, false
			}
		}
		*p = f
		return end, true
	}
	return 0, false
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
// digits, read here (strconv.ParseInt's generality would be most of
// reading a token's five integers); a fraction or an exponent is
// refused, as ParseInt refuses it.
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
		if k >= maxSafeDigits && u > (limit-d)/10 {
			return 0, 0, false
		}
		u = u*10 + d
	}
	if neg {
		return -int64(u), end, true
	}
	return int64(u), end, true
}

// maxSafeDigits is how many decimal digits always fit an int64 (10^18 <
// 2^63): integer checks for overflow past them only.
const maxSafeDigits = 18

// wholeFloat is the float64 of a JSON number that is digits only, at most
// 15 of them (10^15 < 2^53: float64 holds it exactly, as
// strconv.ParseFloat returns it); it reports false for anything else (a
// sign, a fraction, an exponent). A claim such as srv is most often 0,
// and ParseFloat's generality would be most of reading it.
func wholeFloat(s string) (float64, bool) {
	if len(s) == 0 || len(s) > 15 {
		return 0, false
	}
	var u uint64
	for k := 0; k < len(s); k++ {
		c := s[k]
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	return float64(u), true
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

// Keys are an object type's JSON keys in json.Marshal's order, with their
// omitempty, read from its struct tags once by KeysOf. Known is false when
// the type's field function does not know every key: AppendObject then
// leaves the type to json.Marshal.
type Keys struct {
	keys  []key
	known bool
}

type key struct {
	name      string
	omitEmpty bool
}

// KeysOf reads the keys of *proto's type, and checks that field (proto's
// field function) gives each key's field at its type.
func KeysOf(proto any, field func(key string) any) Keys {
	out := Keys{known: true}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(proto).Elem()) {
		tag, ok := f.Tag.Lookup("json")
		if !ok || f.Anonymous || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		out.keys = append(out.keys, key{name: name, omitEmpty: opts == "omitempty"})
		if p := field(name); p == nil || reflect.TypeOf(p).Elem() != f.Type {
			out.known = false
		}
	}
	return out
}

// AppendObject appends the object whose keys are ks and whose fields field
// gives, as json.Marshal writes it, without its reflection. It reports
// false (having appended garbage) when it cannot: keys field does not
// know, a string that json.Marshal would escape, a float that is not
// finite, or Fast off.
func AppendObject(b []byte, ks Keys, field func(key string) any) ([]byte, bool) {
	if !Fast() || !ks.known {
		return b, false
	}
	b = append(b, '{')
	first := true
	for _, k := range ks.keys {
		p := field(k.name)
		if k.omitEmpty && isZero(p) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(append(append(b, '"'), k.name...), '"', ':')
		var ok bool
		if b, ok = appendValue(b, p); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func appendValue(b []byte, p any) ([]byte, bool) {
	switch v := p.(type) {
	case *string:
		if !plainText(*v) {
			return b, false
		}
		return append(append(append(b, '"'), *v...), '"'), true
	case *int64:
		return strconv.AppendInt(b, *v, 10), true
	case *int:
		return strconv.AppendInt(b, int64(*v), 10), true
	case *float64:
		return AppendFloat(b, *v)
	}
	return b, false
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

// plainText reports whether json.Marshal writes s as it is, quoted:
// every claim string of every token signed passes through here.
func plainText(s string) bool { return NoneMarked(s, &notAsIs) }
