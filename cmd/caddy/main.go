// Command caddy is Caddy with fairgate's modules compiled in: the same
// binary `xcaddy build --with github.com/fairgate/fairgate` produces.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/fairgate/fairgate/caddymodule"
)

func main() {
	caddycmd.Main()
}
