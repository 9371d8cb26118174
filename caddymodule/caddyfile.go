package caddymodule

import (
	"errors"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/gateway"
	"github.com/fairgate/fairgate/room"
)

func init() {
	httpcaddyfile.RegisterDirective("waiting_room", parseDirective)
	// Before basic_auth: the waiting room must stand in front of everything
	// that costs the site something — auth checks (forward_auth is a round
	// trip per request), routing blocks and every handler that responds —
	// while header, redir and rewrites still apply first.
	httpcaddyfile.RegisterDirectiveOrder("waiting_room", httpcaddyfile.Before, "basic_auth")
}

// parseDirective makes the routes of one waiting_room directive. With a
// matcher (`waiting_room /shop/* sale`) the room's endpoints under `prefix`
// get a route of their own as well: the waiting page calls them, and a
// matcher that does not cover them would send those calls to the site and
// strand every visitor on the waiting page.
func parseDirective(h httpcaddyfile.Helper) ([]httpcaddyfile.ConfigValue, error) {
	if !h.Next() {
		return nil, h.ArgErr()
	}
	matcherSet, err := h.ExtractMatcherSet()
	if err != nil {
		return nil, err
	}
	wr := new(Handler)
	if err := wr.UnmarshalCaddyfile(h.Dispenser); err != nil {
		return nil, err
	}
	routes := h.NewRoute(matcherSet, wr)
	if matcherSet == nil {
		return routes, nil
	}
	endpoints := caddy.ModuleMap{"path": caddyconfig.JSON(caddyhttp.MatchPath{wr.EndpointPrefix() + "/*"}, nil)}
	return append(h.NewRoute(endpoints, wr), routes...), nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	waiting_room [<matcher>] [<room>] {
//	    room            <name>
//	    state           open|queue|scheduled|paused|closed
//	    sale_start      <RFC 3339 time>
//	    rate            <admissions per second>
//	    sessions        <concurrent sessions> [<session length>]
//	    session_length  <duration>
//	    capacity        <active visitors>         # admit by what the site holds; rate is the ceiling
//	    active_window   <duration>                # with capacity; default 3m
//	    burst           <admissions>
//	    tau             <duration>
//	    fixed_speed
//	    queue_order     lottery|fifo
//	    luck_window     <duration>                # fifo only
//	    difficulty      <bits>
//	    keys_from       <placeholder or file>     # e.g. {env.FAIRGATE_KEYS}
//	    keys {
//	        signing  <kid>
//	        key      <kid> <secret>               # base64, env:NAME, file:/path or a placeholder
//	        lottery  <secret>
//	    }
//	    prefix          <path>                    # default /_fairgate; segments of letters, digits, -._~
//	    bypass {
//	        path        <patterns...>
//	        method      <methods...>
//	        cidr        <cidrs...>
//	        user_agent  <regexps...>
//	    }
//	    identity {
//	        cookie     <name>
//	        header     <name>
//	        algorithm  HS256|HS384|HS512|RS256|ES256|EdDSA
//	        key        <secret or PEM>
//	        issuer     <iss>
//	        audience   <aud>
//	        required
//	    }
//	    lane <name> {                             # repeatable; needs identity
//	        share  <fraction>
//	        claim  <key>=<value>
//	    }
//	    bind_ip
//	    bind_pass                                 # needs bind_ip
//	    admission_hook  <url> {
//	        timeout     <duration>
//	        on_failure  open|closed
//	    }
//	    cache <paths...> {
//	        ttl                     <duration>
//	        stale_while_revalidate  <duration>
//	        max_retry_after         <duration>
//	        max_bytes               <bytes>
//	        max_entry_bytes         <bytes>
//	    }
//	    waiting_status  <code>
//	    waiting_page    <file>                    # html/template, see docs/WAITING_PAGE.md
//	    language        <tag>                     # force en, de, fr, es, it, pt, nl, ja or ar
//	    closed_page     <file>
//	    sold_out_page   <file>
//	    token_ttl       <duration>
//	    backoff         <min> <max>
//	    ledger_size     <ids>                     # state_store memory only
//	    max_body_bytes  <bytes>
//	    state_store memory|bolt|dynamodb [{       # default: bolt in Caddy's data directory
//	        path            <file>                # bolt; default {data dir}/fairgate/rooms.db
//	        table           <name>                # dynamodb; default fairgate_rooms
//	        region          <aws region>          # dynamodb; default the AWS SDK's
//	        endpoint        <url>                 # dynamodb; e.g. DynamoDB Local
//	        node            <id>                  # default <hostname>-<pid>
//	        budget_block    <admissions>          # default 1
//	        poll            <duration>            # default 500ms; one value for every node
//	        call_timeout    <duration>            # default 2s
//	        on_unavailable  refuse|local          # default refuse
//	    }]
//	}
//
// Each option may be given once. Durations are Caddy's (`1d` works). Values
// wrong on their own (`state queu`, `difficulty 99`, a hook URL that is not
// http or https, `backoff 30s 2s`) are refused with the file and line. The
// client address is Caddy's (its `trusted_proxies` server option).
// `capacity` sizes the room by the visitors on the site (passes presented
// within `active_window`) instead of a fixed rate: the room admits at the
// rate that keeps them at the capacity, never above `rate`; it cannot go
// with `sessions`. An origin answer with the header Fairgate-End-Session
// ends the visitor's session (docs/OPERATIONS.md, "Sizing a room"). With a
// matcher, the room's endpoints under `prefix` get a route of their own;
// inside a `handle` or `route` block, `prefix` must be a path the block
// covers, or the config is refused (the waiting page could not reach them).
// A keys_from file is read at each load: after changing it, reload with
// `caddy reload --force`.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		h.Room = d.Val()
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	for d.NextBlock(0) {
		opt := d.Val()
		if seen[opt] && opt != "lane" { // the one repeatable option
			return d.Errf("waiting_room option %q given twice", opt)
		}
		seen[opt] = true
		if err := h.unmarshalOption(d); err != nil {
			return err
		}
		// A value wrong on its own is reported at its line.
		var bad *room.OptionError
		if err := h.Config.Validate(); errors.As(err, &bad) && optionOf[bad.Option] == opt {
			return d.Errf("%v", err)
		}
	}
	if err := h.Config.Validate(); err != nil {
		return d.Errf("waiting_room %s: %v", h.RoomName(), err)
	}
	return nil
}

// optionOf maps the options named by room.OptionError to the Caddyfile
// options that set them.
var optionOf = map[string]string{
	"room": "room", "state": "state", "sale_start": "sale_start", "rate": "rate", "burst": "burst",
	"difficulty": "difficulty", "prefix": "prefix", "waiting_status": "waiting_status",
	"trusted_proxies": "trusted_proxies", "admission_hook": "admission_hook", "on_failure": "admission_hook",
	"backoff": "backoff", "ledger_size": "ledger_size", "lanes": "lane", "state_store": "state_store",
	"bypass": "bypass", "cache": "cache", "capacity": "capacity",
}

// once refuses a sub-option given twice in one block.
type once map[string]bool

func (o once) check(d *caddyfile.Dispenser) error {
	if o[d.Val()] {
		return d.Errf("option %q given twice", d.Val())
	}
	o[d.Val()] = true
	return nil
}

func (h *Handler) unmarshalOption(d *caddyfile.Dispenser) error {
	c := &h.Config
	switch opt := d.Val(); opt {
	case "room":
		return oneString(d, &c.Room)
	case "state":
		return oneString(d, &c.State)
	case "sale_start":
		return oneString(d, &c.SaleStart)
	case "rate":
		if err := oneFloat(d, &c.Rate); err != nil {
			return err
		}
		// Checked here: in the JSON a rate of 0 reads as unset (the default).
		if err := admission.CheckRate(c.Rate); err != nil {
			return d.Errf("%v", err)
		}
		return nil
	case "burst":
		return oneFloat(d, &c.Burst)
	case "sessions":
		args := d.RemainingArgs()
		if len(args) < 1 || len(args) > 2 {
			return d.ArgErr()
		}
		n, err := strconv.Atoi(args[0])
		if err != nil {
			return d.Errf("sessions: %v", err)
		}
		c.Sessions = n
		if len(args) == 2 {
			return parseDuration(d, args[1], &c.SessionLength)
		}
		return nil
	case "session_length":
		return oneDuration(d, &c.SessionLength)
	case "capacity":
		if err := oneInt(d, &c.Capacity); err != nil {
			return err
		}
		// Checked here: in the JSON a capacity of 0 reads as unset.
		if c.Capacity <= 0 {
			return d.Errf("capacity %d: must be a positive number of active visitors", c.Capacity)
		}
		return nil
	case "active_window":
		return oneDuration(d, &c.ActiveWindow)
	case "tau":
		return oneDuration(d, &c.Tau)
	case "fixed_speed":
		c.FixedSpeed = true
		return noArgs(d)
	case "queue_order":
		return oneString(d, &c.QueueOrder)
	case "luck_window":
		return oneDuration(d, &c.LuckWindow)
	case "difficulty":
		var bits int
		if err := oneInt(d, &bits); err != nil {
			return err
		}
		c.Difficulty = &bits
		return nil
	case "keys_from":
		return oneString(d, &h.KeysFrom)
	case "keys":
		return h.unmarshalKeys(d)
	case "prefix":
		return oneString(d, &c.Prefix)
	case "bypass":
		return unmarshalBypass(d, &c.Bypass)
	case "identity":
		c.Identity = &gateway.Identity{}
		return unmarshalIdentity(d, c.Identity)
	case "lane":
		return unmarshalLane(d, c)
	case "bind_ip":
		c.BindIP = true
		return noArgs(d)
	case "bind_pass":
		c.BindPass = true
		return noArgs(d)
	case "trusted_proxies":
		return d.Errf("%v", errTrustedProxies)
	case "admission_hook":
		c.Hook = &gateway.Hook{}
		return unmarshalHook(d, c.Hook)
	case "cache":
		c.Cache = &gateway.Cache{}
		return unmarshalCache(d, c.Cache)
	case "waiting_status":
		return oneInt(d, &c.WaitingStatus)
	case "waiting_page":
		return oneString(d, &c.WaitingPage)
	case "language":
		return oneString(d, &c.Language)
	case "closed_page":
		return oneString(d, &c.ClosedPage)
	case "sold_out_page":
		return oneString(d, &c.SoldOutPage)
	case "token_ttl":
		return oneDuration(d, &c.TokenTTL)
	case "backoff":
		args := d.RemainingArgs()
		if len(args) != 2 {
			return d.ArgErr()
		}
		if err := parseDuration(d, args[0], &c.MinBackoff); err != nil {
			return err
		}
		return parseDuration(d, args[1], &c.MaxBackoff)
	case "ledger_size":
		return oneInt(d, &c.LedgerSize)
	case "max_body_bytes":
		var n int
		if err := oneInt(d, &n); err != nil {
			return err
		}
		c.MaxBodyBytes = int64(n)
		return nil
	case "state_store":
		c.StateStore = &room.StateStore{}
		return unmarshalStateStore(d, c.StateStore)
	default:
		return d.Errf("unrecognized waiting_room option %q", opt)
	}
}

func (h *Handler) unmarshalKeys(d *caddyfile.Dispenser) error {
	k := &h.Keys
	if k.Keys == nil {
		k.Keys = map[string]string{}
	}
	seen := once{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		if d.Val() != "key" {
			if err := seen.check(d); err != nil {
				return err
			}
		}
		switch d.Val() {
		case "signing":
			if err := oneString(d, &k.Signing); err != nil {
				return err
			}
		case "key":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.ArgErr()
			}
			if _, dup := k.Keys[args[0]]; dup {
				return d.Errf("key %q given twice", args[0])
			}
			k.Keys[args[0]] = args[1]
		case "lottery":
			if err := oneString(d, &k.Lottery); err != nil {
				return err
			}
		default:
			return d.Errf("unrecognized keys option %q", d.Val())
		}
	}
	return nil
}

func unmarshalBypass(d *caddyfile.Dispenser, b *gateway.Bypass) error {
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		args := d.RemainingArgs()
		if len(args) == 0 {
			return d.ArgErr()
		}
		switch opt {
		case "path":
			b.Paths = append(b.Paths, args...)
		case "method":
			b.Methods = append(b.Methods, args...)
		case "cidr":
			b.CIDRs = append(b.CIDRs, args...)
		case "user_agent":
			b.UserAgents = append(b.UserAgents, args...)
		default:
			return d.Errf("unrecognized bypass option %q", opt)
		}
	}
	return nil
}

func unmarshalIdentity(d *caddyfile.Dispenser, id *gateway.Identity) error {
	return options(d, "identity", func(name string) error {
		switch name {
		case "cookie":
			return oneString(d, &id.Cookie)
		case "header":
			return oneString(d, &id.Header)
		case "algorithm":
			return oneString(d, &id.Algorithm)
		case "key":
			return oneString(d, &id.Key)
		case "issuer":
			return oneString(d, &id.Issuer)
		case "audience":
			return oneString(d, &id.Audience)
		case "required":
			id.Required = true
			return noArgs(d)
		}
		return errUnknownOption
	})
}

func unmarshalHook(d *caddyfile.Dispenser, hk *gateway.Hook) error {
	if err := oneString(d, &hk.URL); err != nil {
		return err
	}
	return options(d, "admission_hook", func(name string) error {
		switch name {
		case "timeout":
			return oneDuration(d, &hk.Timeout)
		case "on_failure":
			return oneString(d, &hk.OnFailure)
		}
		return errUnknownOption
	})
}

func unmarshalCache(d *caddyfile.Dispenser, c *gateway.Cache) error {
	c.Paths = d.RemainingArgs()
	if len(c.Paths) == 0 {
		return d.ArgErr()
	}
	return options(d, "cache", func(name string) error {
		var n int
		switch name {
		case "ttl":
			return oneDuration(d, &c.TTL)
		case "stale_while_revalidate":
			return oneDuration(d, &c.StaleWhileRevalidate)
		case "max_retry_after":
			return oneDuration(d, &c.MaxRetryAfter)
		case "max_bytes":
			err := oneInt(d, &n)
			c.MaxBytes = int64(n)
			return err
		case "max_entry_bytes":
			err := oneInt(d, &n)
			c.MaxEntryBytes = int64(n)
			return err
		}
		return errUnknownOption
	})
}

// errUnknownOption is what an options callback returns for a name it does
// not know.
var errUnknownOption = errors.New("unrecognized option")

// options parses the block at d, calling option with each option's name,
// the dispenser on it; an option given twice is refused, and one option
// does not know (errUnknownOption) is refused as unrecognized in block.
func options(d *caddyfile.Dispenser, block string, option func(name string) error) error {
	seen := once{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		if err := seen.check(d); err != nil {
			return err
		}
		if err := option(d.Val()); err != nil {
			if errors.Is(err, errUnknownOption) {
				return d.Errf("unrecognized %s option %q", block, d.Val())
			}
			return err
		}
	}
	return nil
}

func unmarshalStateStore(d *caddyfile.Dispenser, st *room.StateStore) error {
	if err := oneString(d, &st.Type); err != nil {
		return err
	}
	return options(d, "state_store", func(name string) error {
		switch name {
		case "path":
			return oneString(d, &st.Path)
		case "table":
			return oneString(d, &st.Table)
		case "region":
			return oneString(d, &st.Region)
		case "endpoint":
			return oneString(d, &st.Endpoint)
		case "node":
			return oneString(d, &st.Node)
		case "budget_block":
			var n int
			err := oneInt(d, &n)
			st.BudgetBlock = int64(n)
			return err
		case "poll":
			return oneDuration(d, &st.Poll)
		case "call_timeout":
			return oneDuration(d, &st.CallTimeout)
		case "on_unavailable":
			return oneString(d, &st.OnUnavailable)
		}
		return errUnknownOption
	})
}

func noArgs(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

func oneString(d *caddyfile.Dispenser, dst *string) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	*dst = d.Val()
	return noArgs(d)
}

func oneInt(d *caddyfile.Dispenser, dst *int) error {
	var s string
	if err := oneString(d, &s); err != nil {
		return err
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return d.Errf("%s: %v", d.Val(), err)
	}
	*dst = n
	return nil
}

func oneFloat(d *caddyfile.Dispenser, dst *float64) error {
	var s string
	if err := oneString(d, &s); err != nil {
		return err
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return d.Errf("%s: %v", s, err)
	}
	*dst = f
	return nil
}

func oneDuration(d *caddyfile.Dispenser, dst *gateway.Duration) error {
	var s string
	if err := oneString(d, &s); err != nil {
		return err
	}
	return parseDuration(d, s, dst)
}

// parseDuration reads a duration as Caddy does: Go's units and `d` for days.
func parseDuration(d *caddyfile.Dispenser, s string, dst *gateway.Duration) error {
	v, err := caddy.ParseDuration(s)
	if err != nil {
		return d.Errf("duration %q: %v", s, err)
	}
	*dst = gateway.Duration(v)
	return nil
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Handler)(nil)
