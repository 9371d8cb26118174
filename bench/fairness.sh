#!/usr/bin/env bash
# The full-scale fairness simulation (docs/FAIRNESS.md, "How it is checked"):
# 100k in the pre-queue and 100k arriving over 10 minutes after the start,
# every strategy, for each seed and each queue order; then a summary across
# seeds. Each run is one `fairgate sim` process at nice 10 writing
# OUT/sim-ORDER-SEED.txt (the strategy table, the ordering table, the waits
# by arrival decile), OUT/sim-ORDER-SEED.svg (the plots) and
# OUT/sim-ORDER-SEED.time (its CPU time and peak memory, GNU time -v);
# OUT/sim-ORDER-SEED.err shows how far each run is (every 5 simulated
# minutes).
#
# Usage: bench/fairness.sh [OUT]          run what is missing, then summarise
#        bench/fairness.sh summary [OUT]  summarise what OUT holds
# OUT defaults to bench/out/fairness. A run whose .txt is complete is not run
# again, so the script can be stopped and restarted on a shared machine.
#   SEEDS="1 2 3"  ORDERS="lottery fifo"  seeds and orders, run seed by seed
#   JOBS=1         runs at once (each takes a core and 1-2 GB)
#   SIM_FLAGS="--mixed --skip-early-repeats"
#                  extra flags for every run. --mixed plays every strategy in
#                  one run next to the baseline (two runs instead of eight);
#                  --skip-early-repeats answers a strategy's repeated early
#                  attempt from the gateway's last early answer instead of
#                  sending it (docs/SIMULATION.md). SIM_FLAGS= gives one run
#                  per strategy with every request sent; add --parallel 2 to
#                  make a seed's two runs at once. Add e.g. "--prequeue 2000
#                  --arrivals 2000 --prequeue-span 1m --arrival-span 1m
#                  --rate 5" for a small check of the script.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=run
if [ "${1:-}" = summary ]; then mode=summary; shift; fi
OUT=${1:-bench/out/fairness}
SEEDS=${SEEDS:-1 2 3} ORDERS=${ORDERS:-lottery fifo} JOBS=${JOBS:-1}
SIM_FLAGS=${SIM_FLAGS---mixed --skip-early-repeats}
mkdir -p "$OUT"

complete() { grep -q '^plot written to' "$1" 2>/dev/null; }

run_one() {
  local order=$1 seed=$2 base="$OUT/sim-$1-$2"
  # shellcheck disable=SC2086 # SIM_FLAGS is a list of flags
  if nice -n 10 /usr/bin/time -v -o "$base.time" "$OUT/fairgate" sim --seed "$seed" --queue-order "$order" \
    --progress $SIM_FLAGS --plot "$base.svg" >"$base.txt.part" 2>"$base.err"; then
    mv "$base.txt.part" "$base.txt"
    echo "done: $order seed $seed ($(cpu_and_rss "$base.time"))"
  else
    echo "FAILED: $order seed $seed (see $base.err)" >&2
  fi
}

# cpu_and_rss FILE: "CPU m:ss, peak RSS N MB" from GNU time -v's output.
cpu_and_rss() {
  awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} /Maximum resident/ {r=$2}
    END {t=u+s; printf "%d:%02d CPU, peak RSS %d MB", t/60, t%60, r/1024}' "$1"
}

if [ "$mode" = run ]; then
  command -v /usr/bin/time >/dev/null || { echo "needs GNU time (apt-get install time)" >&2; exit 1; }
  go build -o "$OUT/fairgate" ./cmd/fairgate
  running=0
  for seed in $SEEDS; do
    for order in $ORDERS; do
      if complete "$OUT/sim-$order-$seed.txt"; then continue; fi
      echo "start: $order seed $seed"
      run_one "$order" "$seed" &
      running=$((running + 1))
      if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
    done
  done
  wait
fi

# The summary: one line per run, then each figure's range across seeds.
summarise() {
  local order=$1 files=()
  for seed in $SEEDS; do
    if complete "$OUT/sim-$order-$seed.txt"; then files+=("$OUT/sim-$order-$seed.txt"); else echo "  missing: $order seed $seed"; fi
  done
  [ "${#files[@]}" -gt 0 ] || return 0
  awk -v order="$order" '
    function dur(s,   t, n, u) { # 1h2m3.5s -> seconds
      t = 0
      while (match(s, /^[0-9.]+(h|ms|m|s)/)) {
        n = substr(s, 1, RLENGTH); s = substr(s, RLENGTH + 1)
        if (n ~ /ms$/) t += n / 1000; else if (n ~ /h$/) t += n * 3600; else if (n ~ /m$/) t += n * 60; else t += n
      }
      return t
    }
    function keep(name, x) {
      if (!(name in lo) || x < lo[name]) lo[name] = x
      if (!(name in hi) || x > hi[name]) hi[name] = x
      if (!(name in seen)) { names[++n] = name; seen[name] = 1 }
    }
    FNR == 1 { runs++ }
    /seed [0-9]+, through/ { match($0, /seed [0-9]+/); seed = substr($0, RSTART + 5, RLENGTH - 5) }
    /^sale lasted/ { keep("sale length (s)", dur($3)); keep("never admitted", $4 + 0); keep("honest tokens expired", $7 + 0) }
    /pre-queue: Spearman rho arrival/ { keep("pre-queue rho(arrival, admission)", $NF) }
    /after the start: rho arrival/ { keep("after-start rho(arrival, admission)", $NF) }
    /rho lottery number/ { keep("pre-queue rho(draw, admission)", $NF) }
    /admitted after the whole pre-queue/ { keep("later arrivals after the whole pre-queue (%)", $NF + 0) }
    /earlier of two arrivals/ { match($0, /arrivals [^ ]+ apart/); d = substr($0, RSTART + 9, RLENGTH - 15)
      match($0, /first: [0-9.]+/); keep("earlier-first share, " d " apart", substr($0, RSTART + 7, RLENGTH - 7)) }
    /queue held 10 s of it/ { match($0, /min [0-9.]+/); keep("rate while 10 s waited, min (%)", substr($0, RSTART + 4, RLENGTH - 4))
      match($0, /mean [0-9.]+/); keep("rate while 10 s waited, mean (%)", substr($0, RSTART + 5, RLENGTH - 5)) }
    /queue was not empty/ { match($0, /min [0-9.]+/); keep("rate while not empty, min (%)", substr($0, RSTART + 4, RLENGTH - 4)) }
    /waits \(median, p90, p99\)/ { split($0, w, /from the start |; later arrivals from arrival /); split(w[2], a, " "); split(w[3], b, " ")
      keep("pre-queue wait p50 (s)", dur(a[1])); keep("pre-queue wait p99 (s)", dur(a[3]))
      keep("later arrivals wait p50 (s)", dur(b[1])); keep("later arrivals wait p99 (s)", dur(b[3])) }
    /mean wait by arrival decile/ { sub(/.*after the start: /, ""); for (i = 1; i <= NF; i++) keep("mean wait, arrival decile " i " (s)", dur($i)) }
    /^  honest, control .* control: [0-9]+ groups/ {
      line = $0; sub(/^  honest, control +/, "", line); split(line, f, " ")
      keep("honest, control: median - twin median (s)", dur(f[3]) - dur(f[2]))
      keep("honest, control: p90 - twin p90 (s)", dur(f[5]) - dur(f[4]))
      match($0, /control: [0-9]+ groups/); keep("control groups", substr($0, RSTART + 9, RLENGTH - 16) + 0)
      match($0, /median [-+][0-9.]+ … [-+][0-9.]+%/); split(substr($0, RSTART + 7, RLENGTH - 8), m, " … ")
      keep("control groups: median shift, lowest (%)", m[1] + 0); keep("control groups: median shift, highest (%)", m[2] + 0)
      match($0, /p90 [-+][0-9.]+ … [-+][0-9.]+%/); split(substr($0, RSTART + 4, RLENGTH - 5), m, " … ")
      keep("control groups: p90 shift, lowest (%)", m[1] + 0); keep("control groups: p90 shift, highest (%)", m[2] + 0)
      next
    }
    /^  late presenter: lost at most / { v = $0; sub(/.*at most /, "", v); sub(/ .*/, "", v); keep("late presenter: most lost beyond its lateness (s)", dur(v)); next }
    /^  [a-z].* (gains nothing|within noise|GAINS|gains, for k proofs of work)$/ {
      line = $0; sub(/^  /, "", line); name = substr(line, 1, 20); sub(/ +$/, "", name)
      v = line; sub(/.*[0-9]s +/, "", v)
      split(substr(line, 21), f, " ")
      verdict[name] = verdict[name] sprintf("%s%s: %s", (name in vseen ? "; " : ""), seed, v)
      keep(name ": max gain (s)", dur(f[6]))
      keep(name ": median - twin median (s)", dur(f[3]) - dur(f[2]))
      keep(name ": p90 - twin p90 (s)", dur(f[5]) - dur(f[4]))
      if (!(name in vseen)) { vnames[++vn] = name; vseen[name] = 1 }
    }
    END {
      printf "%s, %d seed(s): range across seeds (min .. max)\n", order, runs
      for (i = 1; i <= n; i++) printf "  %-52s %12.4g .. %-12.4g\n", names[i], lo[names[i]], hi[names[i]]
      for (i = 1; i <= vn; i++) printf "  %-20s verdict by seed: %s\n", vnames[i], verdict[vnames[i]]
    }' "${files[@]}"
}

echo "fairness summary ($OUT; SIM_FLAGS=$SIM_FLAGS)"
for order in $ORDERS; do
  for seed in $SEEDS; do
    f="$OUT/sim-$order-$seed.time"
    if complete "$OUT/sim-$order-$seed.txt" && [ -f "$f" ]; then echo "  $order seed $seed: $(cpu_and_rss "$f")"; fi
  done
  summarise "$order"
done
