package etag

import "testing"

func TestMatches(t *testing.T) {
	tag := Of([]byte("seat map"))
	for _, tc := range []struct {
		inm  string
		want bool
	}{
		{tag, true},
		{"W/" + tag, true},
		{`"x", ` + tag, true},
		{`"x",` + "W/" + tag + ` , "y"`, true},
		{"*", true},
		{"", false},
		{`"x"`, false},
		{tag[:len(tag)-1], false},
		{tag + "x", false},
		{",,", false},
	} {
		if got := Matches(tc.inm, tag); got != tc.want {
			t.Errorf("Matches(%q, %s) = %v, want %v", tc.inm, tag, got, tc.want)
		}
	}
	if Matches("*", "") {
		t.Error("an answer without a tag matched *")
	}
}

func TestOf(t *testing.T) {
	a, b := Of([]byte("a")), Of([]byte("b"))
	if a == b || a != Of([]byte("a")) || len(a) != 18 || a[0] != '"' || a[len(a)-1] != '"' {
		t.Errorf("Of: %s, %s", a, b)
	}
}
