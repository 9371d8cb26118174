package caddymodule

import (
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/fairgate/fairgate/gateway"
	"github.com/fairgate/fairgate/room"
)

// unmarshalLane reads one priority lane:
//
//	lane <name> {
//	    share <fraction>
//	    claim <key>=<value>
//	}
//
// The lane's rules (shares, names, claims) are checked with the rest of the
// config when it is provisioned.
func unmarshalLane(d *caddyfile.Dispenser, c *gateway.Config) error {
	var l room.Lane
	if !d.Args(&l.Name) {
		return d.ArgErr()
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch opt := d.Val(); opt {
		case "share":
			var s string
			if !d.Args(&s) || d.NextArg() {
				return d.ArgErr()
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return d.Errf("lane %s: share: %v", l.Name, err)
			}
			l.Share = f
		case "claim":
			if !d.Args(&l.Claim) || d.NextArg() {
				return d.ArgErr()
			}
		default:
			return d.Errf("unrecognized lane option %q", opt)
		}
	}
	c.Lanes = append(c.Lanes, l)
	return nil
}
