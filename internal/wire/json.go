package wire

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// The appenders below write JSON values byte for byte as encoding/json
// (with its default HTML escaping) encodes them, for answers on the hot
// path that are built by hand instead of by reflection (the admit poll's).
// TestAppendersMatchEncodingJSON and FuzzAppendString hold them to it.

const hexDigits = "0123456789abcdef"

// notAsIs marks the bytes a JSON string does not hold as they are: all
// but printable ASCII other than a quote, a backslash and <, > and &.
var notAsIs = func() (t [256]byte) {
	for c := range 256 {
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			t[c] = 1
		}
	}
	return t
}()

// NoneMarked reports whether no byte of s is marked (non-zero) in marked.
// It reads eight bytes a step without a branch between them: the strings
// it checks are a poll's token, claims and texts, on every poll.
func NoneMarked(s string, marked *[256]byte) bool {
	var m byte
	for ; len(s) >= 8; s = s[8:] {
		m |= marked[s[0]] | marked[s[1]] | marked[s[2]] | marked[s[3]] |
			marked[s[4]] | marked[s[5]] | marked[s[6]] | marked[s[7]]
	}
	for i := 0; i < len(s); i++ {
		m |= marked[s[i]]
	}
	return m == 0
}

// AppendString appends s as a JSON string, as encoding/json writes it:
// <, > and & escaped, invalid UTF-8 replaced by U+FFFD, U+2028 and U+2029
// escaped.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	if NoneMarked(s, &notAsIs) {
		return append(append(dst, s...), '"')
	}
	start := 0
	for i := 0; i < len(s); {
		if notAsIs[s[i]] == 0 {
			i++
			continue
		}
		if b := s[i]; b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendFloat appends f as encoding/json writes a float64; ok is false for
// NaN and infinities, which JSON cannot hold.
func AppendFloat(dst []byte, f float64) (_ []byte, ok bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// AppendBool appends b as JSON.
func AppendBool(dst []byte, b bool) []byte { return strconv.AppendBool(dst, b) }

// AppendInt appends n as JSON.
func AppendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }
