#!/usr/bin/env bash
# The three-node run at full scale: admissions within ±5% of the
# target over each minute, the race 1,000 times, restart, SIGKILL and
# DynamoDB down, with the store's request counts when the nodes expose them.
# Run once on a quiet machine and record its output in docs/SCALING.md.
#
#   RATE=100 WINDOWS=3 BLOCK=1 bash bench/cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source e2e/lib.sh
export CLUSTER_RATE="${RATE:-100}" CLUSTER_WINDOW="${WINDOW:-60s}" CLUSTER_WINDOWS="${WINDOWS:-3}"
export CLUSTER_RACES="${RACES:-1000}" CLUSTER_BLOCK="${BLOCK:-1}"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
go build -o "$W/fairgate" ./cmd/fairgate
go build -o "$W/cluster" ./e2e/cluster
ddb=$(dynamodb_dir)
"$W/cluster" -fairgate "$W/fairgate" -dynamodb-jar "$ddb" \
  -rate "$CLUSTER_RATE" -window "$CLUSTER_WINDOW" -windows "$CLUSTER_WINDOWS" -races "$CLUSTER_RACES" -block "$CLUSTER_BLOCK" -strict
