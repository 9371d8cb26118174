#!/usr/bin/env bash
# The waiting room end to end, with curl, against the running stack that
# e2e/run.sh starts: SITE (Caddy with Caddyfile.example), ADMIN (Caddy's
# admin API), FAIRGATE (the CLI), RELOAD (a command reloading Caddy).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
jar="$T/jar"

code=$(curl -s -o "$T/page" -w '%{http_code}' -H 'Accept: text/html' "$SITE/")
check "waiting page for a visitor without a pass" test "$code" = 200 -a -n "$(grep -l 'waiting room' "$T/page")"
code=$(curl -s -o "$T/app" -w '%{http_code}' -H 'Accept: application/json' "$SITE/")
check "apps get JSON 429 with Retry-After" test "$code" = 429 -a "$(json "$T/app" error.code)" = waiting_room

code=$(curl -s -c "$jar" -b "$jar" -o "$T/tk" -w '%{http_code}' -X POST "$SITE/_fairgate/token")
ch=$(json "$T/tk" challenge); dif=$(json "$T/tk" difficulty)
check "token issued with a challenge" test "$code" = 200 -a -n "$ch"

nonce=$("$FAIRGATE" solve "$ch" "$dif")
check "fairgate solve finds a nonce" test -n "$nonce"

code=$(curl -s -c "$jar" -b "$jar" -o "$T/early" -w '%{http_code}' -X POST "$SITE/_fairgate/admit" -d "{\"nonce\":\"$nonce\"}")
early_token=$(json "$T/tk" token)
check "an early attempt changes nothing" test "$code" = 429 -a "$(json "$T/early" outcome)" = early -a "$(json "$T/early" token)" = "$early_token"

# Wait as the page would, then attempt, until admitted (bounded).
admitted=no
cp "$T/early" "$T/last"
for _ in $(seq 40); do
  sleep "$(json "$T/last" retry_after)"
  code=$(curl -s -c "$jar" -b "$jar" -o "$T/admit" -w '%{http_code}' -X POST "$SITE/_fairgate/admit" -d "{\"nonce\":\"$nonce\",\"return\":\"/shop\"}")
  if [ "$code" = 200 ]; then admitted=yes; break; fi
  if [ -n "$(json "$T/admit" challenge)" ]; then cp "$T/admit" "$T/last"; else echo '{"retry_after":1}' > "$T/last"; fi
done
check "waiting, then admitted" test "$admitted" = yes -a "$(json "$T/admit" redirect)" = /shop
session=$(json "$T/admit" session)
check "the admission hook opened a seat session" test -n "$session"

code=$(curl -s -b "$jar" -o "$T/shop" -w '%{http_code}' "$SITE/shop")
check "the pass opens the site" test "$code" = 200 -a -n "$(grep -l 'ticket shop' "$T/shop")"

code=$(curl -s -b "$jar" -o "$T/hold" -w '%{http_code}' -X POST "$SITE/api/sessions/$session/holds" -H 'Content-Type: application/json' -d '{"best":{"count":2}}')
check "the seat API holds two seats behind the pass" test "$code" = 200 -a -n "$(json "$T/hold" seats.1)"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Accept: application/json' -X POST "$SITE/api/sessions/$session/checkout")
check "the seat API without a pass is the waiting room" test "$code" = 429

pass=$(awk '$6 == "fairgate_pass_sale" {print $7}' "$jar")
tampered="${pass%???}AAA"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Accept: application/json' -H "Cookie: fairgate_pass_sale=$tampered" "$SITE/shop")
check "a tampered pass is refused" test "$code" = 429

code=$(curl -s -o "$T/seatmap" -w '%{http_code}' "$SITE/api/events/final-2026/sections/L1")
code2=$(curl -s -o /dev/null -D "$T/h2" -w '%{http_code}' "$SITE/api/events/final-2026/sections/L1")
check "seat maps bypass the queue and come from the cache" test "$code" = 200 -a "$code2" = 200 -a -n "$(grep -i '^cache-status: fairgate; hit' "$T/h2")"

# Cached answers go out compressed (the room answers before Caddy's encode):
# the event's summary (about 7 KB) and a section's seat map.
for path in /api/events/final-2026 /api/events/final-2026/sections/L1; do
  curl -s -o "$T/map.plain" "$SITE$path"
  gz=$(curl -s -D "$T/map.gzh" -o "$T/map.gz" -w '%{size_download}' -H 'Accept-Encoding: gzip' "$SITE$path")
  zst=$(curl -s -D "$T/map.zsth" -o /dev/null -w '%{size_download}' -H 'Accept-Encoding: gzip, deflate, br, zstd' "$SITE$path")
  plain=$(wc -c < "$T/map.plain")
  same=$(python3 -c "import gzip; print('yes' if gzip.decompress(open('$T/map.gz','rb').read()) == open('$T/map.plain','rb').read() else 'no')")
  echo "# $path from the cache: $plain bytes plain, $gz gzip, $zst zstd"
  check "$path from the cache in gzip and zstd, with Vary, decoding to the plain answer" \
    test "$same" = yes -a "$gz" -lt "$plain" -a "$zst" -lt "$plain" -a -n "$(grep -i '^content-encoding: gzip' "$T/map.gzh")" -a -n "$(grep -i '^content-encoding: zstd' "$T/map.zsth")" -a -n "$(grep -i '^vary:.*accept-encoding' "$T/map.zsth")"
done

# Bypass rules are matched on the path the origin serves.
for p in '/healthz/../shop' '/static/%2e%2e' '/favicon.ico/../shop' '/healthz%2F..%2Fshop' '/api/events/%2e%2e'; do
  code=$(curl -s --path-as-is -o /dev/null -w '%{http_code}' -H 'Accept: application/json' "$SITE$p")
  check "a dot segment after a bypass rule is refused: $p" test "$code" = 400
done
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Accept: application/json' "$SITE/healthzX")
check "a bypass prefix ends on a segment boundary" test "$code" = 429

# Pause: a new visitor waits and waits.
curl -s -o "$T/paused" -X POST "$ADMIN/waiting_room/rooms/sale" -d '{"state":"paused"}'
check "pause through the admin API" test "$(json "$T/paused" state)" = paused
jar2="$T/jar2"
curl -s -c "$jar2" -b "$jar2" -o "$T/tk2" -X POST "$SITE/_fairgate/token"
nonce2=$("$FAIRGATE" solve "$(json "$T/tk2" challenge)" "$(json "$T/tk2" difficulty)")
cp "$T/tk2" "$T/last2"
held=yes
for _ in 1 2 3; do
  sleep "$(json "$T/last2" retry_after)"
  code=$(curl -s -c "$jar2" -b "$jar2" -o "$T/a2" -w '%{http_code}' -X POST "$SITE/_fairgate/admit" -d "{\"nonce\":\"$nonce2\"}")
  [ "$code" = 429 ] || held=no
  [ -n "$(json "$T/a2" challenge)" ] && cp "$T/a2" "$T/last2"
done
check "a paused room admits nobody" test "$held" = yes
curl -s -o /dev/null -X POST "$ADMIN/waiting_room/rooms/sale" -d '{"state":"queue"}'

# Reload: the room's clock and used tokens carry over.
curl -s -o "$T/before" "$ADMIN/waiting_room/rooms/sale"
$RELOAD
reloaded=$?
curl -s -o "$T/after" "$ADMIN/waiting_room/rooms/sale"
# used_tokens counts the memory ledger only: with the default bolt store
# the used places are in the store, and the next check replays one.
clock_kept=$(python3 -c "import json; b=json.load(open('$T/before')); a=json.load(open('$T/after')); print('yes' if a['clock'] >= b['clock'] > 0 and a['used_tokens'] == b['used_tokens'] else 'no')")
check "a reload keeps the serving clock" test "$reloaded" = 0 -a "$clock_kept" = yes
code=$(curl -s -c "$jar" -b "$jar" -o "$T/reuse" -w '%{http_code}' -X POST "$SITE/_fairgate/admit" -d "{\"nonce\":\"$nonce\",\"token\":\"$(json "$T/tk" token)\"}")
# The place is used: the version it was admitted with gets its own pass
# back (a retry after a lost answer), any other version 409; a ledger that
# forgot the place would sign a new pass.
same_pass=$(python3 -c "
import base64, json
def jti(p):
    b = p.split('.')[1]
    return json.loads(base64.urlsafe_b64decode(b + '=' * (-len(b) % 4)))['jti']
a, r = json.load(open('$T/admit')), json.load(open('$T/reuse'))
print('yes' if jti(a['pass']) == jti(r['pass']) else 'no')" 2>/dev/null)
check "a used token stays used after the reload (409, or its own pass again, never a new one)" test "$code" = 409 -o "$code" = 200 -a "$same_pass" = yes

curl -s -o "$T/metrics" "$ADMIN/metrics"
check "metrics on the admin endpoint" grep -qE '^fairgate_admissions_total\{room="sale"\} [1-9]' "$T/metrics"

summary
