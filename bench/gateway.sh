#!/usr/bin/env bash
# Side-by-side load benchmarks of `fairgate proxy` (issue 3), on loopback,
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

start "$W/targets" origin 127.0.0.1:18081; wait_port 18081
start "$W/fairgate" proxy --listen 127.0.0.1:18080 --upstream http://127.0.0.1:18081 --config "$W/config.json" \
  --admin 127.0.0.1:18089 --admin-token bench; wait_port 18080
start "$W/targets" baseline 127.0.0.1:18082 http://127.0.0.1:18081; wait_port 18082
# The baselines replay fairgate's own answers from memory.
capture_waiting http://127.0.0.1:18080/tickets
"$W/targets" capture http://127.0.0.1:18080/api/sections/A '*/*' "$W/seatmap"
start "$W/targets" replay 127.0.0.1:18083 "$W/waiting.html"; wait_port 18083
start "$W/targets" replay 127.0.0.1:18084 "$W/waiting.json"; wait_port 18084
start "$W/targets" replay 127.0.0.1:18085 "$W/seatmap"; wait_port 18085
pass=$("$W/targets" pass "$W/config.json" bench)

header
compare_front_door 1808 "its bytes from memory" "httputil.ReverseProxy alone"
before=$(curl -s http://127.0.0.1:18081/reads)
compare "cached seat map (vs its bytes from memory)" \
  http://127.0.0.1:18080/api/sections/A '' http://127.0.0.1:18085/api/sections/A ''
after=$(curl -s http://127.0.0.1:18081/reads)
echo
echo "cached seat map: $((after - before)) upstream reads during its $((2 * PAIRS)) runs of $DUR, half of them against fairgate (TTL 2s)"
