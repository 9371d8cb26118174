package pages

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestChooseRemembers: a remembered choice is the choice, and the memory
// stops growing at maxChosen values (a client sending a new header every
// time must not grow it without bound).
func TestChooseRemembers(t *testing.T) {
	ls, err := loadLocales()
	if err != nil {
		t.Fatal(err)
	}
	headers := []string{"de", "fr-CH, fr;q=0.9, en;q=0.8", "xx-unknown", "en-GB,en;q=0.9,de;q=0.8", "ja;q=0.1,, de;q=oops"}
	for _, h := range headers {
		want := ls.match(h)
		for range 2 {
			if got := ls.choose(h); got != want {
				t.Errorf("choose(%q) = %d, match says %d", h, got, want)
			}
		}
	}
	if pageLanguages.all[ls.choose("de")].name != "de" {
		t.Error(`choose("de") is not German`)
	}
	for i := range maxChosen + 100 {
		ls.choose(fmt.Sprintf("de;q=0.%d", i%10) + fmt.Sprint(", en;q=0.", i))
	}
	n := 0
	ls.chosen.Range(func(any, any) bool { n++; return true })
	if n != maxChosen {
		t.Errorf("%d remembered values, want the limit %d", n, maxChosen)
	}
}

// TestWaitTextRemembers: a remembered estimate reads as a fresh one, within
// the first day and beyond it.
func TestWaitTextRemembers(t *testing.T) {
	for _, l := range pageLanguages.all {
		for _, secs := range []float64{59, 60, 89, 90, 3599, 3600, 5400, 86340, 86400, 90000, 1e7} {
			want := (&Locale{text: l.text, num: l.num}).WaitText(secs, true)
			for range 2 {
				if got := l.WaitText(secs, true); got != want {
					t.Errorf("%s: WaitText(%v) = %q, then %q", l.name, secs, want, got)
				}
			}
		}
	}
}

// TestCatalogsComplete: every language has English's keys and the same
// placeholders in each text, and nothing empty.
func TestCatalogsComplete(t *testing.T) {
	ls, err := loadLocales()
	if err != nil {
		t.Fatal(err)
	}
	if len(ls.all) < 8 {
		t.Fatalf("%d languages: %v", len(ls.all), ls.names())
	}
	en := ls.all[0]
	placeholder := regexp.MustCompile(`\{\w+\}`)
	keys := slices.Sorted(maps.Keys(en.text))
	for _, l := range ls.all {
		if got := slices.Sorted(maps.Keys(l.text)); !slices.Equal(got, keys) {
			t.Errorf("%s: keys differ from en: %v", l.name, got)
			continue
		}
		for _, k := range keys {
			if strings.TrimSpace(l.text[k]) == "" {
				t.Errorf("%s: %s is empty", l.name, k)
			}
			if a, b := placeholder.FindAllString(en.text[k], -1), placeholder.FindAllString(l.text[k], -1); !slices.Equal(a, b) {
				t.Errorf("%s: %s has placeholders %v, en has %v", l.name, k, b, a)
			}
		}
	}
}

func TestWaitTextFormatsNumbers(t *testing.T) {
	en := pageLanguages.all[0]
	for _, tc := range []struct {
		secs  float64
		known bool
		want  string
	}{
		{30, true, "less than a minute"},
		{150, true, "about 3 min"},
		{3 * 3600, true, "about 3 h"},
		{3*3600 + 120, true, "about 3 h 2 min"},
		{1200 * 3600, true, "about 1,200 h"},
		{0, false, "unknown while paused"},
	} {
		if got := en.WaitText(tc.secs, tc.known); got != tc.want {
			t.Errorf("WaitText(%v, %v) = %q, want %q", tc.secs, tc.known, got, tc.want)
		}
	}
	de := pageLanguages.all[pageLanguages.choose("de")]
	if got := de.WaitText(1200*3600, true); got != "etwa 1.200 Std." {
		t.Errorf("German grouping: %q", got)
	}
}
