// Package fairgate is a virtual waiting room. Importing it registers the
// Caddy modules (what `xcaddy build --with github.com/fairgate/fairgate`
// does); the code lives in admission, gateway, caddymodule and seats.
package fairgate

import (
	_ "github.com/fairgate/fairgate/caddymodule"
)
