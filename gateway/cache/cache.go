// Package cache is the gateway's response cache: configured read paths
// served from memory to every visitor, and an upstream 429 or 503 kept for
// its Retry-After, so a struggling upstream is not asked again meanwhile.
package cache

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/fairgate/fairgate/gateway/compress"
	"github.com/fairgate/fairgate/internal/etag"
)

// Cache serves configured read paths from memory (ristretto). An
// entry is fresh for its TTL (the upstream's s-maxage or max-age, else the
// configured TTL), then served stale for StaleWhileRevalidate while one
// request refreshes it; concurrent misses of a key wait for one upstream
// read (singleflight).
//
// One entry serves every visitor, so it is filled with a request stripped of
// credentials (see anonymous) and an answer that sets a cookie, is private
// or no-store, or varies by anything but the encoding is never stored. An
// upstream 429 or 503 with Retry-After is an answer like any other on these
// paths: stored for at most MaxRetryAfter. Paths that are not configured are
// never served from memory.
type Cache struct {
	match    func(*http.Request) bool
	strip    func(http.Header)
	ttl, swr time.Duration
	maxRetry time.Duration
	maxEntry int64
	store    *ristretto.Cache[string, *entry]
	requests *prometheus.CounterVec
	now      func() time.Time
	flight   singleflight.Group
}

// Config is what a Cache is built from: the gateway's cache options,
// settled, and what it shares with the gateway.
type Config struct {
	// Match says whether a request is for a configured path.
	Match func(*http.Request) bool
	// Strip removes the client-sent headers in fairgate's namespace from a
	// request that fills an entry (see anonymous).
	Strip func(http.Header)
	// TTL is the lifetime of a 200 without s-maxage or max-age;
	// StaleWhileRevalidate how long it is served stale after; MaxRetryAfter
	// the longest a 429 or 503 is kept.
	TTL, StaleWhileRevalidate, MaxRetryAfter time.Duration
	// MaxBytes bounds the store, MaxEntryBytes one answer.
	MaxBytes, MaxEntryBytes int64
	// Requests counts cacheable requests by cache status (label "status").
	Requests *prometheus.CounterVec
	Now      func() time.Time
}

type entry struct {
	status int
	header http.Header
	body   []byte
	enc    compress.Body // body compressed, when stored and worth it
	etag   string
	fresh  time.Time // fresh until
	stale  time.Time // may be served stale until
	stored bool      // false: the answer of one fill, not to be shared
}

// New builds a cache; Close releases it.
func New(cfg Config) (*Cache, error) {
	store, err := ristretto.NewCache(&ristretto.Config[string, *entry]{
		NumCounters: 100_000, MaxCost: cfg.MaxBytes, BufferItems: 64,
	})
	if err != nil {
		return nil, err
	}
	return &Cache{
		match: cfg.Match, strip: cfg.Strip, ttl: cfg.TTL, swr: cfg.StaleWhileRevalidate,
		maxRetry: cfg.MaxRetryAfter, maxEntry: cfg.MaxEntryBytes, store: store, requests: cfg.Requests, now: cfg.Now,
	}, nil
}

// Close stops the store.
func (c *Cache) Close() { c.store.Close() }

// Serve answers r from memory when it may, else from next (storing what
// may be stored).
func (c *Cache) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if !c.cacheable(r) {
		next.ServeHTTP(w, r)
		return
	}
	now := c.now()
	key := r.Host + " " + r.URL.RequestURI()
	if e, ok := c.store.Get(key); ok && now.Before(e.stale) {
		if now.Before(e.fresh) {
			c.requests.WithLabelValues(hitLabel(e)).Inc()
		} else {
			c.requests.WithLabelValues("stale").Inc()
			c.refresh(key, r, next)
		}
		c.write(w, r, e, now, "hit")
		return
	}
	leader := false
	fill := c.flight.DoChan(key, func() (any, error) {
		leader = true
		// Others wait on this load: it must not end with the leader's connection.
		return c.load(key, c.anonymous(r), next), nil
	})
	var e *entry
	select {
	case res := <-fill:
		e = res.Val.(*entry)
	case <-r.Context().Done():
		return
	}
	if !leader && !e.stored {
		// The answer was for the leader alone (it set a cookie, say): ask
		// the upstream for this visitor's own.
		c.requests.WithLabelValues("uncacheable").Inc()
		next.ServeHTTP(w, r)
		return
	}
	label := "miss"
	if !leader {
		label = "coalesced"
	}
	c.requests.WithLabelValues(label).Inc()
	c.write(w, r, e, c.now(), "fwd=miss")
}

func hitLabel(e *entry) string {
	if e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable {
		return "breaker"
	}
	return "hit"
}

// cacheable: a configured path, asked without an Authorization header (an
// API client's answer is its own).
func (c *Cache) cacheable(r *http.Request) bool {
	return c.match(r) && r.Header.Get("Authorization") == ""
}

// credentialHeaders are what make a request one visitor's. Any header in
// fairgate's namespace (the pass) goes too, see Config.Strip.
var credentialHeaders = []string{"Cookie", "Authorization", "Proxy-Authorization"}

// anonymous is r as a visitor without credentials would send it, detached
// from r's connection: what fills an entry every visitor is served.
func (c *Cache) anonymous(r *http.Request) *http.Request {
	up := r.Clone(context.WithoutCancel(r.Context()))
	for _, h := range credentialHeaders {
		up.Header.Del(h)
	}
	c.strip(up.Header)
	return up
}

// refresh reloads a stale key in the background, unless a load is under way.
func (c *Cache) refresh(key string, r *http.Request, next http.Handler) {
	up := c.anonymous(r)
	c.flight.DoChan(key, func() (any, error) { return c.load(key, up, next), nil })
}

// load asks the upstream and stores what may be stored.
func (c *Cache) load(key string, r *http.Request, next http.Handler) *entry {
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
			e.etag = etag.Of(e.body)
		}
		e.fresh = now.Add(ttl)
		e.stale = e.fresh
		if e.status == http.StatusOK {
			e.stale = e.fresh.Add(c.swr)
		}
		e.stored = true
		e.enc = compress.Plain(e.body)
		if compress.Compressible(e.status, e.header) {
			e.enc = compress.Precompress(e.body, false)
		}
		cost := e.enc.Size() + 512 // the body is in e.enc as it is
		c.store.SetWithTTL(key, e, int64(cost), e.stale.Sub(now))
		c.store.Wait()
	}
	return e
}

// lifetime is how long a response may be kept: 200s per s-maxage, max-age
// or the default TTL; 429 and 503 per Retry-After (seconds), at most
// MaxRetryAfter. Private,
// no-store and cookie-setting answers are not kept.
func (c *Cache) lifetime(rec *recorder) (time.Duration, bool) {
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
		d, ok := retryAfter(rec.header)
		return min(d, c.maxRetry), ok
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
	const day = 24 * 3600 // keeps the product from overflowing
	return time.Duration(min(n, day)) * time.Second, true
}

// write serves an entry in the encoding r prefers among those kept,
// answering 304 to a matching If-None-Match. A compressed body has its own
// ETag (the entry's with -gzip or -zstd, as Caddy's encode does).
func (c *Cache) write(w http.ResponseWriter, r *http.Request, e *entry, now time.Time, how string) {
	h := w.Header()
	for k, v := range e.header {
		h[k] = slices.Clone(v) // the entry's are shared; Vary may grow
	}
	body, enc := e.body, compress.Identity
	if e.enc.Compressed() {
		body, enc = e.enc.Pick(r)
		compress.AddVary(h, "Accept-Encoding")
	}
	etag := encodedETag(e.etag, enc)
	if etag != "" {
		h.Set("ETag", etag)
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
	if etag != "" && e.status == http.StatusOK && etagMatches(r.Header.Get("If-None-Match"), etag) {
		h.Del("Content-Length")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if enc != compress.Identity {
		h.Set("Content-Encoding", enc.String())
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// encodedETag is the ETag of a body in encoding enc: the identity's with
// the coding's name appended inside the quotes.
func encodedETag(etag string, enc compress.Encoding) string {
	if etag == "" || enc == compress.Identity || !strings.HasSuffix(etag, `"`) {
		return etag
	}
	return strings.TrimSuffix(etag, `"`) + "-" + enc.String() + `"`
}

// etagMatches is the If-None-Match rule of every fairgate answer.
var etagMatches = etag.Matches

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
