# Shared helpers of the load scripts (sourced). Expects W (scratch dir),
# DUR, CONN and THREADS. SERVER_CPUS and WRK_CPUS (taskset lists, e.g. 0
# and 1) pin the servers and the load generator apart, so wrk does not
# compete with what it measures.

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$W"; }
trap cleanup EXIT

pin() { if [ -n "${1:-}" ]; then echo taskset -c "$1"; fi; }
start() { $(pin "${SERVER_CPUS:-}") "$@" >"$W/$(basename "$1").$RANDOM.log" 2>&1 & pids+=($!); }
wait_port() { for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0; sleep 0.1; done; echo "port $1 never answered" >&2; exit 1; }

# run URL [header…]: prints "requests/s p50 p99" from wrk --latency.
run() {
  local url=$1; shift
  local args=()
  for h in "$@"; do args+=(-H "$h"); done
  $(pin "${WRK_CPUS:-}") wrk -t"$THREADS" -c"$CONN" -d"$DUR" --latency "${args[@]}" "$url" > "$W/wrk.out"
  awk '/Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2} END {printf "%s %s %s\n", rps, p50, p99}' "$W/wrk.out"
}

# row NAME FAIRGATE-RESULT BASELINE-RESULT: one markdown table row.
row() {
  read -r frps fp50 fp99 <<<"$2"; read -r brps bp50 bp99 <<<"$3"
  printf "| %s | %.0f | %s | %.0f | %s | %.0f%% |\n" "$1" "$frps" "$fp99" "$brps" "$bp99" "$(echo "100*$frps/$brps" | bc -l)"
}

header() {
  echo "wrk -t$THREADS -c$CONN -d$DUR, $(nproc) cores, $(go version | cut -d' ' -f3), GOGC=${GOGC:-default}, servers on CPUs ${SERVER_CPUS:-any}, wrk on ${WRK_CPUS:-any}"
  echo
  echo "| path | fairgate req/s | fairgate p99 | baseline req/s | baseline p99 | ratio |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: |"
}
