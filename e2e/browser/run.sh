#!/usr/bin/env bash
# The demo in a real browser: builds fairgate, starts `fairgate demo` on
# loopback, two `fairgate proxy` rooms in front of it with the example
# templates of docs/examples and a third with a priority lane, then runs
# demo.test.mjs and page.test.mjs with Debian chromium (installed by
# .ci/run). Screenshots go to $SCREENSHOTS (printed at the end).
set -euo pipefail
cd "$(dirname "$0")/../.."
export SCREENSHOTS=${SCREENSHOTS:-$(pwd)/e2e/browser/screenshots}
W=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT

(cd e2e/browser && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
go build -o "$W/fairgate" ./cmd/fairgate
export XDG_CONFIG_HOME="$W/config" XDG_DATA_HOME="$W/data"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
site=$(port) admin=$(port)
operator_token=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
"$W/fairgate" demo --listen "127.0.0.1:$site" --admin "127.0.0.1:$admin" --rate 20 --tau 2s --difficulty 12 \
  --operator-token "$operator_token" > "$W/demo.log" 2>&1 &
pids+=($!)
for _ in $(seq 150); do curl -s -o /dev/null "http://127.0.0.1:$site/healthz" && break; sleep 0.1; done
export SITE="http://127.0.0.1:$site" OPERATOR="http://127.0.0.1:$site/operator?token=$operator_token"

# Rooms with custom waiting pages, in front of the demo site; the tests
# pause, resume and close them through the admin API.
export ADMIN_TOKEN="browser-$RANDOM$RANDOM"
room() { # name template tau port admin-port
	cat > "$W/$1.json" <<-EOF
	{"room":"$1","waiting_page":"$(pwd)/docs/examples/$2","rate":20,"tau":"$3","fixed_speed":true,
	 "difficulty":10,"min_backoff":"1s","max_backoff":"4s"}
	EOF
	"$W/fairgate" proxy --listen "127.0.0.1:$4" --admin "127.0.0.1:$5" --admin-token "$ADMIN_TOKEN" \
		--upstream "$SITE" --config "$W/$1.json" --state "$W/$1.db" > "$W/$1.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 150); do curl -s -o /dev/null "http://127.0.0.1:$4/_fairgate/status" && break; sleep 0.1; done
}
p=$(port) a=$(port); room branded waiting-branded.html 2s "$p" "$a"
export BRANDED="http://127.0.0.1:$p" BRANDED_ADMIN="http://127.0.0.1:$a"
p=$(port) a=$(port); room event waiting-event.html 2s "$p" "$a"
export EVENT="http://127.0.0.1:$p" EVENT_ADMIN="http://127.0.0.1:$a"

# A room with a priority lane for logins whose `tier` claim is `vip`; the
# site's login is an HS256 JWT in the `site_login` cookie.
login_key=$(python3 -c 'import base64, secrets; print(base64.b64encode(secrets.token_bytes(32)).decode())')
p=$(port) a=$(port)
cat > "$W/lanes.json" <<EOF
{"room":"lanes","rate":20,"tau":"2s","fixed_speed":true,"difficulty":10,"min_backoff":"1s","max_backoff":"4s",
 "identity":{"cookie":"site_login","algorithm":"HS256","key":"$login_key"},
 "lanes":[{"name":"vip","share":0.5,"claim":"tier=vip"}]}
EOF
"$W/fairgate" proxy --listen "127.0.0.1:$p" --admin "127.0.0.1:$a" --admin-token "$ADMIN_TOKEN" \
	--upstream "$SITE" --config "$W/lanes.json" --state "$W/lanes.db" > "$W/lanes.log" 2>&1 &
pids+=($!)
for _ in $(seq 150); do curl -s -o /dev/null "http://127.0.0.1:$p/_fairgate/status" && break; sleep 0.1; done
export LANES="http://127.0.0.1:$p" LANES_ADMIN="http://127.0.0.1:$a" LOGIN_KEY="$login_key"

status=0
(cd e2e/browser && node --test --test-concurrency=1 ${BROWSER_TESTS:-demo.test.mjs page.test.mjs}) || status=$?
echo "screenshots: $SCREENSHOTS"
if [ "$status" -ne 0 ]; then for log in "$W"/*.log; do echo "--- $log"; tail -30 "$log"; done; fi
exit "$status"
