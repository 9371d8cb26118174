package caddymodule

import (
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestCaddyfileLaneErrors(t *testing.T) {
	for _, input := range []string{
		"waiting_room {\n lane\n}",
		"waiting_room {\n lane a b\n}",
		"waiting_room {\n lane vip {\n share\n }\n}",
		"waiting_room {\n lane vip {\n share lots\n }\n}",
		"waiting_room {\n lane vip {\n share 0.1 0.2\n }\n}",
		"waiting_room {\n lane vip {\n claim\n }\n}",
		"waiting_room {\n lane vip {\n claim tier vip\n }\n}",
		"waiting_room {\n lane vip {\n priority 1\n }\n}",
		// Checked with the config: a share out of range, at the lane's line.
		"waiting_room {\n lane vip {\n share 1.5\n claim tier=vip\n }\n}",
		"waiting_room {\n lane vip {\n share 0.2\n claim tier=vip\n }\n}", // no identity
	} {
		h := new(Handler)
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err == nil {
			t.Errorf("accepted %q", input)
		}
	}
}
