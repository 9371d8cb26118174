#!/usr/bin/env bash
# Rooms under matchers, with curl, against the xcaddy-built Caddy
# (e2e/routing.caddyfile), and the room's answers compressed: a visitor of
# `waiting_room /a/* a` and of a room inside `handle /b/*` gets a place
# through the page's endpoints and is admitted; a room inside a handle
# block whose prefix the block does not cover is refused with a message
# naming prefix; the same two visitors in chromium (e2e/browser/matcher.mjs).
# Run by e2e/run.sh, which sets CADDY, TARGETS, FAIRGATE.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
scratch

export ADMIN_ADDRESS="127.0.0.1:$(port)" SITE_PORT=$(port) SHOP_UPSTREAM="127.0.0.1:$(port)" KEYS_FILE="$T/keys.json"
export XDG_CONFIG_HOME="$T/config" XDG_DATA_HOME="$T/data"
"$FAIRGATE" keygen --kid routing > "$KEYS_FILE"
"$TARGETS" origin "$SHOP_UPSTREAM" > /dev/null 2>&1 & pids+=($!)
wait_for "http://$SHOP_UPSTREAM/"
caddyfile="$(dirname "$0")/routing.caddyfile"
"$CADDY" run --config "$caddyfile" --adapter caddyfile > "$T/caddy.log" 2>&1 & pids+=($!)
wait_for "http://$ADMIN_ADDRESS/config/"
site="http://127.0.0.1:$SITE_PORT"

# place PAGE ROOM: the waiting page's path to a place, as its script takes
# it: the prefix from the page, a token, the proof of work, attempts until
# admitted (bounded); then the page with the pass. Prints the last status.
place() {
  local page=$1 room=$2 jar="$T/jar-$2" prefix code nonce
  curl -s -o "$T/page-$room" -H 'Accept: text/html' "$site$page"
  prefix=$(grep -o 'data-prefix="[^"]*"' "$T/page-$room" | head -1 | cut -d'"' -f2)
  code=$(curl -s -c "$jar" -b "$jar" -o "$T/tk-$room" -w '%{http_code}' -X POST "$site$prefix/token")
  [ "$code" = 200 ] || { echo "token at $prefix/token: $code"; return; }
  nonce=$("$FAIRGATE" solve -- "$(json "$T/tk-$room" challenge)" "$(json "$T/tk-$room" difficulty)")
  cp "$T/tk-$room" "$T/last-$room"
  for _ in $(seq 30); do
    sleep "$(json "$T/last-$room" retry_after)"
    code=$(curl -s -c "$jar" -b "$jar" -o "$T/admit-$room" -w '%{http_code}' -X POST "$site$prefix/admit" -d "{\"nonce\":\"$nonce\",\"return\":\"$page\"}")
    [ "$code" = 200 ] && break
    if [ -n "$(json "$T/admit-$room" challenge)" ]; then cp "$T/admit-$room" "$T/last-$room"; else echo '{"retry_after":1}' > "$T/last-$room"; fi
  done
  [ "$code" = 200 ] || { echo "admit at $prefix/admit: $code"; return; }
  curl -s -b "$jar" -o /dev/null -w '%{http_code}' "$site$page"
}

check "waiting_room /a/* a: the page's endpoints reach the room, the visitor is admitted" test "$(place /a/shop a)" = 200
check "waiting_room b inside handle /b/* (prefix /b/_fairgate): admitted" test "$(place /b/shop b)" = 200
# The same in chromium: the page gets its place and lets the visitor in.
browserdir="$(dirname "$0")/browser"
[ -d "$browserdir/node_modules/playwright-core" ] || (cd "$browserdir" && npm ci --no-audit --no-fund --loglevel=error > /dev/null)
node "$browserdir/matcher.mjs" "$site/a/shop?browser=1" "$site/b/shop?browser=1" > "$T/browser" 2>&1
browser=$?
sed 's/^/# /' "$T/browser"
check "in chromium, the waiting pages of rooms a and b get a place and let the visitor in" test "$browser" = 0
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Accept: application/json' "$site/elsewhere")
check "outside both matchers: the site, without a room" test "$code" = 200

NESTED_ROOM=c2 NESTED_PREFIX=/_fairgate "$CADDY" reload --config "$caddyfile" --adapter caddyfile --address "$ADMIN_ADDRESS" > "$T/refused" 2>&1
refused=$?
check "a room inside handle /c/* with the default prefix is refused, naming prefix" \
  test "$refused" != 0 -a -n "$(grep -l 'under prefix /_fairgate' "$T/refused")" -a -n "$(grep -l 'prefix /c/_fairgate' "$T/refused")"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Accept: application/json' "$site/a/shop")
check "the refused config changed nothing: room a still waits" test "$code" = 429

# Compression: the room answers before Caddy's encode, so it compresses itself.
curl -s -o "$T/plain.html" -H 'Accept: text/html' "$site/a/shop"
curl -s -D "$T/gz.h" -o "$T/page.gz" -H 'Accept: text/html' -H 'Accept-Encoding: gzip' "$site/a/shop"
same=$(python3 -c "import gzip,sys; print('yes' if gzip.decompress(open('$T/page.gz','rb').read()) == open('$T/plain.html','rb').read() else 'no')")
check "the waiting page in gzip, with Vary: Accept-Encoding, decodes to the plain page" \
  test "$same" = yes -a -n "$(grep -i '^content-encoding: gzip' "$T/gz.h")" -a -n "$(grep -i '^vary:.*accept-encoding' "$T/gz.h")"
js=$(grep -o 'src="[^"]*waiting.js"' "$T/plain.html" | cut -d'"' -f2)
plain_js=$(curl -s -o /dev/null -w '%{size_download}' "$site$js")
zstd_js=$(curl -s -D "$T/js.h" -o /dev/null -w '%{size_download}' -H 'Accept-Encoding: gzip, deflate, br, zstd' "$site$js")
check "the page's script in zstd ($plain_js bytes plain, $zstd_js zstd)" test -n "$(grep -i '^content-encoding: zstd' "$T/js.h")" -a "$zstd_js" -lt "$plain_js"

if [ "$failed" -ne 0 ]; then echo "--- routing caddy log"; tail -5 "$T/caddy.log"; cat "$T/refused"; fi
summary
