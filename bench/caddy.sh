#!/usr/bin/env bash
# Side-by-side load benchmarks of the Caddy module (issue 4), in one Caddy
# process (cmd/caddy, the binary xcaddy makes) with three sites on loopback:
#   waiting_room in front of reverse_proxy to an origin,
#   respond writing the exact bytes of the waiting page,
#   reverse_proxy alone to the same origin.
# Usage: bench/caddy.sh            (DUR=10s CONN=64 THREADS=1 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)" >&2; exit 1; }
DUR=${DUR:-10s} CONN=${CONN:-64} THREADS=${THREADS:-1}
W=$(mktemp -d)
source bench/lib.sh
export XDG_CONFIG_HOME="$W/config" XDG_DATA_HOME="$W/data"

go build -o "$W/caddy" ./cmd/caddy
go build -o "$W/fairgate" ./cmd/fairgate
go build -o "$W/targets" ./bench/targets
export FAIRGATE_KEYS
FAIRGATE_KEYS=$("$W/fairgate" keygen --kid bench)
echo "{\"keys\":$FAIRGATE_KEYS}" > "$W/keys.json"

start "$W/targets" origin 127.0.0.1:18381; wait_port 18381

# Phase 1: the waiting room alone, to capture the bytes it sends.
caddyfile() { # caddyfile WAITING_PAGE_FILE
  cat <<CADDY
{
	admin 127.0.0.1:18389
	persist_config off
	log {
		level ERROR
	}
}
http://127.0.0.1:18380 {
	waiting_room bench {
		keys_from {env.FAIRGATE_KEYS}
	}
	reverse_proxy 127.0.0.1:18381
}
http://127.0.0.1:18382 {
	reverse_proxy 127.0.0.1:18381
}
CADDY
  if [ -n "${1:-}" ]; then
    printf 'http://127.0.0.1:18383 {\n\theader Content-Type "text/html; charset=utf-8"\n\theader Cache-Control no-store\n\trespond <<WAITINGPAGE\n'
    cat "$1"
    printf 'WAITINGPAGE 200\n}\n'
  fi
}
caddyfile > "$W/Caddyfile"
start "$W/caddy" run --config "$W/Caddyfile" --adapter caddyfile; wait_port 18380
curl -s -H 'Accept: text/html' -o "$W/waiting.html" http://127.0.0.1:18380/tickets
caddyfile "$W/waiting.html" > "$W/Caddyfile"
"$W/caddy" reload --config "$W/Caddyfile" --adapter caddyfile --address 127.0.0.1:18389 --force
wait_port 18383
cmp -s <(curl -s http://127.0.0.1:18383/tickets) <(curl -s -H 'Accept: text/html' http://127.0.0.1:18380/tickets) ||
  echo "note: respond's bytes differ from the waiting page's by $(( $(curl -s http://127.0.0.1:18383/tickets | wc -c) - $(wc -c < "$W/waiting.html") )) bytes"
pass=$("$W/targets" pass "$W/keys.json" bench)

header
row "waiting page: waiting_room (vs respond, same bytes)" \
  "$(run http://127.0.0.1:18380/tickets 'Accept: text/html')" "$(run http://127.0.0.1:18383/tickets)"
row "admitted: waiting_room + reverse_proxy (vs reverse_proxy alone)" \
  "$(run http://127.0.0.1:18380/page "Cookie: fairgate_pass_bench=$pass")" "$(run http://127.0.0.1:18382/page "Cookie: fairgate_pass_bench=$pass")"
