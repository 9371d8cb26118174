package pages

import "testing"

// FuzzChooseLanguage: any Accept-Language header picks one of the page
// languages, without panicking.
func FuzzChooseLanguage(f *testing.F) {
	for _, s := range []string{"", "de-DE,de;q=0.9", "nl-BE;q=0.8, zz;q=0.9", "garbage;;;q=x", "*", "ar;q=0", "ja, *;q=0.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		if i := pageLanguages.choose(header); i < 0 || i >= len(pageLanguages.all) {
			t.Fatalf("choose(%q) = %d", header, i)
		}
	})
}
