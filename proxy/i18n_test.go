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
