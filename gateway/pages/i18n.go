package pages

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// The visitor-facing text, one JSON file per language. English is the
// reference: every other file has exactly its keys (a test checks), and it
// is the fallback when nothing the visitor accepts is here.
//
//go:embed assets/i18n/*.json
var i18nFS embed.FS

// Locale is one language of the visitor pages.
type Locale struct {
	index int // in the catalog, English first
	tag   language.Tag
	name  string // the tag as written in <html lang>, e.g. "de"
	dir   string // "ltr" or "rtl"
	text  map[string]string
	// script is text as JSON, embedded in the page for the script.
	script []byte
	num    *message.Printer
	// waits remembers WaitText's answers by minutes, for the first day.
	waits [24 * 60]atomic.Value
	// longWait remembers the last answer beyond the first day: everyone
	// waiting is told nearly the same estimate at any one time.
	longWait atomic.Pointer[minutesText]
}

// minutesText is one remembered answer of WaitText.
type minutesText struct {
	m    int
	text string
}

// t returns the text for key with {name} placeholders filled from args,
// given as name, value pairs.
func (l *Locale) t(key string, args ...string) string {
	s := l.text[key]
	for i := 0; i+1 < len(args); i += 2 {
		s = strings.ReplaceAll(s, "{"+args[i]+"}", args[i+1])
	}
	return s
}

// Name is the language's tag as written in <html lang>, e.g. "de".
func (l *Locale) Name() string { return l.name }

// Text is the text for key as written, without placeholders filled.
func (l *Locale) Text(key string) string { return l.text[key] }

// number formats n for the language (digit grouping).
func (l *Locale) number(n int) string { return l.num.Sprint(n) }

// WaitText is a wait estimate in words, the server-side twin of the
// script's humanDuration (which formats units with Intl).
func (l *Locale) WaitText(secs float64, known bool) string {
	if !known {
		return l.t("estimate_unknown")
	}
	if secs < 60 {
		return l.t("estimate_under_minute")
	}
	m := int(secs/60 + 0.5)
	if m >= len(l.waits) {
		if last := l.longWait.Load(); last != nil && last.m == m {
			return last.text
		}
		s := l.minutesText(m)
		l.longWait.Store(&minutesText{m, s})
		return s
	}
	if s, ok := l.waits[m].Load().(string); ok {
		return s
	}
	s := l.minutesText(m)
	l.waits[m].Store(s)
	return s
}

// minutesText is WaitText for a whole number of minutes, one or more.
func (l *Locale) minutesText(m int) string {
	if m < 60 {
		return l.t("estimate_about", "duration", l.t("minutes", "n", l.number(m)))
	}
	d := l.t("hours", "n", l.number(m/60))
	if m%60 != 0 {
		d += " " + l.t("minutes", "n", l.number(m%60))
	}
	return l.t("estimate_about", "duration", d)
}

// StateMessage is the status line the page shows for a room state and the
// outcome of the last attempt. saleStart is RFC 3339 (the script shows it
// in the visitor's time zone; here it is UTC).
func (l *Locale) StateMessage(state, outcome, saleStart string) string {
	switch {
	case outcome == "early":
		return l.t("status_early")
	case state == "paused":
		return l.t("status_paused")
	case state == "scheduled":
		at := saleStart
		if t, err := time.Parse(time.RFC3339, saleStart); err == nil {
			at = t.UTC().Format("2006-01-02 15:04 UTC")
		}
		return l.t("status_scheduled", "time", at)
	case state == "queue":
		return l.t("status_queue")
	case state == "closed":
		return l.t("status_closed")
	default:
		return l.t("status_getting")
	}
}

// locales is every language of the visitor pages, English first.
type locales struct {
	all     []*Locale
	matcher language.Matcher
	// chosen remembers the choice for Accept-Language values seen before:
	// browsers send a few hundred distinct ones, and parsing and matching
	// one costs more than the rest of a poll's answer. It holds at most
	// maxChosen values of at most maxChosenLen bytes; others are parsed
	// every time.
	chosen  sync.Map // string -> int
	nChosen atomic.Int64
}

const (
	maxChosen    = 4096
	maxChosenLen = 256
)

// pageLanguages is the catalog, loaded once: the files are part of the
// binary, so a broken one is a build defect caught by the tests.
var pageLanguages = mustLoadLocales()

func mustLoadLocales() *locales {
	ls, err := loadLocales()
	if err != nil {
		panic(err) // embedded files: only a broken build gets here
	}
	return ls
}

func loadLocales() (*locales, error) {
	files, err := i18nFS.ReadDir("assets/i18n")
	if err != nil {
		return nil, err
	}
	ls := &locales{}
	for _, f := range files {
		name := strings.TrimSuffix(f.Name(), ".json")
		b, err := i18nFS.ReadFile(path.Join("assets/i18n", f.Name()))
		if err != nil {
			return nil, err
		}
		l := &Locale{name: name}
		if err := json.Unmarshal(b, &l.text); err != nil {
			return nil, fmt.Errorf("i18n %s: %w", f.Name(), err)
		}
		if l.tag, err = language.Parse(name); err != nil {
			return nil, fmt.Errorf("i18n %s: %w", f.Name(), err)
		}
		l.dir = l.text["dir"]
		if l.dir != "ltr" && l.dir != "rtl" {
			return nil, fmt.Errorf("i18n %s: dir %q, want ltr or rtl", f.Name(), l.dir)
		}
		if l.script, err = json.Marshal(l.text); err != nil {
			return nil, err
		}
		l.num = message.NewPrinter(l.tag)
		ls.all = append(ls.all, l)
	}
	// English first: the matcher falls back to the first tag.
	slices.SortStableFunc(ls.all, func(a, b *Locale) int {
		switch {
		case a.name == b.name:
			return 0
		case a.name == "en":
			return -1
		case b.name == "en":
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	if len(ls.all) == 0 || ls.all[0].name != "en" {
		return nil, fmt.Errorf("i18n: no en.json")
	}
	for i, l := range ls.all {
		l.index = i
	}
	tags := make([]language.Tag, len(ls.all))
	for i, l := range ls.all {
		tags[i] = l.tag
	}
	ls.matcher = language.NewMatcher(tags)
	return ls, nil
}

// names lists the languages, for error messages and docs.
func (ls *locales) names() []string {
	out := make([]string, len(ls.all))
	for i, l := range ls.all {
		out[i] = l.name
	}
	return out
}

// byName finds a configured `language`: an exact catalog name, or any tag
// the matcher maps to one with high confidence (`de-CH` is `de`).
func (ls *locales) byName(name string) (int, error) {
	tag, err := language.Parse(name)
	if err != nil {
		return 0, fmt.Errorf("language %q: %w", name, err)
	}
	_, i, conf := ls.matcher.Match(tag)
	if conf < language.High {
		return 0, fmt.Errorf("language %q: the visitor pages come in %s", name, strings.Join(ls.names(), ", "))
	}
	return i, nil
}

// choose picks the language for an Accept-Language header; English when
// nothing in it matches.
func (ls *locales) choose(acceptLanguage string) int {
	if acceptLanguage == "" {
		return 0
	}
	if i, ok := ls.chosen.Load(acceptLanguage); ok {
		return i.(int)
	}
	i := ls.match(acceptLanguage)
	if len(acceptLanguage) <= maxChosenLen && ls.nChosen.Add(1) <= maxChosen {
		ls.chosen.Store(strings.Clone(acceptLanguage), i)
	}
	return i
}

// match is choose without the memory.
func (ls *locales) match(acceptLanguage string) int {
	tags, _, err := language.ParseAcceptLanguage(acceptLanguage)
	if err != nil {
		tags = readableTags(acceptLanguage)
	}
	if len(tags) == 0 {
		return 0
	}
	_, i, conf := ls.matcher.Match(tags...)
	if conf == language.No {
		return 0
	}
	return i
}

// readableTags is an Accept-Language header's readable entries by
// preference: one unknown or malformed entry must not lose the others
// (the parser rejects the whole header for one).
func readableTags(acceptLanguage string) []language.Tag {
	type entry struct {
		tag language.Tag
		q   float32
	}
	var entries []entry
	for part := range strings.SplitSeq(acceptLanguage, ",") {
		tags, qs, err := language.ParseAcceptLanguage(part)
		if err == nil && len(tags) == 1 {
			entries = append(entries, entry{tags[0], qs[0]})
		}
	}
	slices.SortStableFunc(entries, func(a, b entry) int {
		switch {
		case a.q > b.q:
			return -1
		case a.q < b.q:
			return 1
		}
		return 0
	})
	tags := make([]language.Tag, len(entries))
	for i, e := range entries {
		tags[i] = e.tag
	}
	return tags
}

// Locales is every language of the visitor pages, English first. The
// slice is shared: not to be changed.
func Locales() []*Locale { return pageLanguages.all }

// Choose is the language for an Accept-Language header; English when
// nothing in it matches.
func Choose(acceptLanguage string) *Locale {
	return pageLanguages.all[pageLanguages.choose(acceptLanguage)]
}

// Named is the language for a configured `language`: an exact catalog
// name, or any tag that maps to one with high confidence (`de-CH` is `de`).
func Named(name string) (*Locale, error) {
	i, err := pageLanguages.byName(name)
	if err != nil {
		return nil, err
	}
	return pageLanguages.all[i], nil
}

// LocaleFor is the language of the visitor pages for r: the configured
// one, else the visitor's choice. It says whether the choice depended on
// the request, for Vary.
func (p *Pages) LocaleFor(r *http.Request) (*Locale, bool) {
	if p.forced != nil {
		return p.forced, false
	}
	// The key canonical, straight from the map: Header.Get would
	// canonicalize it again on every waiting answer, for most of the
	// choice's cost.
	var accept string
	if v := r.Header["Accept-Language"]; len(v) > 0 {
		accept = v[0]
	}
	return Choose(accept), true
}
