package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/ristretto/v2"
)

// responseCache serves configured read paths from memory (ristretto). An
// entry is fresh for its TTL (the upstream's s-maxage or max-age, else the
// configured TTL), then served stale for StaleWhileRevalidate while one
// request refreshes it; concurrent misses of a key wait for one upstream
// read. Upstream 429 and 503 answers with Retry-After are kept for that long,
// on every GET path: the upstream asked for the breathing room.
type responseCache struct {
	paths    *matcher
	ttl, swr time.Duration
	maxEntry int64
	store    *ristretto.Cache[string, *entry]
	metrics  *metrics
	now      func() time.Time

	mu     sync.Mutex
	flight map[string]*fetch
	// breakerUntil is when the last remembered upstream 429/503 expires
	// (Unix nanoseconds): until then uncached paths look for one.
	breakerUntil atomic.Int64
}

type entry struct {
	status int
	header http.Header
	body   []byte
	etag   string
	fresh  time.Time // fresh until
	stale  time.Time // may be served stale until
}

type fetch struct {
	done chan struct{}
	e    *entry
}

func newResponseCache(cfg Cache, m *metrics, now func() time.Time) (*responseCache, error) {
	paths, err := newMatcher(cfg.Paths)
	if err != nil {
		return nil, err
	}
	store, err := ristretto.NewCache(&ristretto.Config[string, *entry]{
		NumCounters: 100_000, MaxCost: cfg.MaxBytes, BufferItems: 64,
	})
	if err != nil {
		return nil, err
	}
	return &responseCache{
		paths: paths, ttl: time.Duration(cfg.TTL), swr: time.Duration(cfg.StaleWhileRevalidate),
		maxEntry: cfg.MaxEntryBytes, store: store, metrics: m, now: now, flight: map[string]*fetch{},
	}, nil
}

func (c *responseCache) close() { c.store.Close() }

func (c *responseCache) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	now := c.now()
	cacheable := c.cacheable(r)
	if !cacheable && now.UnixNano() >= c.breakerUntil.Load() {
		// No upstream has asked anyone to back off: pass straight through,
		// watching for it.
		bw := &breakerWriter{ResponseWriter: w, cache: c, key: r.Host + " " + r.URL.RequestURI()}
		next.ServeHTTP(bw, r)
		bw.finish()
		return
	}
	key := r.Host + " " + r.URL.RequestURI()
	e, ok := c.store.Get(key)
	if ok && now.Before(e.stale) {
		switch {
		case now.Before(e.fresh):
			c.metrics.cacheRequests.WithLabelValues(hitLabel(e)).Inc()
		case cacheable:
			c.metrics.cacheRequests.WithLabelValues("stale").Inc()
			c.refresh(key, r, next)
		}
		c.write(w, r, e, now, "hit")
		return
	}
	if !cacheable {
		// Not a cached path: pass through, keeping only an upstream's
		// request to back off.
		bw := &breakerWriter{ResponseWriter: w, cache: c, key: key}
		next.ServeHTTP(bw, r)
		bw.finish()
		return
	}
	e, leader := c.fetchOnce(key, r, next)
	if e == nil {
		c.metrics.upstreamErrors.WithLabelValues("cache_fetch").Inc()
		writeError(w, http.StatusBadGateway, "upstream", "the upstream did not answer")
		return
	}
	label := "miss"
	if !leader {
		label = "coalesced"
	}
	c.metrics.cacheRequests.WithLabelValues(label).Inc()
	c.write(w, r, e, c.now(), "fwd=miss")
}

func hitLabel(e *entry) string {
	if e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable {
		return "breaker"
	}
	return "hit"
}

func (c *responseCache) cacheable(r *http.Request) bool {
	return matchRequest(c.paths, r) && r.Header.Get("Authorization") == ""
}

// fetchOnce reads key from the upstream, once however many ask at a time.
func (c *responseCache) fetchOnce(key string, r *http.Request, next http.Handler) (*entry, bool) {
	c.mu.Lock()
	if f, ok := c.flight[key]; ok {
		c.mu.Unlock()
		select {
		case <-f.done:
			return f.e, false
		case <-r.Context().Done():
			return nil, false
		}
	}
	f := &fetch{done: make(chan struct{})}
	c.flight[key] = f
	c.mu.Unlock()

	// Others wait on this load: it must not end with the leader's connection.
	f.e = c.load(key, r.Clone(context.WithoutCancel(r.Context())), next)
	c.mu.Lock()
	delete(c.flight, key)
	c.mu.Unlock()
	close(f.done)
	return f.e, true
}

// refresh reloads a stale key in the background, unless a load is under way.
func (c *responseCache) refresh(key string, r *http.Request, next http.Handler) {
	c.mu.Lock()
	if _, busy := c.flight[key]; busy {
		c.mu.Unlock()
		return
	}
	f := &fetch{done: make(chan struct{})}
	c.flight[key] = f
	c.mu.Unlock()
	bg := r.Clone(context.WithoutCancel(r.Context()))
	go func() {
		f.e = c.load(key, bg, next)
		c.mu.Lock()
		delete(c.flight, key)
		c.mu.Unlock()
		close(f.done)
	}()
}

// load asks the upstream and stores what may be stored.
func (c *responseCache) load(key string, r *http.Request, next http.Handler) *entry {
	up := r.Clone(r.Context())
	up.Method = http.MethodGet
	up.Header.Del("If-None-Match")
	up.Header.Del("If-Modified-Since")
	// One entry serves every client: ask for the identity encoding, so a
	// compressed body is never kept for clients that cannot read it.
	up.Header.Del("Accept-Encoding")
	rec := &recorder{header: http.Header{}, limit: c.maxEntry}
	next.ServeHTTP(rec, up)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	e := &entry{status: rec.status, header: rec.header, body: rec.body.Bytes()}
	now := c.now()
	ttl, ok := c.lifetime(rec)
	if ok && !rec.overflow {
		e.etag = e.header.Get("ETag")
		if e.etag == "" && e.status == http.StatusOK {
			sum := sha256.Sum256(e.body)
			e.etag = `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
		}
		e.fresh = now.Add(ttl)
		e.stale = e.fresh
		if e.status == http.StatusOK {
			e.stale = e.fresh.Add(c.swr)
		}
		c.store.SetWithTTL(key, e, int64(len(e.body)+512), e.stale.Sub(now))
		c.store.Wait()
	}
	return e
}

// lifetime is how long a response may be kept: 200s per s-maxage, max-age
// or the default TTL; 429 and 503 per Retry-After (seconds). Private,
// no-store and cookie-setting answers are not kept.
func (c *responseCache) lifetime(rec *recorder) (time.Duration, bool) {
	cc := strings.ToLower(rec.header.Get("Cache-Control"))
	if rec.header.Get("Set-Cookie") != "" || strings.Contains(cc, "no-store") || strings.Contains(cc, "private") {
		return 0, false
	}
	// The key is host and URI only: an answer that varies by anything but
	// the encoding (which load pins) is not kept.
	for _, v := range rec.header.Values("Vary") {
		for _, field := range strings.Split(v, ",") {
			if f := strings.TrimSpace(field); f != "" && !strings.EqualFold(f, "Accept-Encoding") {
				return 0, false
			}
		}
	}
	switch rec.status {
	case http.StatusOK:
		if d, ok := directive(cc, "s-maxage"); ok {
			return d, d > 0
		}
		if d, ok := directive(cc, "max-age"); ok {
			return d, d > 0
		}
		return c.ttl, true
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return retryAfter(rec.header)
	}
	return 0, false
}

func directive(cc, name string) (time.Duration, bool) {
	for _, part := range strings.Split(cc, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && k == name {
			n, err := strconv.Atoi(strings.Trim(v, `"`))
			if err != nil || n < 0 {
				return 0, false
			}
			const year = 365 * 24 * 3600 // keeps the product from overflowing
			return time.Duration(min(n, year)) * time.Second, true
		}
	}
	return 0, false
}

func retryAfter(h http.Header) (time.Duration, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || n <= 0 {
		return 0, false
	}
	return time.Duration(min(n, 3600)) * time.Second, true
}

// write serves an entry, answering 304 to a matching If-None-Match.
func (c *responseCache) write(w http.ResponseWriter, r *http.Request, e *entry, now time.Time, how string) {
	h := w.Header()
	for k, v := range e.header {
		h[k] = v
	}
	if e.etag != "" {
		h.Set("ETag", e.etag)
	}
	if e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable {
		h.Set("Retry-After", strconv.Itoa(max(1, int(e.fresh.Sub(now).Seconds()+0.999))))
	}
	ttl := int(e.fresh.Sub(now).Seconds())
	if how == "hit" {
		h.Set("Cache-Status", fmt.Sprintf("fairgate; hit; ttl=%d", ttl))
	} else {
		h.Set("Cache-Status", "fairgate; fwd=miss; stored")
	}
	if e.etag != "" && e.status == http.StatusOK && etagMatches(r.Header.Get("If-None-Match"), e.etag) {
		h.Del("Content-Length")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(e.body)))
	w.WriteHeader(e.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(e.body)
	}
}

func etagMatches(inm, etag string) bool {
	for _, t := range strings.Split(inm, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == strings.TrimPrefix(etag, "W/") {
			return true
		}
	}
	return false
}

// recorder buffers an upstream response up to limit bytes.
type recorder struct {
	header   http.Header
	status   int
	body     bytes.Buffer
	limit    int64
	overflow bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if int64(r.body.Len()+len(p)) > r.limit {
		r.overflow = true
		return 0, fmt.Errorf("response larger than the cache's %d-byte entry limit", r.limit)
	}
	return r.body.Write(p)
}

// breakerWriter streams a response through and remembers an upstream 429 or
// 503 with Retry-After, so the next requests for the path get it from memory.
type breakerWriter struct {
	http.ResponseWriter
	cache *responseCache
	key   string
	rec   *recorder
	ttl   time.Duration
}

func (b *breakerWriter) WriteHeader(status int) {
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		if ttl, ok := retryAfter(b.Header()); ok {
			b.rec = &recorder{header: b.Header().Clone(), status: status, limit: 64 << 10}
			b.ttl = ttl
		}
	}
	b.ResponseWriter.WriteHeader(status)
}

func (b *breakerWriter) Write(p []byte) (int, error) {
	if b.rec != nil {
		_, _ = b.rec.Write(p)
	}
	return b.ResponseWriter.Write(p)
}

// finish stores a recorded 429 or 503 once the upstream has answered.
func (b *breakerWriter) finish() {
	if b.rec == nil || b.rec.overflow {
		return
	}
	now := b.cache.now()
	e := &entry{status: b.rec.status, header: b.rec.header, body: b.rec.body.Bytes(), fresh: now.Add(b.ttl), stale: now.Add(b.ttl)}
	b.cache.store.SetWithTTL(b.key, e, int64(len(e.body)+512), b.ttl)
	b.cache.store.Wait()
	for until := now.Add(b.ttl).UnixNano(); ; {
		cur := b.cache.breakerUntil.Load()
		if cur >= until || b.cache.breakerUntil.CompareAndSwap(cur, until) {
			break
		}
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (b *breakerWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }
