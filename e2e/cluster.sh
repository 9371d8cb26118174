#!/usr/bin/env bash
# The room on several nodes and across restarts (with restart faults),
# against real processes: e2e/cluster (the driver) starts
# DynamoDB Local with a data directory on a free port, `fairgate proxy
# init-tables`, a tiny origin and three `fairgate proxy` nodes on one room
# with state_store dynamodb, and runs a crowd spread 60/30/10 over them
# (a fourth node started while DynamoDB is down included); then one `fairgate
# proxy` node on its default store (a bolt file) through a restart and a
# SIGKILL under load; then three `caddy run` processes (the Caddy module)
# on one room through DynamoDB Local, shorter: race, clock, pause, one
# 10 s window at ±10 %; then the capacity run: three `fairgate proxy` nodes
# on a room sized by `capacity` (120, rate 20 its ceiling, active_window 5s),
# visitors who stay and present their pass to their own node every second,
# three 10 s windows at ±10 % after the site fills (about 70 s;
# CLUSTER_CAPACITY=0 skips it). Run by e2e/run.sh (which sets FAIRGATE and CADDY);
# alone it builds what it needs. The CI scale is small (2 windows of 20 s at
# 20 admissions/s, 1,000 races); bench/cluster.sh is the full one.
set -euo pipefail
cd "$(dirname "$0")/.."
source e2e/lib.sh
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
if [ -z "${FAIRGATE:-}" ]; then
  go build -o "$W/fairgate" ./cmd/fairgate
  FAIRGATE="$W/fairgate"
fi
if [ -z "${CADDY:-}" ]; then
  go run ./e2e/build xcaddy.json "$W/caddy"
  CADDY="$W/caddy"
fi
go build -o "$W/cluster" ./e2e/cluster
ddb=$(dynamodb_dir)
status=0
echo "-- three fairgate proxy nodes, one room, state_store dynamodb (DynamoDB Local)"
"$W/cluster" -fairgate "$FAIRGATE" -dynamodb-jar "$ddb" \
  -rate "${CLUSTER_RATE:-20}" -window "${CLUSTER_WINDOW:-20s}" -windows "${CLUSTER_WINDOWS:-2}" \
  -races "${CLUSTER_RACES:-1000}" -block "${CLUSTER_BLOCK:-1}" || status=1
echo "-- one fairgate proxy node on its default store (bolt file): restart and SIGKILL under load"
"$W/cluster" -fairgate "$FAIRGATE" -store bolt -weights 1 -window 10s -windows 1 -warmup 3s || status=1
echo "-- three Caddy processes (the waiting_room module), one room, state_store dynamodb (DynamoDB Local)"
"$W/cluster" -caddy "$CADDY" -fairgate "$FAIRGATE" -dynamodb-jar "$ddb" \
  -rate "${CLUSTER_RATE:-20}" -window 10s -windows 1 -warmup 10s -tolerance 0.10 \
  -races "${CADDY_RACES:-200}" -block "${CLUSTER_BLOCK:-1}" || status=1
if [ "${CLUSTER_CAPACITY:-120}" != 0 ]; then
  echo "-- three fairgate proxy nodes, a room sized by capacity, visitors who stay (DynamoDB Local)"
  "$W/cluster" -fairgate "$FAIRGATE" -dynamodb-jar "$ddb" \
    -capacity "${CLUSTER_CAPACITY:-120}" -rate 20 -active-window 5s -window 10s -windows "${CLUSTER_CAPACITY_WINDOWS:-3}" \
    -tolerance 0.10 || status=1
fi
exit "$status"
