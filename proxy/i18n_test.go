package proxy

import (
	"fmt"
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
			want := (&locale{text: l.text, num: l.num}).waitText(secs, true)
			for range 2 {
				if got := l.waitText(secs, true); got != want {
					t.Errorf("%s: waitText(%v) = %q, then %q", l.name, secs, want, got)
				}
			}
		}
	}
}
