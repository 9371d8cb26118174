#!/usr/bin/env bash
# Side-by-side load benchmarks of the gateway and `fairgate proxy` (issue 3),
# on loopback, each target in its own process, every pair in one run.
# Usage: bench/gateway.sh            (DUR=10s CONN=64 THREADS=1 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)" >&2; exit 1; }
DUR=${DUR:-10s} CONN=${CONN:-64} THREADS=${THREADS:-1}
W=$(mktemp -d)
source bench/lib.sh

go build -o "$W/targets" ./bench/targets
go build -o "$W/fairgate" ./cmd/fairgate

keys=$("$W/fairgate" keygen --kid bench)
cat > "$W/config.json" <<JSON
{"room":"bench","keys":$keys,
 "bypass":{"paths":["/api/sections/"]},
 "cache":{"paths":["/api/sections/*"],"ttl":"2s"}}
JSON

start "$W/targets" origin 127.0.0.1:18081; wait_port 18081
start "$W/fairgate" proxy --listen 127.0.0.1:18080 --upstream http://127.0.0.1:18081 --config "$W/config.json" \
  --admin 127.0.0.1:18089 --admin-token bench; wait_port 18080
start "$W/targets" baseline 127.0.0.1:18082 http://127.0.0.1:18081; wait_port 18082
"$W/targets" capture http://127.0.0.1:18080/tickets text/html "$W/waiting.html" >/dev/null
"$W/targets" capture http://127.0.0.1:18080/tickets application/json "$W/waiting.json" >/dev/null
start "$W/targets" plain 127.0.0.1:18083 "$W/waiting.html" 200; wait_port 18083
start "$W/targets" plain 127.0.0.1:18084 "$W/waiting.json" 429; wait_port 18084
mkdir -p "$W/static/api/sections"
curl -s http://127.0.0.1:18081/api/sections/A > "$W/static/api/sections/A"
start "$W/targets" static 127.0.0.1:18085 "$W/static"; wait_port 18085
pass=$("$W/targets" pass "$W/config.json" bench)

header
row "waiting page, HTML (vs plain Go server, same bytes)" \
  "$(run http://127.0.0.1:18080/tickets 'Accept: text/html')" "$(run http://127.0.0.1:18083/tickets 'Accept: text/html')"
row "waiting, JSON 429 (vs plain Go server, same bytes)" \
  "$(run http://127.0.0.1:18080/tickets 'Accept: application/json')" "$(run http://127.0.0.1:18084/tickets 'Accept: application/json')"
row "admitted, pass verified (vs httputil.ReverseProxy alone)" \
  "$(run http://127.0.0.1:18080/page "Cookie: fairgate_pass_bench=$pass")" "$(run http://127.0.0.1:18082/page "Cookie: fairgate_pass_bench=$pass")"
before=$(curl -s http://127.0.0.1:18081/reads)
cached=$(run http://127.0.0.1:18080/api/sections/A)
after=$(curl -s http://127.0.0.1:18081/reads)
row "cached seat map (vs http.FileServer, same bytes)" "$cached" "$(run http://127.0.0.1:18085/api/sections/A)"
read -r crps _ <<<"$cached"
echo
echo "cached seat map: $(printf %.0f "$crps") req/s from clients, $((after - before)) upstream reads in $DUR (TTL 2s)"
