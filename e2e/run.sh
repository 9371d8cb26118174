#!/usr/bin/env bash
# End-to-end tests against real built binaries: Caddy built by xcaddy from
# xcaddy.json, running Caddyfile.example, in front of the real seat service
# and a shop origin, all on loopback; then the fault suite (faults.sh) and
# the three-node cluster test on DynamoDB Local (cluster.sh), and the
# black-box fairness probe at small scale (fairness.sh). Prints each
# scenario's "N passed, N failed" and fails on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
source e2e/lib.sh
scratch
W=$T

echo "building Caddy from xcaddy.json…"
go run ./e2e/build xcaddy.json "$W/caddy"
go build -o "$W/fairgate" ./cmd/fairgate
go build -o "$W/targets" ./bench/targets
go build -o "$W/load" ./e2e/load
# Not a pipe into grep -q: under pipefail, Caddy's SIGPIPE after grep quits
# would fail the run at random.
"$W/caddy" list-modules > "$W/modules.txt"
grep -qx 'http.handlers.waiting_room' "$W/modules.txt" || { echo "the built Caddy lacks http.handlers.waiting_room" >&2; exit 1; }

"$W/fairgate" keygen --kid e2e > "$W/keys.json"
export FAIRGATE_KEYS
FAIRGATE_KEYS=$(cat "$W/keys.json")
site=$(port) admin=$(port) seats=$(port) shop=$(port)

head -c 32 /dev/urandom | base64 > "$W/payment.key"
"$W/fairgate" seats --keys "$W/keys.json" --db "$W/seats.db" --listen "127.0.0.1:$seats" --room sale \
  --event final-2026 --payment-key-file "$W/payment.key" --admin-token e2e > "$W/seats.log" 2>&1 & pids+=($!)
wait_for "http://127.0.0.1:$seats/api/events/none"
"$W/fairgate" seats layout --id final-2026 | curl -sf -o /dev/null -X POST -H 'Authorization: Bearer e2e' --data-binary @- "http://127.0.0.1:$seats/api/events"
"$W/targets" origin "127.0.0.1:$shop" > "$W/shop.log" 2>&1 & pids+=($!)
wait_for "http://127.0.0.1:$shop/"

# Caddy's autosave and storage stay in the scratch directory.
export XDG_CONFIG_HOME="$W/config" XDG_DATA_HOME="$W/data"
# A 4 s backoff floor (3 s after jitter) leaves the "early attempt" check
# room to solve and post before nxt even on a loaded machine.
export SITE_ADDRESS="http://127.0.0.1:$site" ADMIN_ADDRESS="127.0.0.1:$admin" SEATS_UPSTREAM="127.0.0.1:$seats" \
  SHOP_UPSTREAM="127.0.0.1:$shop" TAU=1s MIN_BACKOFF=4s DIFFICULTY=10 SESSIONS=100000
"$W/caddy" run --config Caddyfile.example --adapter caddyfile > "$W/caddy.log" 2>&1 & pids+=($!)
wait_for "http://127.0.0.1:$admin/config/"
wait_for "http://127.0.0.1:$site/healthz"

export SITE="http://127.0.0.1:$site" ADMIN="http://127.0.0.1:$admin" FAIRGATE="$W/fairgate"
export CADDY="$W/caddy" TARGETS="$W/targets" LOAD="$W/load"
export RELOAD="$W/caddy reload --config Caddyfile.example --adapter caddyfile --address 127.0.0.1:$admin --force"
status=0
for scenario in e2e/waiting_room.sh e2e/routing.sh e2e/faults.sh e2e/cluster.sh e2e/fairness.sh; do
  echo "== $scenario"
  bash "$scenario" || status=1
done
if [ "$status" -ne 0 ]; then
  echo "--- caddy log"; tail -30 "$W/caddy.log"; echo "--- seats log"; tail -10 "$W/seats.log"
fi
exit "$status"
