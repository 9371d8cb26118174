package httpwire

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestCookieLine: the line built directly is http.Cookie.String's, for
// plain and unusual names and values, deletion, TLS and odd dates.
func TestCookieLine(t *testing.T) { bothPaths(t, testCookieLine) }

func testCookieLine(t *testing.T) {
	at := time.Date(2031, 3, 9, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, name := range []string{"fairgate_wait_sale", "fairgate_pass_big-sale.2031", "fairgate_wait_säle", "fairgate wait"} {
		for _, value := range []string{"", "eyJhbGciOiJIUzI1NiJ9.eyJqdGkiOiIxIn0.c2lnbmF0dXJl-_", "a b", `x"y`, "a,b", "ü"} {
			for _, expires := range []time.Time{at, time.Unix(0, 0), {}, time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
				for _, secure := range []bool{false, true} {
					c := &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secure, Expires: expires}
					if value == "" {
						c.MaxAge = -1
					}
					if got, want := CookieLine(name, value, PlainCookieText(value), expires, secure), c.String(); got != want {
						t.Errorf("CookieLine(%q, %q, %v, %v)\n got %s\nwant %s", name, value, expires, secure, got, want)
					}
				}
			}
		}
	}
}

// TestPlainCookieText: every byte, at every place of the eight a step
// and of the tail, is plain exactly when it is a letter, a digit or -._.
func TestPlainCookieText(t *testing.T) {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._"
	if !PlainCookieText("") || !PlainCookieText(alphabet) {
		t.Fatal("the alphabet is not plain")
	}
	for c := range 256 {
		want := strings.IndexByte(alphabet, byte(c)) >= 0
		for i := range 19 {
			b := []byte(strings.Repeat("a", 19))
			b[i] = byte(c)
			if got := PlainCookieText(string(b)); got != want {
				t.Fatalf("PlainCookieText(%q) = %v, want %v", b, got, want)
			}
		}
	}
}

func checkCookieValue(t *testing.T, name string, lines []string) {
	t.Helper()
	r, _ := http.NewRequest("GET", "/", nil)
	for _, l := range lines {
		r.Header.Add("Cookie", l)
	}
	want, err := r.Cookie(name)
	got, ok := CookieValue(r, name)
	if ok != (err == nil) || ok && got != want.Value {
		t.Fatalf("CookieValue(%q) of %q = %q, %v; r.Cookie: %+v, %v", name, lines, got, ok, want, err)
	}
}

// TestCookieValueMatchesNetHTTP: the waiting token is read from the Cookie
// header as r.Cookie reads it, whatever else the header holds.
func TestCookieValueMatchesNetHTTP(t *testing.T) { bothPaths(t, testCookieValue) }

func testCookieValue(t *testing.T) {
	many := strings.Repeat("x=1; ", netHTTPMaxCookies) + "fairgate_wait_sale=tok"
	cases := [][]string{
		nil,
		{"fairgate_wait_sale=eyJ.a-b_c.d"},
		{"a=1; fairgate_wait_sale=tok; fairgate_wait_sale=second"},
		{"a=1", "fairgate_wait_sale=tok2"},
		{" fairgate_wait_sale = tok ;b=2"},
		{"fairgate_wait_sale=\"quoted\""},
		{"fairgate_wait_sale=bad\\value; fairgate_wait_sale=good"},
		{"fairgate_wait_sale"},
		{"fairgate_wait_sale="},
		{"fairgate_wait_salex=1; xfairgate_wait_sale=2"},
		{"fairgate_wait_sale=a b"},
		{many},
		{";;; fairgate_wait_sale=t;;"},
	}
	for _, lines := range cases {
		checkCookieValue(t, "fairgate_wait_sale", lines)
	}
	checkCookieValue(t, "fairgate_wait_säle", []string{"fairgate_wait_säle=1"})
	checkCookieValue(t, "", []string{"=1"})
}

func FuzzCookieValue(f *testing.F) {
	f.Add("fairgate_wait_sale", "a=1; fairgate_wait_sale=tok", "")
	f.Add("n", " n = \"v\" ;n=w", "n=x")
	f.Fuzz(func(t *testing.T, name, line1, line2 string) {
		lines := []string{line1}
		if line2 != "" {
			lines = append(lines, line2)
		}
		checkCookieValue(t, name, lines)
	})
}

// TestAppendCookieDate: the date CookieLine writes is AppendFormat's, over
// its years (1601 to 9999), every weekday, month and time of day.
func TestAppendCookieDate(t *testing.T) {
	check := func(at time.Time) {
		t.Helper()
		if got, want := string(appendCookieDate(nil, at)), at.UTC().Format(http.TimeFormat); got != want {
			t.Fatalf("appendCookieDate(%v) = %q, want %q", at, got, want)
		}
	}
	first := time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)
	last := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	// 97 days and 3607 seconds apart: every weekday, day of month, hour
	// and minute comes round.
	for at := first; at.Before(last); at = at.Add(97*24*time.Hour + 3607*time.Second) {
		check(at)
	}
	check(first)
	check(last)
	check(time.Date(2031, 3, 9, 12, 0, 0, 999_999_999, time.FixedZone("CET", 3600)))
}

func FuzzAppendCookieDate(f *testing.F) {
	f.Add(int64(1_900_000_000), int64(0))
	f.Add(int64(-11_644_473_600), int64(999_999_999))
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		at := time.Unix(sec, nsec)
		if y := at.UTC().Year(); y < 1601 || y > 9999 {
			return
		}
		if got, want := string(appendCookieDate(nil, at)), at.UTC().Format(http.TimeFormat); got != want {
			t.Fatalf("appendCookieDate(%v) = %q, want %q", at, got, want)
		}
	})
}
