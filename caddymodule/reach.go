package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/fileserver"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/rewrite"

	"github.com/fairgate/fairgate/gateway"
)

// checkEndpointsRouted refuses a config in which the waiting page could not
// reach its room: a room placed under a matcher (`handle /a/* {
// waiting_room … }`, a route's matcher, a hand-written JSON route) whose
// endpoints under `prefix` that matcher does not cover, or whose endpoints
// another room with the same prefix answers first. The waiting page calls
// `<prefix>/token` from the page's host; if that request is routed
// elsewhere (the site, another handle block, another room), every visitor
// stays on "Getting your place in line…". The Caddyfile adapter gives a
// directive's own matcher a route for the prefix (see parseDirective); an
// enclosing block it cannot see, so this check runs on the config's routes.
//
// Only the matchers whose answer does not depend on the visitor — path,
// host, method — are evaluated; any other matcher may go either way, and
// the config is refused only when no way through the routes reaches the
// room under its prefix. A stripped path prefix (handle_path) is followed;
// any other rewrite on the way counts as possibly making it work. So the
// check never refuses a config that could work.
func checkEndpointsRouted(servers map[string]caddyhttp.RouteList, room, prefix string) error {
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		routes := servers[name]
		chains := chainsTo(routes, room, nil, false)
		for _, chain := range chains {
			req := endpointRequest(prefix, chain.sets)
			w := walker{req: req, room: room, prefix: prefix, budget: walkBudget}
			if w.routes(routes, 0, map[string]bool{}, func(map[string]bool) bool { return false }) {
				continue
			}
			if w.answeredBy != "" {
				return fmt.Errorf("waiting rooms %s and %s both serve their endpoints under prefix %s on server %s: room %s's waiting page would POST %s/token to room %s and strand every visitor; give one of them its own prefix: %s",
					w.answeredBy, room, prefix, name, room, prefix, w.answeredBy, prefixAdvice(room, prefix, chain, chains))
			}
			return fmt.Errorf("waiting room %s: its endpoints under prefix %s are not routed to it: the waiting page's POST %s/token would go elsewhere and strand every visitor; %s",
				room, prefix, prefix, prefixAdvice(room, prefix, chain, chains))
		}
	}
	return nil
}

// configRoutes is the routes of every server of the http app being
// provisioned, as far as the check needs them. A handler is provisioned in
// the middle of its app: the routes before it are provisioned, its own and
// those after it are still JSON. Both are read, so the check sees the whole
// config at provision time, and `caddy validate` refuses what `caddy run`
// would.
func configRoutes(ctx caddy.Context) (map[string]caddyhttp.RouteList, error) {
	app, err := ctx.AppIfConfigured("http")
	if errors.Is(err, caddy.ErrNotConfigured) {
		return nil, nil // handlers outside an http app: nothing routes to them
	}
	if err != nil {
		return nil, err
	}
	servers := map[string]caddyhttp.RouteList{}
	for name, srv := range app.(*caddyhttp.App).Servers {
		servers[name] = snapshot(ctx, srv.Routes)
	}
	return servers, nil
}

// snapshot copies routes with their matchers and handlers decoded: the
// provisioned ones as they are, the others from their JSON.
func snapshot(ctx caddy.Context, routes caddyhttp.RouteList) caddyhttp.RouteList {
	out := make(caddyhttp.RouteList, len(routes))
	for i, rt := range routes {
		out[i] = caddyhttp.Route{Group: rt.Group, Terminal: rt.Terminal, MatcherSets: rt.MatcherSets, Handlers: rt.Handlers}
		if rt.MatcherSetsRaw != nil {
			out[i].MatcherSets = rawMatchers(ctx, rt.MatcherSetsRaw)
		}
		if rt.HandlersRaw != nil {
			out[i].Handlers = rawHandlers(ctx, rt.HandlersRaw)
		}
	}
	return out
}

// decidedMatchers are the matchers the check evaluates.
var decidedMatchers = []string{"path", "host", "method", "path_regexp"}

// rawMatchers loads the matchers the check evaluates; any other stands as
// undecided. What fails to load is left to its own provisioning to report,
// as undecided meanwhile.
func rawMatchers(ctx caddy.Context, raw caddyhttp.RawMatcherSets) caddyhttp.MatcherSets {
	sets := make(caddyhttp.MatcherSets, 0, len(raw))
	for _, modules := range raw {
		set := caddyhttp.MatcherSet{}
		for name, js := range modules {
			m := any(undecided{})
			if slices.Contains(decidedMatchers, name) {
				if v, err := ctx.LoadModuleByID("http.matchers."+name, js); err == nil {
					m = v
				}
			}
			set = append(set, m)
		}
		sets = append(sets, set)
	}
	return sets
}

// undecided stands for a matcher the check does not evaluate.
type undecided struct{}

func (undecided) Match(*http.Request) bool { return true }

// passThrough stands for a handler the check does not know: it may pass
// the request on.
type passThrough struct{}

func (passThrough) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	return next.ServeHTTP(w, r)
}

// rawHandlers decodes what the check needs of handlers not provisioned
// yet. One that does not decode stands as passThrough: its own
// provisioning reports it.
func rawHandlers(ctx caddy.Context, raw []json.RawMessage) []caddyhttp.MiddlewareHandler {
	hs := make([]caddyhttp.MiddlewareHandler, 0, len(raw))
	for _, js := range raw {
		var kind struct {
			Handler string `json:"handler"`
		}
		var h caddyhttp.MiddlewareHandler = passThrough{}
		if err := json.Unmarshal(js, &kind); err == nil {
			if known, err := rawHandler(ctx, kind.Handler, js); err == nil {
				h = known
			}
		}
		hs = append(hs, h)
	}
	return hs
}

func rawHandler(ctx caddy.Context, kind string, js json.RawMessage) (caddyhttp.MiddlewareHandler, error) {
	switch kind {
	case "waiting_room":
		var cfg gateway.Config
		if err := json.Unmarshal(js, &cfg); err != nil {
			return nil, err
		}
		return &Handler{Config: cfg, room: cfg.RoomName()}, nil
	case "subroute":
		var sr caddyhttp.Subroute
		if err := json.Unmarshal(js, &sr); err != nil {
			return nil, err
		}
		return &caddyhttp.Subroute{Routes: snapshot(ctx, sr.Routes)}, nil
	case "rewrite":
		var rw rewrite.Rewrite
		err := json.Unmarshal(js, &rw)
		return &rw, err
	case "reverse_proxy":
		return &reverseproxy.Handler{}, nil
	case "static_response":
		return &caddyhttp.StaticResponse{}, nil
	case "error":
		return &caddyhttp.StaticError{}, nil
	case "file_server":
		return &fileserver.FileServer{}, nil
	}
	return passThrough{}, nil
}

// walkBudget bounds the search: a config with that many ways through its
// routes is not refused (the check errs on the side of running).
const walkBudget = 100_000

// chain is where a handler sits: the matcher sets of the routes enclosing
// it, outermost first, and whether a path prefix is stripped before it.
type chain struct {
	sets     []caddyhttp.MatcherSets
	stripped bool
}

// chainsTo returns the chain of each place a handler of room sits in routes.
func chainsTo(routes caddyhttp.RouteList, room string, outer []caddyhttp.MatcherSets, stripped bool) []chain {
	var found []chain
	strip := stripped // a strip applies to the routes after it too
	for _, rt := range routes {
		sets := append(outer[:len(outer):len(outer)], rt.MatcherSets)
		for _, mh := range rt.Handlers {
			switch h := mh.(type) {
			case *Handler:
				if h.room == room {
					found = append(found, chain{sets: sets, stripped: strip})
				}
			case *rewrite.Rewrite:
				strip = strip || h.StripPathPrefix != ""
			case *caddyhttp.Subroute:
				found = append(found, chainsTo(h.Routes, room, sets, strip)...)
			}
		}
	}
	return found
}

// endpointRequest is the waiting page's token call as it would arrive: a
// POST to the prefix, for a host the room's routes accept.
func endpointRequest(prefix string, chain []caddyhttp.MatcherSets) *http.Request {
	host := "localhost"
	func() {
		for _, sets := range chain {
			for _, set := range sets {
				for _, m := range set {
					if hosts, ok := asHosts(m); ok && len(hosts) > 0 {
						host = strings.ReplaceAll(hosts[0], "*", "x")
						return
					}
				}
			}
		}
	}()
	req := &http.Request{
		Method: http.MethodPost, Host: host, Header: http.Header{},
		URL: &url.URL{Scheme: "http", Host: host, Path: prefix + "/token"},
	}
	ctx := context.WithValue(context.Background(), caddy.ReplacerCtxKey, caddy.NewReplacer())
	ctx = context.WithValue(ctx, caddyhttp.VarsCtxKey, map[string]any{})
	return req.WithContext(ctx)
}

// prefixAdvice names the fix for the chain c of room: a prefix under a
// path matcher of the room's routes (other than its prefix's own) when
// there is one; handle instead of handle_path.
func prefixAdvice(room, prefix string, c chain, all []chain) string {
	if c.stripped {
		return "the route strips its path prefix (handle_path, uri strip_prefix) before the room, so no prefix can reach it: use handle, with a prefix under its path"
	}
	for _, c := range append([]chain{c}, all...) {
		for i := len(c.sets) - 1; i >= 0; i-- {
			for _, set := range c.sets[i] {
				for _, m := range set {
					if paths, ok := asPaths(m); ok && len(paths) > 0 && strings.HasSuffix(paths[0], "/*") && paths[0] != prefix+"/*" {
						return fmt.Sprintf("set room %s's prefix to a path its route covers (e.g. `prefix %s%s`), or route %s/* to the room", room, strings.TrimSuffix(paths[0], "*"), strings.TrimPrefix(prefix, "/"), prefix)
					}
				}
			}
		}
	}
	return fmt.Sprintf("set room %s's prefix to a path its route covers, or route %s/* to the room", room, prefix)
}

func asHosts(m any) (caddyhttp.MatchHost, bool) {
	switch v := m.(type) {
	case caddyhttp.MatchHost:
		return v, true
	case *caddyhttp.MatchHost:
		return *v, true
	}
	return nil, false
}

func asPaths(m any) (caddyhttp.MatchPath, bool) {
	switch v := m.(type) {
	case caddyhttp.MatchPath:
		return v, true
	case *caddyhttp.MatchPath:
		return *v, true
	}
	return nil, false
}

// tri is a matcher's answer when some matchers are not evaluated.
type tri int

const (
	no tri = iota
	maybe
	yes
)

// walker follows a request through routes as Caddy's compiled routes run
// it, exploring both ways where a matcher could go either way.
type walker struct {
	req    *http.Request
	room   string
	prefix string
	budget int
	// answeredBy is a room that took the call as its own on some way.
	answeredBy string
}

// routes runs routes[i:] with the route groups already taken, then k (what
// follows them). It reports whether some way through reaches the room.
func (w *walker) routes(routes caddyhttp.RouteList, i int, groups map[string]bool, k func(map[string]bool) bool) bool {
	if w.budget--; w.budget < 0 {
		return true
	}
	if i == len(routes) {
		return k(groups)
	}
	rt := routes[i]
	skip := func() bool { return w.routes(routes, i+1, groups, k) }
	if rt.Group != "" && groups[rt.Group] {
		return skip()
	}
	m := w.match(rt.MatcherSets)
	if m == no {
		return skip()
	}
	taken := groups
	if rt.Group != "" {
		taken = maps.Clone(groups)
		taken[rt.Group] = true
	}
	next := func(g map[string]bool) bool { return w.routes(routes, i+1, g, k) }
	if rt.Terminal {
		next = func(map[string]bool) bool { return false }
	}
	if w.handlers(rt.Handlers, 0, taken, next) {
		return true
	}
	return m == maybe && skip()
}

// handlers runs a route's handlers from j, then k.
func (w *walker) handlers(hs []caddyhttp.MiddlewareHandler, j int, groups map[string]bool, k func(map[string]bool) bool) bool {
	if j == len(hs) {
		return k(groups)
	}
	switch h := hs[j].(type) {
	case *Handler:
		if h.room == w.room {
			// The room takes the call as its own only under its prefix:
			// a stripped path (handle_path) reaches it as a page.
			return strings.HasPrefix(w.req.URL.Path, w.prefix+"/")
		}
		if strings.HasPrefix(w.req.URL.Path, h.EndpointPrefix()+"/") {
			w.answeredBy = h.room // another room answers the call
			return false
		}
	case *rewrite.Rewrite:
		if h.StripPathPrefix == "" || h.Method != "" || h.URI != "" || h.StripPathSuffix != "" ||
			len(h.URISubstring) > 0 || len(h.PathRegexp) > 0 || h.Query != nil {
			return true // a rewrite the check does not follow may make it work
		}
		path := w.req.URL.Path
		defer func() { w.req.URL.Path = path }()
		if len(path) >= len(h.StripPathPrefix) && strings.EqualFold(path[:len(h.StripPathPrefix)], h.StripPathPrefix) {
			w.req.URL.Path = path[len(h.StripPathPrefix):]
		}
	case *caddyhttp.Subroute:
		return w.routes(h.Routes, 0, groups, func(g map[string]bool) bool { return w.handlers(hs, j+1, g, k) })
	case *reverseproxy.Handler, *caddyhttp.StaticResponse, caddyhttp.StaticResponse,
		*caddyhttp.StaticError, caddyhttp.StaticError, *fileserver.FileServer:
		return false // these answer; nothing after them runs
	}
	return w.handlers(hs, j+1, groups, k)
}

// match is a route's matcher sets' answer: any set, all of its matchers.
func (w *walker) match(sets caddyhttp.MatcherSets) tri {
	if len(sets) == 0 {
		return yes
	}
	best := no
	for _, set := range sets {
		if a := w.matchSet(set); a > best {
			best = a
		}
	}
	return best
}

func (w *walker) matchSet(set caddyhttp.MatcherSet) tri {
	answer := yes
	for _, m := range set {
		switch m.(type) {
		case caddyhttp.MatchPath, *caddyhttp.MatchPath, caddyhttp.MatchHost, *caddyhttp.MatchHost,
			caddyhttp.MatchMethod, *caddyhttp.MatchMethod, *caddyhttp.MatchPathRE:
		default:
			answer = maybe
			continue
		}
		ok, err := matchOne(m, w.req)
		if err != nil {
			answer = maybe
			continue
		}
		if !ok {
			return no
		}
	}
	return answer
}

func matchOne(m any, r *http.Request) (bool, error) {
	switch v := m.(type) {
	case caddyhttp.RequestMatcherWithError:
		return v.MatchWithError(r)
	case caddyhttp.RequestMatcher:
		return v.Match(r), nil
	}
	return false, fmt.Errorf("not a matcher: %T", m)
}

// checkRoutes runs checkEndpointsRouted for room on the config being
// provisioned.
func checkRoutes(ctx caddy.Context, room, prefix string) error {
	servers, err := configRoutes(ctx)
	if err != nil {
		return fmt.Errorf("waiting room %s: reading the routes: %w", room, err)
	}
	return checkEndpointsRouted(servers, room, prefix)
}
