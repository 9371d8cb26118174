package compress

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestAcceptWeights(t *testing.T) {
	for _, tc := range []struct {
		header string
		gz     bool
		zst    bool
		picked Encoding
	}{
		{"", false, false, Identity},
		{"gzip", true, false, Gzip},
		{"gzip, deflate, br, zstd", true, true, Zstd},
		{"zstd;q=0.5, gzip", true, true, Gzip},
		{"gzip;q=0, zstd;q=0", false, false, Identity},
		{"GZIP;Q=0.8", true, false, Gzip},
		{"*", true, true, Zstd},
		{"*;q=0.1, gzip;q=0", false, true, Zstd},
		{"x-gzip", true, false, Gzip},
		{"gzip;q=nonsense", false, false, Identity},
		{"identity", false, false, Identity},
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		if tc.header != "" {
			r.Header.Set("Accept-Encoding", tc.header)
		}
		gz, zst := AcceptWeights(r)
		if (gz > 0) != tc.gz || (zst > 0) != tc.zst {
			t.Errorf("%q: gzip %v zstd %v", tc.header, gz, zst)
		}
		eb := Precompress(bytes.Repeat([]byte("seat map "), 200), false)
		if _, enc := eb.Pick(r); enc != tc.picked {
			t.Errorf("%q: picked %v, want %v", tc.header, enc, tc.picked)
		}
	}
}

// TestSplicedGzip: the waiting page's gzip with the return path spliced in
// is one valid gzip member (Go's own reader checks CRC and size) with the
// announced length, for any return path, up to several stored blocks.
func TestSplicedGzip(t *testing.T) {
	page := strings.Repeat("<p>waiting</p>", 100)
	for _, parts := range [][]string{{page}, {page, page[:10]}, {"", page, "", page}} {
		for _, fill := range []string{"", "/shop?x=1&amp;y=2", strings.Repeat("/a", 70000)} {
			raw := make([][]byte, len(parts))
			for i, p := range parts {
				raw[i] = []byte(p)
			}
			s := NewSplicedGzip(raw)
			var out bytes.Buffer
			s.Write(&out, fill)
			if out.Len() != s.Len(fill) {
				t.Fatalf("%d parts, fill %d bytes: wrote %d bytes, announced %d", len(parts), len(fill), out.Len(), s.Len(fill))
			}
			zr, err := gzip.NewReader(&out)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("%d parts, fill %d bytes: %v", len(parts), len(fill), err)
			}
			if want := strings.Join(parts, fill); string(got) != want {
				t.Fatalf("%d parts, fill %d bytes: decoded %d bytes, want %d", len(parts), len(fill), len(got), len(want))
			}
		}
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzAcceptEncoding: any Accept-Encoding picks a coding the body has and
// the header allows, or none; never a panic.
func FuzzAcceptEncoding(f *testing.F) {
	for _, s := range []string{"gzip", "gzip, deflate, br, zstd", "zstd;q=0.5, gzip;q=0.4", "*;q=0", "gzip;q=", ";;,,", "x-gzip;Q=1e999"} {
		f.Add(s)
	}
	eb := Precompress(bytes.Repeat([]byte("seat map "), 200), false)
	f.Fuzz(func(t *testing.T, header string) {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("Accept-Encoding", header)
		gz, zst := AcceptWeights(r)
		body, enc := eb.Pick(r)
		switch enc {
		case Gzip:
			if gz <= 0 || !bytes.Equal(body, eb.gzip) {
				t.Fatalf("%q: gzip picked with weight %v", header, gz)
			}
		case Zstd:
			if zst <= 0 || !bytes.Equal(body, eb.zstd) {
				t.Fatalf("%q: zstd picked with weight %v", header, zst)
			}
		case Identity:
			if gz > 0 || zst > 0 {
				t.Fatalf("%q: nothing picked with weights gzip %v zstd %v", header, gz, zst)
			}
		}
	})
}

// FuzzSplicedGzip: any return path spliced into the page gives a gzip
// stream that decodes to the page with the path, of the announced length.
func FuzzSplicedGzip(f *testing.F) {
	for _, s := range []string{"", "/shop", "/a?b=1&amp;c", strings.Repeat("x", 70_000)} {
		f.Add(s)
	}
	parts := [][]byte{[]byte(strings.Repeat("<p>head</p>", 60)), []byte("<a href=\""), []byte(strings.Repeat("<p>tail</p>", 60))}
	s := NewSplicedGzip(parts)
	f.Fuzz(func(t *testing.T, fill string) {
		var out bytes.Buffer
		s.Write(&out, fill)
		if out.Len() != s.Len(fill) {
			t.Fatalf("wrote %d bytes, announced %d", out.Len(), s.Len(fill))
		}
		if got, want := gunzip(t, out.Bytes()), bytes.Join(parts, []byte(fill)); !bytes.Equal(got, want) {
			t.Fatalf("decoded %d bytes, want %d", len(got), len(want))
		}
	})
}
