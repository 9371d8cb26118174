package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fairgate/fairgate/room"
)

// TestCache: one upstream read per key per TTL however many ask, stale
// while revalidating, ETag and 304, and upstream 429s kept for Retry-After.
func TestCache(t *testing.T) {
	var reads atomic.Int32
	var status atomic.Int32
	status.Store(200)
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		if r.URL.Path == "/api/hot" && status.Load() == 429 {
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(429)
			fmt.Fprint(w, `{"error":"slow down"}`)
			return
		}
		w.Header().Set("Cache-Control", "public, s-maxage=3")
		fmt.Fprintf(w, "map of %s #%d", r.URL.Path, reads.Load())
	})
	e := newEnv(t, Config{
		Config: room.Config{Room: "sale"},
		Bypass: Bypass{Paths: []string{"/api/"}},
		Cache:  &Cache{Paths: []string{"/api/sections/*"}, StaleWhileRevalidate: Duration(10 * time.Second)},
	}, up)

	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := e.do("GET", "/api/sections/A", "")
			if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "map of /api/sections/A") {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
		}()
	}
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Fatalf("50 concurrent requests made %d upstream reads", n)
	}
	resp, _ := e.do("GET", "/api/sections/A", "")
	etag := resp.Header.Get("ETag")
	if !strings.HasPrefix(resp.Header.Get("Cache-Status"), "fairgate; hit") || etag == "" {
		t.Fatalf("second read: %v", resp.Header)
	}
	if resp, _ := e.do("GET", "/api/sections/A", "", "If-None-Match", etag); resp.StatusCode != 304 {
		t.Fatalf("If-None-Match: %d", resp.StatusCode)
	}
	// Expired: served stale, one refresh in the background.
	e.clock.Add(4 * time.Second)
	resp, body := e.do("GET", "/api/sections/A", "")
	if resp.StatusCode != 200 || !strings.Contains(string(body), "#1") || !strings.Contains(resp.Header.Get("Cache-Status"), "ttl=-") {
		t.Fatalf("stale read: %s %v", body, resp.Header)
	}
	deadline := time.Now().Add(5 * time.Second)
	for reads.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // waits for the real background refresh, not for time to pass
	}
	if n := reads.Load(); n != 2 {
		t.Fatalf("refresh reads: %d", n)
	}
	// Upstream 429 with Retry-After on a path that is not cached: never
	// kept, every request asks the upstream.
	status.Store(429)
	before := reads.Load()
	for range 3 {
		resp, body = e.do("GET", "/api/hot", "")
		if resp.StatusCode != 429 || resp.Header.Get("Cache-Status") != "" || !strings.Contains(string(body), "slow down") {
			t.Fatalf("uncached 429: %d %s %v", resp.StatusCode, body, resp.Header)
		}
	}
	if n := reads.Load() - before; n != 3 {
		t.Fatalf("3 requests for an uncached path reached the upstream %d times", n)
	}
	served := testutil.ToFloat64(e.gw.metrics.cacheRequests.WithLabelValues("coalesced")) +
		testutil.ToFloat64(e.gw.metrics.cacheRequests.WithLabelValues("hit"))
	if served < 49 {
		t.Fatalf("only %v requests counted as served from the cache", served)
	}
}

// TestCacheKeepsOneEncoding: the cache asks the upstream for the identity
// encoding and does not keep answers that vary by other headers.
func TestCacheKeepsOneEncoding(t *testing.T) {
	var reads atomic.Int32
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		if r.Header.Get("Accept-Encoding") != "" {
			t.Errorf("the cache forwarded Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
		}
		if r.URL.Path == "/api/sections/lang" {
			w.Header().Set("Vary", "Accept-Language")
		}
		w.Header().Set("Cache-Control", "public, s-maxage=5")
		fmt.Fprint(w, "map")
	})
	e := newEnv(t, Config{Config: room.Config{Room: "sale"}, Bypass: Bypass{Paths: []string{"/api/"}}, Cache: &Cache{Paths: []string{"/api/sections/*"}}}, up)
	for range 3 {
		e.do("GET", "/api/sections/A", "", "Accept-Encoding", "gzip")
		e.do("GET", "/api/sections/lang", "")
	}
	if n := reads.Load(); n != 4 { // A once; lang every time
		t.Fatalf("%d upstream reads, want 4", n)
	}
}

// TestCacheStoresOnlySharedAnswers: an answer that is private, no-store or
// sets a cookie is never kept, and a request with Authorization skips the
// cache; a public answer is read once.
func TestCacheStoresOnlySharedAnswers(t *testing.T) {
	var mu sync.Mutex
	reads := map[string]int{}
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reads[r.URL.Path]++
		mu.Unlock()
		cc := "public, s-maxage=60"
		switch r.URL.Path {
		case "/api/sections/private":
			cc = "private, max-age=60"
		case "/api/sections/nostore":
			cc = "no-store"
		case "/api/sections/cookie":
			w.Header().Set("Set-Cookie", "sid=1")
		}
		w.Header().Set("Cache-Control", cc)
		fmt.Fprint(w, "map")
	})
	e := newEnv(t, Config{Config: room.Config{Room: "sale"}, Bypass: Bypass{Paths: []string{"/api/"}}, Cache: &Cache{Paths: []string{"/api/sections/*"}}}, up)
	for range 3 {
		for _, p := range []string{"/api/sections/public", "/api/sections/private", "/api/sections/nostore", "/api/sections/cookie"} {
			e.do("GET", p, "")
		}
		e.do("GET", "/api/sections/authorized", "", "Authorization", "Bearer x")
	}
	want := map[string]int{"/api/sections/public": 1, "/api/sections/private": 3, "/api/sections/nostore": 3,
		"/api/sections/cookie": 3, "/api/sections/authorized": 3}
	mu.Lock()
	defer mu.Unlock()
	if !maps.Equal(reads, want) {
		t.Fatalf("upstream reads %v, want %v", reads, want)
	}
}

// TestCacheKeepsOnlySharedUpstream429s: an upstream 429 is kept only on
// configured cache paths, only when it is not one visitor's answer, and no
// longer than max_retry_after.
func TestCacheKeepsOnlySharedUpstream429s(t *testing.T) {
	var reads atomic.Int32
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		switch {
		case r.URL.Path == "/feed" && r.Header.Get("Cookie") != "":
			// This visitor is rate limited by the origin.
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
		case r.URL.Path == "/api/sections/personal":
			w.Header().Set("Retry-After", "30")
			w.Header().Set("Set-Cookie", "strikes=1")
			w.WriteHeader(http.StatusTooManyRequests)
		case r.URL.Path == "/api/sections/overloaded":
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			fmt.Fprint(w, "ok")
		}
	})
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "open"}, Cache: &Cache{Paths: []string{"/api/sections/*"}}}, up)
	if resp, _ := e.do("GET", "/feed", "", "Cookie", "user=mallory"); resp.StatusCode != 429 {
		t.Fatalf("the limited visitor: %d", resp.StatusCode)
	}
	if resp, _ := e.do("GET", "/feed", ""); resp.StatusCode != 200 {
		t.Fatalf("the next visitor got the first one's 429: %d %v", resp.StatusCode, resp.Header)
	}

	// A 429 that sets a cookie is one visitor's, even on a cache path.
	before := reads.Load()
	for range 2 {
		if resp, _ := e.do("GET", "/api/sections/personal", ""); resp.StatusCode != 429 || resp.Header.Get("Set-Cookie") == "" {
			t.Fatalf("personal 429: %d %v", resp.StatusCode, resp.Header)
		}
	}
	if n := reads.Load() - before; n != 2 {
		t.Fatalf("a cookie-setting 429 was served from memory: %d upstream reads for 2 requests", n)
	}

	// An anonymous 503 on a cache path is kept, for max_retry_after (10s by
	// default) rather than the hour the upstream asked for.
	before = reads.Load()
	resp, _ := e.do("GET", "/api/sections/overloaded", "")
	resp2, _ := e.do("GET", "/api/sections/overloaded", "")
	if resp.StatusCode != 503 || resp2.StatusCode != 503 || reads.Load()-before != 1 {
		t.Fatalf("overloaded: %d %d, %d reads", resp.StatusCode, resp2.StatusCode, reads.Load()-before)
	}
	if ra := resp2.Header.Get("Retry-After"); ra != "10" {
		t.Fatalf("Retry-After from memory %q, want 10", ra)
	}
	e.clock.Add(11 * time.Second)
	e.do("GET", "/api/sections/overloaded", "")
	if n := reads.Load() - before; n != 2 {
		t.Fatalf("the 503 outlived max_retry_after: %d reads", n)
	}
}

// TestCacheFillCarriesNoCredentials: an origin that personalises by cookie
// and still says `public` serves every visitor the anonymous answer, the
// fill carries no credentials, and an answer that sets a cookie is never
// stored.
func TestCacheFillCarriesNoCredentials(t *testing.T) {
	var reads atomic.Int32
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := reads.Add(1)
		for name := range r.Header {
			if strings.Contains(strings.ToLower(name), "fairgate") || name == "Cookie" || name == "Authorization" {
				t.Errorf("a cache fill carried %s: %q", name, r.Header[name])
			}
		}
		if r.URL.Path == "/api/sections/session" {
			w.Header().Set("Set-Cookie", fmt.Sprintf("sid=%d", n))
		}
		w.Header().Set("Cache-Control", "public, s-maxage=60")
		user := "anonymous"
		if c, err := r.Cookie("user"); err == nil {
			user = c.Value
		}
		fmt.Fprintf(w, "hello %s", user)
	})
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "open"}, Cache: &Cache{Paths: []string{"/api/sections/*"}}}, up)
	for _, who := range []string{"alice", "bob"} {
		_, body := e.do("GET", "/api/sections/A", "", "Cookie", "user="+who, "Fairgate_Pass", "x", "Proxy-Authorization", "Basic eA==")
		if string(body) != "hello anonymous" {
			t.Fatalf("%s was served %q", who, body)
		}
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d upstream reads, want 1", n)
	}
	first, _ := e.do("GET", "/api/sections/session", "")
	second, _ := e.do("GET", "/api/sections/session", "")
	if first.Header.Get("Set-Cookie") == second.Header.Get("Set-Cookie") || reads.Load() != 3 {
		t.Fatalf("a cookie-setting answer was stored: %q %q, %d reads",
			first.Header.Get("Set-Cookie"), second.Header.Get("Set-Cookie"), reads.Load())
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
		if !bytes.Equal(decode(t, tc.want, b), seatMap) {
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
