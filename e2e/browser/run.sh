#!/usr/bin/env bash
# The demo in a real browser: builds fairgate, starts `fairgate demo` on
# loopback, and runs demo.test.mjs with Debian chromium (installed by
# .ci/run). Screenshots go to $SCREENSHOTS (printed at the end).
set -euo pipefail
cd "$(dirname "$0")/../.."
export SCREENSHOTS=${SCREENSHOTS:-$(pwd)/e2e/browser/screenshots}
W=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT

(cd e2e/browser && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
go build -o "$W/fairgate" ./cmd/fairgate
export XDG_CONFIG_HOME="$W/config" XDG_DATA_HOME="$W/data"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
site=$(port) admin=$(port)
operator_token=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
"$W/fairgate" demo --listen "127.0.0.1:$site" --admin "127.0.0.1:$admin" --rate 20 --tau 2s --difficulty 12 \
  --operator-token "$operator_token" > "$W/demo.log" 2>&1 &
pid=$!
for _ in $(seq 150); do curl -s -o /dev/null "http://127.0.0.1:$site/healthz" && break; sleep 0.1; done

export SITE="http://127.0.0.1:$site" OPERATOR="http://127.0.0.1:$site/operator?token=$operator_token"
status=0
(cd e2e/browser && node --test --test-concurrency=1 demo.test.mjs) || status=$?
echo "screenshots: $SCREENSHOTS"
if [ "$status" -ne 0 ]; then echo "--- demo log"; tail -30 "$W/demo.log"; fi
exit "$status"
