package reply

import (
	"net/http"
	"net/textproto"
	"reflect"
	"testing"
)

// TestHeadersMatchHeaderSetAndAdd: Headers leaves a header map as Set and
// Add do, over a map that already has values and over an empty one, and a
// later Add to one header leaves the others as they were.
func TestHeadersMatchHeaderSetAndAdd(t *testing.T) {
	type op struct {
		add        bool
		key, value string
	}
	cases := []struct {
		name string
		have http.Header
		ops  []op
	}{
		{"empty map", http.Header{}, []op{{false, "Content-Type", "application/json"}, {true, "Vary", "Accept-Language"},
			{true, "Set-Cookie", "a=1"}, {true, "Set-Cookie", "b=2"}, {false, "Cache-Control", "no-store"}}},
		{"values there", http.Header{"Vary": {"Accept-Encoding"}, "Cache-Control": {"max-age=1"}},
			[]op{{true, "Vary", "Accept-Language"}, {false, "Cache-Control", "no-store"}, {false, "Retry-After", "3"}}},
		{"more than asked for", http.Header{}, []op{{false, "A", "1"}, {false, "B", "2"}, {false, "C", "3"}, {true, "A", "4"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, got := c.have.Clone(), c.have.Clone()
			hs := NewHeaders(got, 2)
			for _, o := range c.ops {
				if k := textproto.CanonicalMIMEHeaderKey(o.key); k != o.key {
					t.Fatalf("test key %q is not canonical", o.key)
				}
				if o.add {
					want.Add(o.key, o.value)
					hs.Add(o.key, o.value)
				} else {
					want.Set(o.key, o.value)
					hs.Set(o.key, o.value)
				}
				if g, w := hs.Get(o.key), want.Get(o.key); g != w {
					t.Errorf("Get(%q) = %q, want %q", o.key, g, w)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("headers %v, want %v", got, want)
			}
			// Another handler's Add after ours must not write over the
			// next value in the shared array.
			before := got.Clone()
			for k := range got {
				got.Add(k, "later")
				before.Add(k, "later")
			}
			if !reflect.DeepEqual(got, before) {
				t.Fatalf("after a later Add: %v, want %v", got, before)
			}
		})
	}
}
