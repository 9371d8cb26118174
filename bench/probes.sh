#!/usr/bin/env bash
# The black-box fairness probe (e2e/fairness) over several seeds, orders
# and node counts, against `fairgate proxy` built from this tree; then,
# per target, how many runs met it. The README's test command runs one
# small run of each kind (e2e/fairness.sh), whose timing targets are
# within a single run's noise: this is how their rates are measured.
# Each run writes OUT/probe-ORDER-SCALE-Nn[-wWEIGHTS][-lLEAVERS]-SEED.txt
# (the probe's report) and .json (its raw results), OUT relative to the
# repository; a run whose report is complete is not run again, so the
# script can be stopped and restarted, and runs of other settings sit
# beside it.
#
# Usage: bench/probes.sh [OUT]          run what is missing, then summarise
#        bench/probes.sh summary [OUT]  summarise what OUT holds
# OUT defaults to bench/out/probes.
#   SEEDS="1 2 3 4"  ORDERS="lottery fifo"  NODES="1 3"
#   SCALE=small      small (rate 3/s, ~300 visitors) or medium (20/s, ~3,000)
#   LEAVERS=0.3      the share of visitors walking away, in fifo runs
#   WEIGHTS=         each node's share of the tabs (the probe's default)
#   JOBS=2           runs at once (a three-node small run takes about a
#                    core and four minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
source e2e/lib.sh

mode=run
if [ "${1:-}" = summary ]; then mode=summary; shift; fi
OUT=${1:-bench/out/probes}
SEEDS=${SEEDS:-1 2 3 4} ORDERS=${ORDERS:-lottery fifo} NODES=${NODES:-1 3}
SCALE=${SCALE:-small} LEAVERS=${LEAVERS:-0.3} WEIGHTS=${WEIGHTS:-} JOBS=${JOBS:-2}
mkdir -p "$OUT"

complete() { grep -q '^targets:' "$1" 2>/dev/null; }

run_all() {
  local bin=$OUT/fairgate probe=$OUT/probe ddb=""
  go build -o "$bin" ./cmd/fairgate
  go build -o "$probe" ./e2e/fairness
  for n in $NODES; do
    if [ "$n" -gt 1 ]; then ddb=$(dynamodb_dir); fi
  done
  local running=0
  for seed in $SEEDS; do
    for order in $ORDERS; do
      for n in $NODES; do
        local kind=$order-$SCALE-N$n
        if [ -n "$WEIGHTS" ] && [ "$n" -gt 1 ]; then kind+=-w${WEIGHTS//,/.}; fi
        if [ "$order" = fifo ]; then kind+=-l$LEAVERS; fi
        local base=$OUT/probe-$kind-$seed
        complete "$base.txt" && continue
        local args=(-repo . -bin "$bin" -scale "$SCALE" -order "$order" -seed "$seed" -nodes "$n" -json "$base.json")
        if [ "$order" = fifo ]; then args+=(-leavers "$LEAVERS"); fi
        if [ "$n" -gt 1 ]; then args+=(-dynamodb-jar "$ddb"); fi
        if [ -n "$WEIGHTS" ] && [ "$n" -gt 1 ]; then args+=(-weights "$WEIGHTS"); fi
        echo "running $(basename "$base")" >&2
        "$probe" "${args[@]}" > "$base.txt" 2>&1 &
        running=$((running + 1))
        if [ "$running" -ge "$JOBS" ]; then
          wait -n || true
          running=$((running - 1))
        fi
      done
    done
  done
  wait || true
}

# summary prints, for each order and node count, each target's runs met
# and the runs that failed it.
summary() {
  local reports=("$OUT"/probe-*.txt)
  if [ ! -e "${reports[0]}" ]; then
    echo "no reports in $OUT" >&2
    return 1
  fi
  for f in "${reports[@]}"; do
    complete "$f" || continue
    local run
    run=$(basename "$f" .txt)
    run=${run#probe-}
    sed -n '/^targets:/,$p' "$f" | awk -v kind="${run%-*}" -v seed="${run##*-}" '
      /^  (ok|FAILED|skipped) / {
        verdict = substr($0, 3, 7); sub(/ +$/, "", verdict)
        name = substr($0, 11); sub(/  +[^ ].*$/, "", name)
        print kind "\t" name "\t" verdict "\t" seed
      }'
  done | awk -F'\t' '
    {
      key = $1 "\t" $2
      if (!(key in runs)) order[++n] = key
      runs[key]++
      if ($3 == "ok") met[key]++; else failed[key] = failed[key] " " $4
    }
    END {
      printf "%-24s %-34s %5s  %s\n", "kind", "target", "met", "seeds failing"
      for (i = 1; i <= n; i++) {
        split(order[i], k, "\t")
        printf "%-24s %-34s %2d/%-2d %s\n", k[1], k[2], met[order[i]], runs[order[i]], failed[order[i]]
      }
    }'
}

if [ "$mode" = run ]; then
  run_all
fi
summary
