#!/usr/bin/env bash
# Side-by-side load benchmarks of `fairgate proxy`, on loopback,
# each server in its own process with the same GC setting (bench/lib.sh).
# Every baseline answers byte for byte what fairgate answers (checked with
# curl before loading), and each comparison alternates A and B PAIRS times.
# Usage: bench/gateway.sh            (DUR=10s CONN=64 THREADS=1 PAIRS=3 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

go build -o "$W/targets" ./bench/targets
go build -o "$W/fairgate" ./cmd/fairgate

keys=$("$W/fairgate" keygen --kid bench)
cat > "$W/config.json" <<JSON
{"room":"bench","keys":$keys,
 "bypass":{"paths":["/api/sections/"]},
 "cache":{"paths":["/api/sections/*"],"ttl":"2s"}}
JSON

start "$W/targets" origin 127.0.0.1:${PORTS}1; wait_port ${PORTS}1
start "$W/fairgate" proxy --listen 127.0.0.1:${PORTS}0 --upstream http://127.0.0.1:${PORTS}1 --config "$W/config.json" \
  --admin 127.0.0.1:${PORTS}9 --admin-token bench; wait_port ${PORTS}0
start "$W/targets" baseline 127.0.0.1:${PORTS}2 http://127.0.0.1:${PORTS}1; wait_port ${PORTS}2
# The baselines replay fairgate's own answers from memory.
capture_waiting http://127.0.0.1:${PORTS}0/tickets
"$W/targets" capture http://127.0.0.1:${PORTS}0/api/sections/A '*/*' "$W/seatmap"
start "$W/targets" replay 127.0.0.1:${PORTS}3 "$W/waiting.html"; wait_port ${PORTS}3
start "$W/targets" replay 127.0.0.1:${PORTS}4 "$W/waiting.json"; wait_port ${PORTS}4
start "$W/targets" replay 127.0.0.1:${PORTS}5 "$W/seatmap"; wait_port ${PORTS}5
pass=$("$W/targets" pass "$W/config.json" bench)

header
compare_front_door "$PORTS" "its bytes from memory" "httputil.ReverseProxy alone"
before=$(curl -s http://127.0.0.1:${PORTS}1/reads)
compare "cached seat map (vs its bytes from memory)" \
  http://127.0.0.1:${PORTS}0/api/sections/A '' http://127.0.0.1:${PORTS}5/api/sections/A ''
after=$(curl -s http://127.0.0.1:${PORTS}1/reads)
echo
echo "cached seat map: $((after - before)) upstream reads during its $((2 * PAIRS)) runs of $DUR, half of them against fairgate (TTL 2s)"
