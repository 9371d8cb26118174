package gateway

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/fairgate/fairgate/gateway/pages"
	"github.com/fairgate/fairgate/room"
)

// Config is one waiting room in front of one site. Its JSON is the JSON of
// the Caddy module `http.handlers.waiting_room` and of `fairgate proxy
// --config`: one struct for both front doors.
type Config struct {
	// Config is the room's part: how it queues and admits, and where its
	// state lives. Embedded, so its fields sit flat in the JSON.
	room.Config
	// Prefix is where the gateway's own endpoints live: a path of segments
	// made of letters, digits and -._~ . Default: `/_fairgate`
	// (defaultPrefix).
	Prefix string `json:"prefix,omitempty"`
	// Bypass lets requests through without a pass.
	Bypass Bypass `json:"bypass,omitzero"`
	// Identity, when set, verifies the site's own login JWT and ties
	// waiting tokens and passes to its subject. The room's lanes need it.
	Identity *Identity `json:"identity,omitempty"`
	// BindIP ties waiting tokens to a keyed hash of the client's address.
	BindIP bool `json:"bind_ip,omitempty"`
	// BindPass holds a pass to the address it was admitted from (it needs
	// BindIP): a pass copied to another client is refused there. The cost
	// falls on mobile visitors, whose address changes between networks (Wi-Fi
	// to cellular, carrier NAT pools): they lose their pass and queue again.
	// Off by default. With Identity, passes are always held to the login's
	// subject, which survives address changes.
	BindPass bool `json:"bind_pass,omitempty"`
	// TrustedProxies are the CIDRs whose X-Forwarded-For is believed when
	// finding the client's address (`fairgate proxy` only: in Caddy the
	// client address is Caddy's, by its own trusted_proxies). Default: none.
	TrustedProxies []string `json:"trusted_proxies,omitempty"`
	// Hook is called when a visitor is admitted.
	Hook *Hook `json:"admission_hook,omitempty"`
	// Cache serves configured read paths from memory.
	Cache *Cache `json:"cache,omitempty"`
	// WaitingStatus is the status of the waiting page. Default: 200
	// (defaultWaitingStatus).
	WaitingStatus int `json:"waiting_status,omitempty"`
	// WaitingPage is an html/template file for the waiting page, executed
	// with pages.PageData (docs/WAITING_PAGE.md). It must include {{.Script}}. It
	// is parsed and executed against sample data in every language when the
	// config loads, so a broken template fails the load with its file and
	// line. Default: the built-in page.
	WaitingPage string `json:"waiting_page,omitempty"`
	// Language forces the language of the visitor pages (`en`, `de`, `fr`,
	// `es`, `it`, `pt`, `nl`, `ja`, `ar`). Default: each visitor's
	// Accept-Language, English when none of these matches.
	Language string `json:"language,omitempty"`
	// ClosedPage is an HTML file shown while the room is closed. Default:
	// built in.
	ClosedPage string `json:"closed_page,omitempty"`
	// SoldOutPage is an HTML file shown while the room is closed with
	// reason `sold_out` (admin API). Default: built in.
	SoldOutPage string `json:"sold_out_page,omitempty"`
	// MaxBodyBytes bounds request bodies of the gateway's endpoints.
	// Default: 4096 (defaultMaxBodyBytes).
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
}

// Bypass rules let matching requests through without a pass. A request
// bypasses when any rule matches.
type Bypass struct {
	// Paths are path prefixes on segment boundaries (`/healthz` matches
	// `/healthz` and `/healthz/live`, not `/healthzX`), or globs with `*`
	// (one segment, never `.` or `..`) and a trailing `/**` (any depth).
	// They match the path the origin will serve: percent-decoded, duplicate
	// slashes merged, case kept. A path with a dot segment is refused (400)
	// and one with an encoded slash or a backslash never bypasses; see
	// docs/SECURITY.md.
	Paths []string `json:"paths,omitempty"`
	// Methods, e.g. `OPTIONS`.
	Methods []string `json:"methods,omitempty"`
	// CIDRs of clients, e.g. health checkers.
	CIDRs []string `json:"cidrs,omitempty"`
	// UserAgents are regular expressions matched against User-Agent.
	UserAgents []string `json:"user_agents,omitempty"`
}

// Identity verifies the site's login JWT.
type Identity struct {
	// Cookie names the cookie holding the JWT. Cookie or Header is
	// required; with both, the cookie is read first.
	Cookie string `json:"cookie,omitempty"`
	// Header names the header holding it (`Authorization` takes a Bearer
	// token). Default: none (see Cookie).
	Header string `json:"header,omitempty"`
	// Algorithm is the JWT algorithm: HS256, HS384, HS512, RS256, ES256 or
	// EdDSA. Required.
	Algorithm string `json:"algorithm"`
	// Key is the HMAC secret (base64) or the PEM public key; `env:` and
	// `file:` work as for Keys. Required.
	Key string `json:"key"`
	// Issuer, when set, must equal the JWT's `iss`. Default: not checked.
	Issuer string `json:"issuer,omitempty"`
	// Audience, when set, must be in the JWT's `aud`. Default: not checked.
	Audience string `json:"audience,omitempty"`
	// Required refuses visitors without a valid login (401) instead of
	// letting them wait anonymously. Default: false.
	Required bool `json:"required,omitempty"`
}

// Hook is called with the pass when a visitor is admitted. A 2xx answer
// admits, and a `session` string in its JSON body goes into the pass as
// `ses`; 409 or 429 keeps the visitor waiting without penalty; anything
// else, or no answer within Timeout, follows OnFailure. Each call carries
// the pass id as its `Idempotency-Key`: the same pass delivered again (its
// first answer was lost) calls the hook with the same key, and a hook that
// replays its first answer for it (the seat service does) keeps one
// session per pass.
type Hook struct {
	// URL receives a POST per admission: an absolute http or https URL.
	// In Caddy it may hold request placeholders ({http.request.host}).
	// Required.
	URL string `json:"url"`
	// Timeout of one call. Default: 3s (defaultHookTimeout).
	Timeout Duration `json:"timeout,omitempty"`
	// OnFailure is `closed` (keep the visitor waiting; default) or `open`
	// (admit without a session).
	OnFailure string `json:"on_failure,omitempty"`
}

// Cache serves read paths from memory.
type Cache struct {
	// Paths as in Bypass.Paths. Only GET and HEAD are cached, and never for
	// a request with an Authorization header. Entries are filled with the
	// request stripped of credentials (Cookie, Authorization, fairgate's
	// headers): a cached path serves every visitor what an anonymous one
	// gets. Default: none (nothing is cached).
	Paths []string `json:"paths"`
	// TTL when the upstream sends no `s-maxage`/`max-age`. Default: 2s
	// (defaultCacheTTL).
	TTL Duration `json:"ttl,omitempty"`
	// StaleWhileRevalidate is how long an expired entry is served while one
	// request refreshes it. Default: 10s (defaultCacheStale).
	StaleWhileRevalidate Duration `json:"stale_while_revalidate,omitempty"`
	// MaxRetryAfter bounds how long an upstream 429 or 503 with
	// Retry-After is served from memory on these paths (it is kept like any
	// other answer that is not one visitor's). Default: 10s
	// (defaultCacheMaxRetryAfter).
	MaxRetryAfter Duration `json:"max_retry_after,omitempty"`
	// MaxBytes bounds the memory of cached bodies. Default: 64 MiB
	// (defaultCacheMaxBytes).
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// MaxEntryBytes bounds one cached body. Default: 1 MiB
	// (defaultCacheMaxEntryBytes).
	MaxEntryBytes int64 `json:"max_entry_bytes,omitempty"`
}

// Duration is a time.Duration that reads from JSON as a string such as
// "1m30s" or a number of nanoseconds, as Caddy's durations do.
type Duration = room.Duration

// Defaults of the gateway's own settings.
const (
	// defaultWaitingStatus is the waiting page's status: a page, not an error.
	defaultWaitingStatus = 200
	// defaultMaxBodyBytes bounds an endpoint's request body: a ticket or a
	// proof of work is far smaller.
	defaultMaxBodyBytes = 4096
	// defaultHookTimeout bounds one admission hook call.
	defaultHookTimeout = 3 * time.Second
	// defaultHookOnFailure keeps the visitor waiting when the hook fails.
	defaultHookOnFailure = "closed"
	// defaultCacheTTL, defaultCacheStale and defaultCacheMaxRetryAfter are
	// Cache's TTL, StaleWhileRevalidate and MaxRetryAfter.
	defaultCacheTTL           = 2 * time.Second
	defaultCacheStale         = 10 * time.Second
	defaultCacheMaxRetryAfter = 10 * time.Second
	// defaultCacheMaxBytes and defaultCacheMaxEntryBytes bound the memory
	// of cached bodies and one cached body.
	defaultCacheMaxBytes      = 64 << 20
	defaultCacheMaxEntryBytes = 1 << 20
)

// defaultPrefix is where the gateway's endpoints live unless Prefix says.
const defaultPrefix = "/_fairgate"

// validPrefix is the rule for Prefix: a path of plain segments, which the
// gateway's routes (ServeMux patterns) are made from.
func validPrefix(p string) bool {
	rest, ok := strings.CutPrefix(p, "/")
	if !ok {
		return false
	}
	for seg := range strings.SplitSeq(rest, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsFunc(seg, func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-._~", r))
		}) {
			return false
		}
	}
	return true
}

// EndpointPrefix is the path the gateway's own endpoints live under.
func (c Config) EndpointPrefix() string {
	if c.Prefix == "" {
		return defaultPrefix
	}
	return c.Prefix
}

// Validate checks the config as the gateway will read it, without loading
// keys or files.
func (c Config) Validate() error {
	_, err := c.settle()
	return err
}

// settings is a Config with defaults applied and values parsed: the
// room's by room.Settings, the gateway's here.
type settings struct {
	Config
	// room is the room's part, settled; Config.Config holds its values.
	room     room.Settings
	trusted  []netip.Prefix
	language *pages.Locale // the configured language, or nil for Accept-Language
}

// settle fills in defaults and checks the config: the room's part first,
// then the gateway's.
func (c Config) settle() (settings, error) {
	rs, err := c.Config.Settle()
	if err != nil {
		return settings{}, err
	}
	s := settings{Config: c, room: rs}
	s.Config.Config = rs.Config
	s.Prefix = c.EndpointPrefix()
	if !validPrefix(s.Prefix) {
		return s, room.OptionErr("prefix", "%q: must be a path such as /_fairgate: segments of letters, digits and -._~, not . or ..", s.Prefix)
	}
	if s.BindPass && !s.BindIP {
		return s, errors.New("bind_pass needs bind_ip: a pass carries its waiting token's address binding")
	}
	if s.WaitingStatus == 0 {
		s.WaitingStatus = defaultWaitingStatus
	}
	if s.WaitingStatus < 200 || s.WaitingStatus > 599 {
		return s, room.OptionErr("waiting_status", "%d is not an HTTP status", s.WaitingStatus)
	}
	if s.Language != "" {
		if s.language, err = pages.Named(s.Language); err != nil {
			return s, &room.OptionError{Option: "language", Err: err}
		}
	}
	// Not an OptionError: identity may come after the lanes.
	if len(s.Lanes) > 0 && s.Identity == nil {
		return s, errors.New("lanes need identity: a lane is granted by a claim of the verified login")
	}
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = defaultMaxBodyBytes
	}
	for _, cidr := range s.TrustedProxies {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return s, &room.OptionError{Option: "trusted_proxies", Err: err}
		}
		s.trusted = append(s.trusted, p)
	}
	if err := checkBypass(s.Bypass); err != nil {
		return s, &room.OptionError{Option: "bypass", Err: err}
	}
	if s.Cache != nil {
		if _, err := newMatcher(s.Cache.Paths); err != nil {
			return s, &room.OptionError{Option: "cache", Err: err}
		}
	}
	if err := settleHook(s.Hook); err != nil {
		return s, err
	}
	settleCache(s.Cache)
	return s, nil
}

// settleHook checks the admission hook and applies its defaults.
func settleHook(h *Hook) error {
	if h == nil {
		return nil
	}
	if err := checkHookURL(h.URL); err != nil {
		return &room.OptionError{Option: "admission_hook", Err: err}
	}
	room.SetDuration(&h.Timeout, defaultHookTimeout)
	switch h.OnFailure {
	case "":
		h.OnFailure = defaultHookOnFailure
	case "open", "closed":
	default:
		return room.OptionErr("on_failure", "%q: want open or closed", h.OnFailure)
	}
	return nil
}

// settleCache applies the response cache's defaults.
func settleCache(c *Cache) {
	if c == nil {
		return
	}
	room.SetDuration(&c.TTL, defaultCacheTTL)
	room.SetDuration(&c.StaleWhileRevalidate, defaultCacheStale)
	room.SetDuration(&c.MaxRetryAfter, defaultCacheMaxRetryAfter)
	if c.MaxBytes == 0 {
		c.MaxBytes = defaultCacheMaxBytes
	}
	if c.MaxEntryBytes == 0 {
		c.MaxEntryBytes = defaultCacheMaxEntryBytes
	}
}

// checkBypass compiles the bypass rules as the gateway will.
func checkBypass(b Bypass) error {
	if _, err := newMatcher(b.Paths); err != nil {
		return fmt.Errorf("paths: %w", err)
	}
	for _, ua := range b.UserAgents {
		if _, err := newRegexpMatcher(ua); err != nil {
			return fmt.Errorf("user_agents: %w", err)
		}
	}
	for _, c := range b.CIDRs {
		if _, err := netip.ParsePrefix(c); err != nil {
			return fmt.Errorf("cidrs: %w", err)
		}
	}
	return nil
}

// placeholder is a Caddy placeholder such as {http.request.host}.
var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

// checkHookURL accepts an absolute http or https URL; placeholders (which
// the Caddy module fills per request) stand in for any text.
func checkHookURL(raw string) error {
	u, err := url.Parse(placeholder.ReplaceAllString(raw, "placeholder"))
	if err != nil {
		return fmt.Errorf("url %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q: want an absolute http:// or https:// URL", raw)
	}
	return nil
}
