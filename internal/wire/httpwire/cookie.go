package httpwire

import (
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"github.com/fairgate/fairgate/internal/wire"
)

// CookieLine is the Set-Cookie line of fairgate's own cookies (Path=/,
// HttpOnly, SameSite=Lax, Secure when asked; an empty value deletes): what
// http.Cookie.String writes, built directly when name and value are plain
// tokens (a room name, a JWT), which is every time but for a room name
// with unusual characters, and Fast is on. http.Cookie.String checks and
// sanitizes every byte of the value, a sixth of a poll's cost. valuePlain is
// PlainCookieText(value), which the caller may know already.
func CookieLine(name, value string, valuePlain bool, expires time.Time, secure bool) string {
	if year := expires.UTC().Year(); !wire.Fast() || !PlainCookieText(name) || !valuePlain || year < 1601 || year > 9999 {
		c := &http.Cookie{
			Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
			Secure: secure, Expires: expires,
		}
		if value == "" {
			c.MaxAge = -1
		}
		return c.String()
	}
	var b strings.Builder
	b.Grow(len(name) + len(value) + 100)
	b.WriteString(name)
	b.WriteByte('=')
	b.WriteString(value)
	b.WriteString("; Path=/; Expires=")
	var buf [len(http.TimeFormat)]byte
	b.Write(appendCookieDate(buf[:0], expires))
	if value == "" {
		b.WriteString("; Max-Age=0")
	}
	b.WriteString("; HttpOnly")
	if secure {
		b.WriteString("; Secure")
	}
	b.WriteString("; SameSite=Lax")
	return b.String()
}

// appendCookieDate appends t as t.UTC().AppendFormat(b, http.TimeFormat)
// does for a year of four digits ("Mon, 02 Jan 2006 15:04:05 GMT"),
// without interpreting the layout: that was 4% of the admit poll's CPU
// profile.
// TestAppendCookieDate and FuzzAppendCookieDate hold it to AppendFormat.
func appendCookieDate(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	b = append(b, t.Weekday().String()[:3]...)
	b = append(b, ',', ' ', byte('0'+day/10), byte('0'+day%10), ' ')
	b = append(b, month.String()[:3]...)
	b = append(b, ' ', byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), ' ')
	b = append(b, byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10))
	return append(b, " GMT"...)
}

// PlainCookieText reports whether s is made only of letters, digits and
// -._ : valid in a cookie name and value as they are.
func PlainCookieText(s string) bool { return wire.NoneMarked(s, &notPlainCookie) }

// notPlainCookie marks the bytes outside PlainCookieText's alphabet.
var notPlainCookie = func() (t [256]byte) {
	for c := range 256 {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			t[c] = 1
		}
	}
	return t
}()

// CookieValue is r.Cookie(name)'s value, found without net/http parsing
// and checking every cookie of the request (a tenth of a passed request's
// cost: the Cookie header carries a 600-byte token): the first cookie called name
// is taken as it is when it is plain text, which net/http takes unchanged
// too; anything else (quotes, other bytes, a name net/http would not read,
// more cookies than net/http reads), or Fast off, is left to r.Cookie.
// TestCookieValueMatchesNetHTTP and FuzzCookieValue hold it to r.Cookie.
func CookieValue(r *http.Request, name string) (string, bool) {
	lines := r.Header["Cookie"]
	count := 0
	for _, line := range lines {
		count += strings.Count(line, ";") + 1
	}
	if wire.Fast() && name != "" && PlainCookieText(name) && count <= netHTTPMaxCookies {
		for _, line := range lines {
			for line != "" {
				var part string
				part, line, _ = strings.Cut(line, ";")
				k, v, _ := strings.Cut(textproto.TrimString(part), "=")
				if textproto.TrimString(k) != name {
					continue
				}
				if !PlainCookieText(v) {
					return slowCookieValue(r, name)
				}
				return v, true
			}
		}
		return "", false
	}
	return slowCookieValue(r, name)
}

// netHTTPMaxCookies is how many cookies net/http reads of a request by
// default (GODEBUG httpcookiemaxnum): beyond it, it reads none.
const netHTTPMaxCookies = 3000

func slowCookieValue(r *http.Request, name string) (string, bool) {
	c, err := r.Cookie(name)
	if err != nil {
		return "", false
	}
	return c.Value, true
}
