#!/usr/bin/env bash
# Side-by-side load benchmarks of the Caddy module, in one Caddy
# process (cmd/caddy, the binary xcaddy makes), so both sides of each pair
# share a runtime and garbage collector:
#   waiting_room in front of reverse_proxy to an origin,
#   baselines answering the waiting room's exact bytes with one handler
#     (headers) in front of static_response (respond),
#   reverse_proxy alone to the same origin;
#   the POST endpoints a waiting visitor calls (the admit poll answered
#   "keep waiting", a new token, a refreshed token) against baselines
#   replaying one captured answer of each: same status and headers, a body
#   of the same size, closed loop (wrk) and open loop
#   (targets open, OPEN_RATE requests/s).
# The room waits long (tau 24h, fixed_speed), so the poll is never admitted.
# Every baseline answers byte for byte what the waiting room answers
# (checked with curl before loading), and each comparison alternates A and B
# PAIRS times.
# Usage: bench/caddy.sh            (DUR=10s CONN=64 THREADS=1 PAIRS=3 OPEN_RATE=10000 by default)
#        ROWS=post bench/caddy.sh  (only the POST endpoints' rows)
#        PROFILE=dir bench/caddy.sh  (then one more closed-loop run of each
#          POST endpoint with a CPU profile of Caddy from its admin
#          endpoint, saved in dir with its pprof -top; not part of the rows)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
export XDG_CONFIG_HOME="$W/config" XDG_DATA_HOME="$W/data"

go build -o "$W/caddy" ./cmd/caddy
go build -o "$W/fairgate" ./cmd/fairgate
go build -o "$W/targets" ./bench/targets
export FAIRGATE_KEYS
FAIRGATE_KEYS=$("$W/fairgate" keygen --kid bench)
echo "{\"keys\":$FAIRGATE_KEYS}" > "$W/keys.json"

start "$W/targets" origin 127.0.0.1:${PORTS}1; wait_port ${PORTS}1

# First the waiting room alone, to capture the answers it sends.
cat > "$W/Caddyfile" <<CADDY
{
	admin 127.0.0.1:${PORTS}9
	persist_config off
	log {
		level ERROR
	}
}
http://127.0.0.1:${PORTS}0 {
	waiting_room bench {
		keys_from {env.FAIRGATE_KEYS}
		tau 24h
		fixed_speed
	}
	reverse_proxy 127.0.0.1:${PORTS}1
}
http://127.0.0.1:${PORTS}2 {
	reverse_proxy 127.0.0.1:${PORTS}1
}
CADDY
start "$W/caddy" run --config "$W/Caddyfile" --adapter caddyfile; wait_port ${PORTS}0
capture_waiting http://127.0.0.1:${PORTS}0/tickets
site=http://127.0.0.1:${PORTS}0
{ read -r poll_cookie; read -r poll_body; } < <("$W/targets" poll "$site" bench)
capture_post "$site/_fairgate/admit" "$poll_cookie" "$poll_body" "$W/admit.http"
capture_post "$site/_fairgate/token" "" "{}" "$W/token-new.http"
capture_post "$site/_fairgate/token" "$poll_cookie" "{}" "$W/token-refresh.http"
# Then the same config with the baselines added, as JSON.
"$W/caddy" adapt --config "$W/Caddyfile" --adapter caddyfile > "$W/caddy.json"
"$W/targets" caddy-baseline "$W/caddy.json" 127.0.0.1:${PORTS}3="$W/waiting.html" 127.0.0.1:${PORTS}4="$W/waiting.json" \
  127.0.0.1:${PORTS}5="$W/admit.http" 127.0.0.1:${PORTS}6="$W/token-new.http" 127.0.0.1:${PORTS}7="$W/token-refresh.http" > "$W/bench.json"
curl -sf -X POST -H 'Content-Type: application/json' --data-binary @"$W/bench.json" http://127.0.0.1:${PORTS}9/load
wait_port ${PORTS}3; wait_port ${PORTS}4; wait_port ${PORTS}5; wait_port ${PORTS}6; wait_port ${PORTS}7
pass=$("$W/targets" pass "$W/keys.json" bench)

header
if [ "${ROWS:-all}" = all ]; then
  compare_front_door "$PORTS" "headers + respond, same bytes" "reverse_proxy alone"
fi
b=http://127.0.0.1:$PORTS
compare_post "admit poll, keep waiting (vs respond, same size)" "$site/_fairgate/admit" "${b}5/_fairgate/admit" "$poll_cookie" "$poll_body"
compare_post "token, new (vs respond, same size)" "$site/_fairgate/token" "${b}6/_fairgate/token" "" "{}"
compare_post "token, refreshed (vs respond, same size)" "$site/_fairgate/token" "${b}7/_fairgate/token" "$poll_cookie" "{}"
open_header
open_post "admit poll, keep waiting" "$site/_fairgate/admit" "${b}5/_fairgate/admit" "$poll_cookie" "$poll_body"
open_post "token, new" "$site/_fairgate/token" "${b}6/_fairgate/token" "" "{}"
open_post "token, refreshed" "$site/_fairgate/token" "${b}7/_fairgate/token" "$poll_cookie" "{}"
if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$PROFILE"
  # profile NAME URL HEADER BODY: Caddy's CPU profile over one wrk run.
  profile() {
    local secs=${DUR%s}
    curl -sf -o "$PROFILE/$1.pprof" "http://127.0.0.1:${PORTS}9/debug/pprof/profile?seconds=$((secs > 2 ? secs - 1 : 1))" &
    local c=$!
    run "$2" "$3" "$4" > /dev/null
    wait "$c"
    go tool pprof -top -cum -nodecount=60 "$W/caddy" "$PROFILE/$1.pprof" > "$PROFILE/$1.top.txt" 2>/dev/null
    echo "profile of $1: $PROFILE/$1.pprof, $PROFILE/$1.top.txt" >&2
  }
  profile admit "$site/_fairgate/admit" "$poll_cookie" "$poll_body"
  profile token-new "$site/_fairgate/token" "" "{}"
  profile token-refresh "$site/_fairgate/token" "$poll_cookie" "{}"
  profile respond "${b}5/_fairgate/admit" "$poll_cookie" "$poll_body"
fi
