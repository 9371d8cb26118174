package gateway

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/fairgate/fairgate/gateway/pages"
	"github.com/fairgate/fairgate/room"
)

func varies(resp *http.Response) bool {
	return strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Accept-Encoding")
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

func unzstd(t *testing.T, b []byte) []byte {
	t.Helper()
	d, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out, err := d.DecodeAll(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWaitingPageCompressed: the waiting page, the closed page and the
// assets go out compressed when the client accepts it, with Vary, and
// decode to what a client without compression gets.
func TestWaitingPageCompressed(t *testing.T) {
	closedPage := filepath.Join(t.TempDir(), "closed.html")
	if err := os.WriteFile(closedPage, []byte("<!doctype html><title>Closed</title>"+strings.Repeat("<p>The sale has closed.</p>", 40)), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue"}, ClosedPage: closedPage}, nil)
	// (Go's client asks for gzip and decodes it unless told otherwise.)
	plain, body := e.do("GET", "/shop/seats?a=1&b=<2>", "", "Accept", "text/html", "Accept-Encoding", "identity")
	if plain.StatusCode != 200 || plain.Header.Get("Content-Encoding") != "" || !varies(plain) {
		t.Fatalf("without Accept-Encoding: %d %q, Vary %q", plain.StatusCode, plain.Header.Get("Content-Encoding"), plain.Header.Values("Vary"))
	}
	for _, ae := range []string{"gzip", "gzip, deflate, br, zstd"} {
		resp, gz := e.do("GET", "/shop/seats?a=1&b=<2>", "", "Accept", "text/html", "Accept-Encoding", ae)
		if resp.Header.Get("Content-Encoding") != "gzip" || !varies(resp) {
			t.Fatalf("%q: Content-Encoding %q, Vary %q", ae, resp.Header.Get("Content-Encoding"), resp.Header.Values("Vary"))
		}
		if got := gunzip(t, gz); !bytes.Equal(got, body) {
			t.Fatalf("%q: the gzipped page differs from the plain one", ae)
		}
		if !bytes.Contains(body, []byte("/shop/seats?a=1&amp;b=&lt;2&gt;")) {
			t.Fatalf("the return path is not in the page: %.300s", body)
		}
		t.Logf("waiting page: %d bytes plain, %d gzip", len(body), len(gz))
	}

	// Assets: zstd preferred, gzip, or plain.
	_, js := e.do("GET", "/_fairgate/assets/"+pages.AssetVersion()+"/waiting.js", "", "Accept-Encoding", "identity")
	for _, tc := range []struct{ ae, want string }{{"gzip, zstd", "zstd"}, {"gzip", "gzip"}, {"br", ""}} {
		resp, b := e.do("GET", "/_fairgate/assets/"+pages.AssetVersion()+"/waiting.js", "", "Accept-Encoding", tc.ae)
		if resp.Header.Get("Content-Encoding") != tc.want {
			t.Fatalf("asset with %q: Content-Encoding %q", tc.ae, resp.Header.Get("Content-Encoding"))
		}
		switch tc.want {
		case "gzip":
			b = gunzip(t, b)
		case "zstd":
			b = unzstd(t, b)
		}
		if !bytes.Equal(b, js) {
			t.Fatalf("asset with %q decodes to other bytes", tc.ae)
		}
	}

	// The closed page (the built-in one is under 512 bytes: sent as it is).
	closed := "closed"
	_ = e.gw.Room().Apply(room.RoomChange{State: &closed}, e.clock.Now())
	_, page := e.do("GET", "/shop", "", "Accept", "text/html", "Accept-Encoding", "identity")
	resp, z := e.do("GET", "/shop", "", "Accept", "text/html", "Accept-Encoding", "zstd")
	if resp.StatusCode != 503 || resp.Header.Get("Content-Encoding") != "zstd" || !bytes.Equal(unzstd(t, z), page) {
		t.Fatalf("closed page: %d %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
}

// TestCacheCompressed: a cached answer is kept compressed once and sent in
// the Encoding the client prefers, with its own ETag; a body that must not
// be compressed (an image, no-transform, already encoded, small) is sent
// as it is, without Vary.
func TestCacheCompressed(t *testing.T) {
	seatMap := seatMapJSON(t)
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, s-maxage=60")
		switch r.URL.Path {
		case "/api/map":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(seatMap)
		case "/api/image":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(seatMap)
		case "/api/notransform":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "public, s-maxage=60, no-transform")
			_, _ = w.Write(seatMap)
		case "/api/encoded":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "br")
			_, _ = w.Write(seatMap)
		case "/api/small":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"seats":[]}`)
		}
	})
	e := newEnv(t, Config{Config: room.Config{Room: "sale"}, Bypass: Bypass{Paths: []string{"/api/"}}, Cache: &Cache{Paths: []string{"/api/*"}}}, up)
	plain, body := e.do("GET", "/api/map", "", "Accept-Encoding", "identity")
	if !bytes.Equal(body, seatMap) || plain.Header.Get("Content-Encoding") != "" || !varies(plain) {
		t.Fatalf("plain: %q, Vary %q", plain.Header.Get("Content-Encoding"), plain.Header.Values("Vary"))
	}
	etags := map[string]bool{plain.Header.Get("ETag"): true}
	for _, tc := range []struct{ ae, want string }{{"gzip, deflate, br, zstd", "zstd"}, {"gzip", "gzip"}} {
		resp, b := e.do("GET", "/api/map", "", "Accept-Encoding", tc.ae)
		if resp.Header.Get("Content-Encoding") != tc.want || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
			t.Fatalf("%q: Content-Encoding %q, Cache-Status %q", tc.ae, resp.Header.Get("Content-Encoding"), resp.Header.Get("Cache-Status"))
		}
		decoded := unzstd
		if tc.want == "gzip" {
			decoded = gunzip
		}
		if !bytes.Equal(decoded(t, b), seatMap) {
			t.Fatalf("%q: decodes to other bytes", tc.ae)
		}
		etag := resp.Header.Get("ETag")
		if etags[etag] || !strings.HasSuffix(etag, "-"+tc.want+`"`) {
			t.Fatalf("%q: ETag %s, seen %v", tc.ae, etag, etags)
		}
		etags[etag] = true
		if nm, _ := e.do("GET", "/api/map", "", "Accept-Encoding", tc.ae, "If-None-Match", etag); nm.StatusCode != 304 {
			t.Fatalf("%q: If-None-Match its ETag: %d", tc.ae, nm.StatusCode)
		}
		t.Logf("seat map (%d bytes): %s %d bytes, %d saved", len(seatMap), tc.want, len(b), len(seatMap)-len(b))
	}
	for _, path := range []string{"/api/image", "/api/notransform", "/api/encoded", "/api/small"} {
		for range 2 { // the fill, then the hit
			resp, _ := e.do("GET", path, "", "Accept-Encoding", "gzip, zstd")
			if enc := resp.Header.Get("Content-Encoding"); (path == "/api/encoded") != (enc == "br") || varies(resp) {
				t.Fatalf("%s: Content-Encoding %q, Vary %q", path, enc, resp.Header.Get("Vary"))
			}
		}
	}
}

// seatMapJSON is a section's seat map the size of the demo's (about 7.6 KB).
func seatMapJSON(t *testing.T) []byte {
	type seat struct {
		ID    string `json:"id"`
		Row   string `json:"row"`
		N     int    `json:"n"`
		State string `json:"state"`
		Price int    `json:"price_cents"`
	}
	var seats []seat
	for row := 0; row < 10; row++ {
		for n := 1; n <= 12; n++ {
			state := "free"
			if (row*12+n)%7 == 0 {
				state = "held"
			}
			seats = append(seats, seat{ID: fmt.Sprintf("L1-%c-%d", 'A'+row, n), Row: string(rune('A' + row)), N: n, State: state, Price: 8900})
		}
	}
	b, err := json.Marshal(map[string]any{"event": "final-2026", "section": "L1", "seats": seats})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
