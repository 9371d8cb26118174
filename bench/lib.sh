# Shared helpers of the load scripts (sourced from the repository's root).
# DUR, CONN and THREADS are wrk's duration, connections and threads; W is
# a scratch directory removed at exit. SERVER_CPUS and WRK_CPUS (taskset lists, e.g. 0
# and 1) pin the servers and the load generator apart, so wrk does not
# compete with what it measures.
#
# Every process the scripts start runs with the same garbage-collector
# setting, GOGC=off with GOMEMLIMIT=256MiB unless overridden: each collects
# when its heap reaches the same size, so a baseline with a tiny live heap
# does not collect several times as often as fairgate with its caches.
# PAIRS (default 3) is how many times each comparison runs A then B.

command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)" >&2; exit 1; }
DUR=${DUR:-10s} CONN=${CONN:-64} THREADS=${THREADS:-1}
W=$(mktemp -d)
GOGC=${GOGC:-off} GOMEMLIMIT=${GOMEMLIMIT:-256MiB}
PAIRS=${PAIRS:-3}

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$W"; }
trap cleanup EXIT

pin() { if [ -n "${1:-}" ]; then echo taskset -c "$1"; fi; }
start() { $(pin "${SERVER_CPUS:-}") env GOGC="$GOGC" GOMEMLIMIT="$GOMEMLIMIT" "$@" >"$W/$(basename "$1").$RANDOM.log" 2>&1 & pids+=($!); }
wait_port() { for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0; sleep 0.1; done; echo "port $1 never answered" >&2; exit 1; }

# answer URL [HEADER]: status line, headers and body as a client gets them,
# without the Date header (the one line two servers cannot share).
answer() {
  local h=()
  if [ -n "${2:-}" ]; then h=(-H "$2"); fi
  curl -s -i "${h[@]}" "$1" | sed '/^[Dd]ate: /d'
}

# same_answer NAME URL_A HEADER_A URL_B HEADER_B: stops the script unless
# the baseline B answers byte for byte what fairgate A answers.
same_answer() {
  if ! cmp -s <(answer "$2" "$3") <(answer "$4" "$5"); then
    echo "$1: the baseline's answer is not byte-identical to fairgate's:" >&2
    diff <(answer "$2" "$3" | cat -v) <(answer "$4" "$5" | cat -v) >&2 || true
    exit 1
  fi
}

# run URL [HEADER]: prints "requests/s p50 p99" from wrk --latency, the
# latencies in milliseconds.
run() {
  local h=()
  if [ -n "${2:-}" ]; then h=(-H "$2"); fi
  $(pin "${WRK_CPUS:-}") wrk -t"$THREADS" -c"$CONN" -d"$DUR" --latency "${h[@]}" "$1" > "$W/wrk.out"
  awk 'function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v + 0 }
       /Requests\/sec/ {rps=$2} /^ +50%/ {p50=ms($2)} /^ +99%/ {p99=ms($2)}
       END {printf "%s %.3f %.3f\n", rps, p50, p99}' "$W/wrk.out"
}

# median: the median of the numbers on stdin, one a line.
median() { sort -g | awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

# row NAME FRPS FP99 BRPS BP99 RATIO: one markdown table row.
row() { printf "| %s | %.0f | %.2f ms | %.0f | %.2f ms | %.0f%% |\n" "$@"; }

# compare NAME URL_A HEADER_A URL_B HEADER_B: checks that B answers what A
# does, then loads A and B in turn PAIRS times; a row per pair, then the
# medians (the ratio's is the median of the pairs' ratios).
compare() {
  same_answer "$@"
  local name=$1 frps fp50 fp99 brps bp50 bp99
  : > "$W/pairs"
  for i in $(seq "$PAIRS"); do
    read -r frps fp50 fp99 <<<"$(run "$2" "$3")"
    read -r brps bp50 bp99 <<<"$(run "$4" "$5")"
    echo "$frps $fp99 $brps $bp99 $(echo "100*$frps/$brps" | bc -l)" >> "$W/pairs"
    row "$name, pair $i" "$frps" "$fp99" "$brps" "$bp99" "$(echo "100*$frps/$brps" | bc -l)"
  done
  local m=()
  for col in 1 2 3 4 5; do m+=("$(cut -d' ' -f"$col" "$W/pairs" | median)"); done
  row "**$name, median of $PAIRS**" "${m[@]}"
}

# capture_waiting URL: saves the waiting answers of URL, HTML and JSON, as
# $W/waiting.html and $W/waiting.json for the baselines to replay.
capture_waiting() {
  "$W/targets" capture "$1" text/html "$W/waiting.html"
  "$W/targets" capture "$1" application/json "$W/waiting.json"
}

# compare_front_door PORTS PAGE_BASELINE PROXY_BASELINE: the comparisons both
# front doors share, on one port layout: PORTS0 is fairgate, PORTS2 the
# reverse proxy alone, PORTS3 and PORTS4 the waiting page's HTML and JSON
# answers from a baseline; $pass is a valid pass for the room `bench`.
compare_front_door() {
  local p=http://127.0.0.1:$1 cookie="Cookie: fairgate_pass_bench=$pass"
  compare "waiting page, HTML (vs $2)" "${p}0/tickets" 'Accept: text/html' "${p}3/tickets" 'Accept: text/html'
  compare "waiting, JSON 429 (vs $2)" "${p}0/tickets" 'Accept: application/json' "${p}4/tickets" 'Accept: application/json'
  compare "admitted, pass verified (vs $3)" "${p}0/page" "$cookie" "${p}2/page" "$cookie"
}

header() {
  echo "wrk -t$THREADS -c$CONN -d$DUR, $PAIRS pairs A,B alternating, $(nproc) cores, $(go version | cut -d' ' -f3), GOGC=$GOGC GOMEMLIMIT=$GOMEMLIMIT in every process, servers on CPUs ${SERVER_CPUS:-any}, wrk on ${WRK_CPUS:-any}"
  echo
  echo "| path | fairgate req/s | fairgate p99 | baseline req/s | baseline p99 | ratio |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: |"
}
