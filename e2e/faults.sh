#!/usr/bin/env bash
# The fault suite: faults during bounded load (e2e/load) against the
# xcaddy-built Caddy, and `fairgate proxy` where it could differ (origin and
# hook), each stated as figures. Run by e2e/run.sh, which sets CADDY,
# TARGETS, LOAD and FAIRGATE (the CLI). Prints a Markdown table of the
# figures (docs/OPERATIONS.md shows one) and fails when a figure is wrong:
# a failed request beyond plain Caddy's share, a lost place, a double
# admission, a room changed by a rejected reload, a lost or double-sold
# reservation.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
scratch

export ADMIN_ADDRESS="127.0.0.1:$(port)" ROOM_PORT=$(port) PLAIN_PORT=$(port) SHOP_PORT=$(port)
export SHOP_UPSTREAM="127.0.0.1:$SHOP_PORT" HOOK_ADDR="127.0.0.1:$(port)" KEYS_FILE="$T/keys.json"
export CHECKOUT_PORT=$(port) SEATS_ADDR="127.0.0.1:$(port)"
PROXY_PORT=$(port)
"$FAIRGATE" keygen --kid first > "$KEYS_FILE"
head -c 32 /dev/urandom | base64 > "$T/payment.key"
export XDG_CONFIG_HOME="$T/config" XDG_DATA_HOME="$T/data"
room="http://127.0.0.1:$ROOM_PORT" plain="http://127.0.0.1:$PLAIN_PORT" admin="http://$ADMIN_ADDRESS"
caddyfile="$(dirname "$0")/faults.caddyfile"
reload() { "$CADDY" reload --config "$caddyfile" --adapter caddyfile --address "$ADMIN_ADDRESS" --force >> "$T/reload.log" 2>&1; }
start_origin() { "$TARGETS" origin "$SHOP_UPSTREAM" > /dev/null 2>&1 & origin=$!; pids+=("$origin"); wait_for "http://$SHOP_UPSTREAM/"; }
start_hook() { "$LOAD" -serve-hook "$HOOK_ADDR" -hook-delay "$1" 2>/dev/null & hook=$!; pids+=("$hook"); for _ in $(seq 50); do curl -s -o /dev/null "http://$HOOK_ADDR/" && break; sleep 0.1; done; }
# The seat service on its bbolt file; a restart reopens the same file.
start_seats() {
  "$FAIRGATE" seats --keys "$KEYS_FILE" --db "$T/seats.db" --listen "$SEATS_ADDR" --room checkout \
    --event final-2026 --payment-key-file "$T/payment.key" --admin-token faults >> "$T/seats.log" 2>&1 & seats=$!
  pids+=("$seats"); wait_for "http://$SEATS_ADDR/api/events/none"
}
room_settings() { curl -s "$admin/waiting_room/rooms/faults" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["state"], d["rate"], d["burst"], d["difficulty"])'; }
field() { python3 -c "import json,sys; print(json.load(open('$1'))['$2'])"; }
both_under_load() { # both_under_load NAME FOR: load on Caddy's room (and plain Caddy) and on `fairgate proxy` at once, for FOR, into $T/NAME.json and $T/NAME-proxy.json; their pids in load and load2
  "$LOAD" -site "$room" -room faults -plain "$plain" -for "$2" > "$T/$1.json" 2>> "$T/load.err" & load=$!
  "$LOAD" -site "$proxy" -room proxyfaults -for "$2" > "$T/$1-proxy.json" 2>> "$T/load.err" & load2=$!
}
clean() { # clean FILE [admitted]: no failed request, connection error, lost place or double admission (and, with admitted, some admitted)
  test "$(field "$1" failed)" = 0 -a "$(field "$1" conn_errors)" = 0 -a "$(field "$1" lost)" = 0 -a "$(field "$1" double)" = 0 || return 1
  [ "${2:-}" != admitted ] || [ "$(field "$1" admitted)" -gt 0 ]
}
row() { # row NAME FILE EXTRA: one line of the figures table
  echo "| $1 | $(field "$2" requests) | $(field "$2" failed) | $(field "$2" conn_errors) | $(field "$2" plain_requests) | $(field "$2" plain_failed) | $(field "$2" plain_conn_errors) | $(field "$2" origin_errors) | $(field "$2" admitted) | $(field "$2" deferred) | $(field "$2" lost) | $(field "$2" double) | $3 |" >> "$T/table"
}
# conn_share_ok FILE: connection errors (resets and EOFs as Caddy switches
# listeners on a reload) are rare on both sides: under 1% of requests.
conn_share_ok() { python3 -c "
import json; d=json.load(open('$1'))
ok = d['conn_errors'] <= 0.01 * d['requests'] and d['plain_conn_errors'] <= 0.01 * max(d['plain_requests'], 1)
raise SystemExit(0 if ok else 1)"; }

start_origin
start_hook 0s
start_seats
# `fairgate proxy` with the same room settings (its JSON is the module's),
# for the faults where it could differ from Caddy: the origin and the hook.
python3 - "$KEYS_FILE" "$HOOK_ADDR" > "$T/proxy.json" <<'PY'
import json, sys
print(json.dumps({"room": "proxyfaults", "state": "queue", "rate": 40, "tau": "1s", "min_backoff": "1s", "max_backoff": "2s",
                  "difficulty": 6, "keys": json.load(open(sys.argv[1])),
                  "admission_hook": {"url": "http://%s/sessions" % sys.argv[2], "timeout": "1s", "on_failure": "closed"}}))
PY
"$FAIRGATE" proxy --upstream "http://$SHOP_UPSTREAM" --listen "127.0.0.1:$PROXY_PORT" --config "$T/proxy.json" \
  --state "$T/proxy-rooms.db" --admin "127.0.0.1:$(port)" --admin-token faults > "$T/proxy.log" 2>&1 & pids+=($!)
proxy="http://127.0.0.1:$PROXY_PORT"
wait_for "$proxy/_fairgate/status"
"$FAIRGATE" seats layout --id final-2026 | curl -sf -o /dev/null -X POST -H 'Authorization: Bearer faults' --data-binary @- "http://$SEATS_ADDR/api/events"
start_caddy() { "$CADDY" run --config "$caddyfile" --adapter caddyfile >> "$T/caddy.log" 2>&1 & caddy=$!; pids+=("$caddy"); wait_for "$admin/config/" && wait_for "$plain/"; }
start_caddy

# 1. Ten reloads during load, the fifth rejected (a bad regexp, with rate 999).
# Connection errors (a reset or EOF as Caddy switches listeners, or closes an
# idle keep-alive connection a POST was just sent on) hit either side at
# random and are counted apart from HTTP failures.
"$LOAD" -site "$room" -room faults -plain "$plain" -workers "${PLAIN_WORKERS:-4}" -pace "${PLAIN_PACE:-20ms}" -for 14s > "$T/reloads.json" 2> "$T/load.err" & load=$!
sleep 2
rejected_ok=yes
for i in $(seq 10); do
  if [ "$i" = 5 ]; then
    before=$(room_settings)
    if BAD_UA='(' RATE=999 reload; then rejected_ok=no; fi
    [ "$(room_settings)" = "$before" ] || rejected_ok=no
  else
    reload || echo "reload $i failed" >&2
  fi
  sleep 1
done
wait "$load"
check "10 reloads under load: no HTTP failure from the room (plain Caddy: none either)" test "$(field "$T/reloads.json" failed)" = 0 -a "$(field "$T/reloads.json" plain_failed)" = 0
check "10 reloads under load: connection errors under 1% on both sides" conn_share_ok "$T/reloads.json"
check "10 reloads under load: no lost place, no double admission" test "$(field "$T/reloads.json" lost)" = 0 -a "$(field "$T/reloads.json" double)" = 0 -a "$(field "$T/reloads.json" admitted)" -gt 0
check "the rejected reload was refused and changed nothing (state, rate, burst, difficulty)" test "$rejected_ok" = yes
row "10 reloads, 1 rejected" "$T/reloads.json" "rejected reload changed nothing: $rejected_ok"

# 2. The origin down for 3 s and back, under Caddy and `fairgate proxy`
# (its own reverse proxy answers 502 JSON while the origin is down).
both_under_load origin 9s
sleep 2
kill "$origin"; wait "$origin" 2>/dev/null
sleep 3
start_origin
wait "$load" "$load2"
check "origin down and back: the waiting room kept answering, no lost place, no double admission" \
  clean "$T/origin.json"
check "origin down: the shop behind a pass answered 502 (Caddy's documented answer), then recovered" \
  test "$(field "$T/origin.json" admitted)" -gt 0
row "origin down 3 s, back" "$T/origin.json" "502 from reverse_proxy while down"
check "origin down and back, fairgate proxy: the room kept answering, 502 while down, no lost place, no double admission" \
  clean "$T/origin-proxy.json" admitted
row "origin down 3 s, back — \`fairgate proxy\`" "$T/origin-proxy.json" "502 \`upstream\` JSON from fairgate's reverse proxy while down"

# 3. The admission hook down for 3 s, slow (3 s, past its 1 s timeout) for
# 3 s, and back: on_failure closed keeps visitors waiting, without a strike.
both_under_load hook 12s
sleep 2
kill "$hook"; wait "$hook" 2>/dev/null
sleep 3
start_hook 3s
sleep 3
kill "$hook"; wait "$hook" 2>/dev/null
start_hook 0s
wait "$load" "$load2"
check "admission hook down, slow and back: no failed request, no lost place, no double admission" \
  clean "$T/hook.json" admitted
row "hook down 3 s, slow 3 s, back" "$T/hook.json" "visitors kept waiting (on_failure closed)"
check "admission hook down, slow and back, fairgate proxy: no failed request, no lost place, no double admission" \
  clean "$T/hook-proxy.json" admitted
row "hook down 3 s, slow 3 s, back — \`fairgate proxy\`" "$T/hook-proxy.json" "visitors kept waiting (on_failure closed)"

# 4. The seat service killed (SIGKILL) mid-checkout for 3 s and restarted
# on its file: visitors admitted to room "checkout" each buy a seat (hold,
# checkout, confirm, retried with their Idempotency-Key); Caddy answers 502
# while it is down, the room defers admissions (its hook is the seat
# service), and after the restart every purchase completes: the seat
# service's count of sold seats equals the reservations the visitors were
# told of, none lost, none sold twice. The kill follows a seat held (at
# most 10 s in), so that buyer's checkout, a think (1 s) later, meets the
# outage: the buyers move in waves, and a kill timed by the clock alone
# once fell between two (no write met the outage).
"$LOAD" -site "http://127.0.0.1:$CHECKOUT_PORT" -room checkout -for 12s -checkout -think 1s -seats "http://$SEATS_ADDR" \
  -event final-2026 -payment-key "$T/payment.key" -held "$T/held" > "$T/seats.json" 2>> "$T/load.err" & load=$!
for _ in $(seq 100); do [ -s "$T/held" ] && break; sleep 0.1; done
kill -9 "$seats"; wait "$seats" 2>/dev/null
sleep 3
start_seats
wait "$load"
check "seat service killed mid-checkout: the waiting room kept answering, no lost place, no double admission" \
  clean "$T/seats.json"
check "seat service killed mid-checkout: the documented answer while down (502, deferred admissions), purchases resumed after" \
  test "$(field "$T/seats.json" seats_unavailable)" -gt 0 -a "$(field "$T/seats.json" resumed)" -gt 0 -a "$(field "$T/seats.json" confirmed)" -gt 0
check "seat service killed mid-checkout: no lost reservation, no seat sold twice, sold seats = confirmed reservations" \
  test "$(field "$T/seats.json" lost_reservations)" = 0 -a "$(field "$T/seats.json" double_sold)" = 0 -a "$(field "$T/seats.json" reserved_seats)" = "$(field "$T/seats.json" confirmed_seats)"
row "seat service SIGKILL 3 s mid-checkout, restarted" "$T/seats.json" "$(field "$T/seats.json" confirmed) seats bought, $(field "$T/seats.json" reserved_seats) sold by the seat service; $(field "$T/seats.json" seats_unavailable) writes met the outage (502 through Caddy, refused direct), $(field "$T/seats.json" resumed) writes resumed with their key; $(field "$T/seats.json" seat_taken) holds lost a best seat to another buyer (409) and asked again; lost reservations $(field "$T/seats.json" lost_reservations), double sold $(field "$T/seats.json" double_sold)"

# 5. Key rotation during load: a key added to the key file and signing
# (`fairgate keys add`), then `caddy reload --force`; waiting tokens and
# passes signed by the old key stay valid.
"$LOAD" -site "$room" -room faults -plain "$plain" -for 10s > "$T/keys.json.out" 2>> "$T/load.err" & load=$!
sleep 3
"$FAIRGATE" keys add --file "$KEYS_FILE" --kid second >> "$T/reload.log" && reload
rotated=$(python3 -c "import json; print(json.load(open('$KEYS_FILE'))['signing'])")
wait "$load"
check "key rotation under load: no failed request, no lost place, no double admission" \
  test "$rotated" = second -a "$(field "$T/keys.json.out" failed)" = 0 -a "$(field "$T/keys.json.out" lost)" = 0 -a "$(field "$T/keys.json.out" double)" = 0 -a "$(field "$T/keys.json.out" admitted)" -gt 0
check "key rotation under load: connection errors under 1% on both sides" conn_share_ok "$T/keys.json.out"
row "key rotation (keys add, reload --force)" "$T/keys.json.out" "new key signing: $rotated; old tokens and passes accepted"

# 6–7. The gateway restarted (SIGTERM) and killed (SIGKILL) during load, on
# its default durable room state (a bolt file in Caddy's data directory,
# XDG_DATA_HOME here): the serving clock resumes where it was (a waiting
# visitor keeps its place), the places admitted before stay used (every
# admitted token replayed with the room open at a high rate, so the ledger
# is all that can refuse it), no HTTP failure but the connection errors
# while the process is down, no lost place, no double admission.
room_clock() { curl -s --max-time 5 "$admin/waiting_room/rooms/faults" | python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["clock"])'; }
room_store() { curl -s --max-time 5 "$admin/waiting_room/rooms/faults" | python3 -c 'import json,sys; print((json.load(sys.stdin).get("cluster") or {}).get("store", ""))'; }
set_room() { curl -s --max-time 5 -o /dev/null -X POST -H 'Content-Type: application/json' -d "$1" "$admin/waiting_room/rooms/faults"; }
restart_under_load() { # restart_under_load SIGNAL FILE-KEY LABEL
  local sig=$1 name=$2 label=$3
  "$LOAD" -site "$room" -room faults -plain "$plain" -for 14s -used "$T/used-$name" > "$T/$name.json" 2>> "$T/load.err" & load=$!
  sleep 5
  local before after
  before=$(room_clock)
  kill -s "$sig" "$caddy"; wait "$caddy" 2>/dev/null
  start_caddy
  after=$(room_clock)
  wait "$load"
  set_room '{"state":"open","rate":1000,"burst":1000}'
  "$LOAD" -site "$room" -replay "$T/used-$name" > "$T/replay-$name.json" 2>> "$T/load.err"
  set_room '{"state":"queue","rate":40,"burst":40}'
  local replayed again
  replayed=$(field "$T/replay-$name.json" replayed) again=$(field "$T/replay-$name.json" again)
  check "gateway $label under load: the clock resumes (S $before before, $after after), not at 0" \
    python3 -c "import sys; sys.exit(0 if $before > 0 and $after >= $before else 1)"
  check "gateway $label under load: no HTTP failure, no lost place, no double admission" \
    test "$(field "$T/$name.json" failed)" = 0 -a "$(field "$T/$name.json" lost)" = 0 -a "$(field "$T/$name.json" double)" = 0 -a "$(field "$T/$name.json" admitted)" -gt 0
  check "gateway $label: the $replayed tokens admitted before and after stay used ($again admitted again)" \
    test "$replayed" -gt 0 -a "$again" = 0
  row "gateway $label during load" "$T/$name.json" "S $before → $after; replayed $replayed admitted tokens, $again admitted again"
}
if [ -n "$(room_store)" ]; then
  restart_under_load TERM restart "restart (SIGTERM)"
  restart_under_load KILL sigkill "SIGKILL"
else
  echo "skip - gateway restart and SIGKILL: this build keeps the room in memory (no room-state store in the admin API)"
fi

echo
echo "| scenario | room requests | failed | connection errors | plain requests | plain failed | plain connection errors | origin 5xx behind a pass | admitted | deferred (hook) | lost places | double admissions | note |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
cat "$T/table"
for f in "$T"/reloads.json "$T"/origin.json "$T"/origin-proxy.json "$T"/hook.json "$T"/hook-proxy.json "$T"/seats.json "$T"/keys.json.out "$T"/restart.json "$T"/sigkill.json; do
  [ -f "$f" ] || continue
  grep -o '"samples":.*' "$f" | grep -v '"samples":null' | sed "s|^|  first failures in $(basename "$f"): |" || true
done
if [ "$failed" -ne 0 ]; then echo "--- faults caddy log (errors)"; grep -iE 'panic|"level":"error"' "$T/caddy.log" | tail -10; fi
summary
