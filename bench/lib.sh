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
# PORTS is a free block of ten loopback ports, PORTS0 to PORTS9 (the scripts' layouts
# append a digit), found at start so no run needs a fixed port free.
PORTS=$(python3 - <<'PY'
import random, socket
for _ in range(500):
    prefix = random.randrange(2000, 6000)
    held = []
    try:
        for i in range(10):
            s = socket.socket()
            s.bind(("127.0.0.1", prefix * 10 + i))
            held.append(s)
    except OSError:
        continue
    finally:
        for s in held:
            s.close()
    print(prefix)
    break
PY
)
[ -n "$PORTS" ] || { echo "no free block of ten loopback ports" >&2; exit 1; }
wait_port() { for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0; sleep 0.1; done; echo "port $1 never answered" >&2; exit 1; }

# answer URL [HEADER]: status line, headers and body as a client gets them,
# without the Date header (the one line two servers cannot share) and with
# a cache's Cache-Status ttl masked (it counts down between requests), the
# headers sorted: the same bytes on the wire in whatever order a server
# writes its header lines (net/http puts a Content-Length it computes
# elsewhere than one set by the handler).
answer() {
  local h=()
  if [ -n "${2:-}" ]; then h=(-H "$2"); fi
  curl -s -i "${h[@]}" "$1" | sed '/^[Dd]ate: /d; s/; ttl=[0-9]*/; ttl=N/' | python3 -c '
import sys
head, sep, body = sys.stdin.buffer.read().partition(b"\r\n\r\n")
lines = head.split(b"\r\n")
sys.stdout.buffer.write(b"\r\n".join(lines[:1] + sorted(lines[1:])) + sep + body)'
}

# same_answer NAME URL_A HEADER_A URL_B HEADER_B: stops the script unless
# the baseline B answers byte for byte what fairgate A answers.
same_answer() {
  # Three tries: a cached answer is a miss once per TTL, when it refreshes.
  for _ in 1 2 3; do
    cmp -s <(answer "$2" "$3") <(answer "$4" "$5") && return 0
    sleep 0.2
  done
  echo "$1: the baseline's answer is not byte-identical to fairgate's:" >&2
  diff <(answer "$2" "$3" | cat -v) <(answer "$4" "$5" | cat -v) >&2 || true
  exit 1
}

# run URL [HEADER [BODY]]: prints "requests/s p50 p99" from wrk --latency,
# the latencies in milliseconds. With a BODY, every request is a POST of it
# as application/json.
run() {
  local h=() s=()
  if [ -n "${2:-}" ]; then h=(-H "$2"); fi
  if [ -n "${3:-}" ]; then s=(-s "$W/post.lua"); export FG_BODY=$3; fi
  $(pin "${WRK_CPUS:-}") wrk -t"$THREADS" -c"$CONN" -d"$DUR" --latency "${h[@]}" "${s[@]}" "$1" > "$W/wrk.out"
  awk 'function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v + 0 }
       /Requests\/sec/ {rps=$2} /^ +50%/ {p50=ms($2)} /^ +99%/ {p99=ms($2)}
       END {printf "%s %.3f %.3f\n", rps, p50, p99}' "$W/wrk.out"
}

# median: the median of the numbers on stdin, one a line.
median() { sort -g | awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

# row NAME FRPS FP99 BRPS BP99 RATIO: one markdown table row.
row() { printf "| %s | %.0f | %.2f ms | %.0f | %.2f ms | %.0f%% |\n" "$@"; }

# compare NAME URL_A HEADER_A URL_B HEADER_B: checks that B answers what A
# does, then load_pairs.
compare() {
  same_answer "$@"
  load_pairs "$@"
}

# load_pairs NAME URL_A HEADER_A URL_B HEADER_B [BODY]: loads A and B in
# turn PAIRS times (POSTs of BODY if given); a row per pair, then the
# medians (the ratio's is the median of the pairs' ratios).
load_pairs() {
  local name=$1 frps fp50 fp99 brps bp50 bp99
  : > "$W/pairs"
  for i in $(seq "$PAIRS"); do
    read -r frps fp50 fp99 <<<"$(run "$2" "$3" "${6:-}")"
    read -r brps bp50 bp99 <<<"$(run "$4" "$5" "${6:-}")"
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

# The POST endpoints (the admit poll, the token endpoint) answer something
# new every time (a re-signed token, Retry-After), so their baselines
# replay one captured answer: the same status and headers, and a body of
# the same size give or take a digit or two (checked by same_size).

cat > "$W/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = os.getenv("FG_BODY")
wrk.headers["Content-Type"] = "application/json"
LUA

# post URL HEADER BODY: curl's answer to the POST that run sends.
post() {
  local h=(-H 'Content-Type: application/json')
  if [ -n "${2:-}" ]; then h+=(-H "$2"); fi
  curl -s -i -X POST "${h[@]}" --data-binary "$3" "$1"
}

# capture_post URL HEADER BODY FILE: saves fairgate's answer to the POST
# for a baseline to replay.
capture_post() { post "$1" "$2" "$3" > "$4"; }

# shape: the status, the header names sorted, and the body's size, of an
# answer on stdin.
shape() {
  tr -d '\r' | awk 'NR == 1 {print "status", $2; next}
    body {n += length($0) + 1; next}
    /^$/ {body = 1; next}
    {split($0, f, ":"); print "header", tolower(f[1])}
    END {print "body", n + 0}' | sort
}

# same_size NAME URL_A URL_B HEADER BODY: stops the script unless B answers
# the POST with A's status and headers and a body within 2% of A's size.
same_size() {
  local a b
  a=$(post "$2" "$4" "$5" | shape)
  b=$(post "$3" "$4" "$5" | shape)
  if ! cmp -s <(grep -v '^body' <<<"$a") <(grep -v '^body' <<<"$b") ||
    ! awk -v x="$(grep '^body' <<<"$a" | cut -d' ' -f2)" -v y="$(grep '^body' <<<"$b" | cut -d' ' -f2)" \
      'BEGIN {exit !(y > 0 && (x - y) / y < 0.02 && (y - x) / y < 0.02)}'; then
    echo "$1: the baseline does not answer like fairgate:" >&2
    diff <(echo "$a") <(echo "$b") >&2 || true
    exit 1
  fi
  echo "$1: bodies of $(grep '^body' <<<"$a" | cut -d' ' -f2) (fairgate) and $(grep '^body' <<<"$b" | cut -d' ' -f2) (baseline) bytes" >&2
}

# compare_post NAME URL_A URL_B HEADER BODY: compare for a POST, both
# sides sent the same header and body.
compare_post() {
  same_size "$@"
  load_pairs "$1" "$2" "$4" "$3" "$4" "$5"
}

# OPEN_RATE (default 10000) is the arrival rate of the open-loop rows.
OPEN_RATE=${OPEN_RATE:-10000}

# open_post NAME URL_A URL_B HEADER BODY: A and B in turn at a fixed
# arrival rate (targets open, latency from when each request was due),
# PAIRS times; a row per pair with both p50s and p99s, then the medians.
open_post() {
  local name=$1 a b
  : > "$W/open"
  for i in $(seq "$PAIRS"); do
    a=$($(pin "${WRK_CPUS:-}") "$W/targets" open -rate "$OPEN_RATE" -d "$DUR" -c "$CONN" -method POST -body "$5" \
      -H 'Content-Type: application/json' -H "$4" "$2")
    b=$($(pin "${WRK_CPUS:-}") "$W/targets" open -rate "$OPEN_RATE" -d "$DUR" -c "$CONN" -method POST -body "$5" \
      -H 'Content-Type: application/json' -H "$4" "$3")
    echo "$a $b" >> "$W/open"
    read -r ar a50 a99 aerr br b50 b99 berr <<<"$a $b"
    printf "| %s, pair %d | %.0f/s | %.2f ms | %.2f ms | %.0f/s | %.2f ms | %.2f ms | %.1f |\n" "$name" "$i" "$ar" "$a50" "$a99" "$br" "$b50" "$b99" "$(echo "$a99/$b99" | bc -l)"
  done
  local m=()
  for col in 1 2 3 5 6 7; do m+=("$(cut -d' ' -f"$col" "$W/open" | median)"); done
  printf "| **%s, median of %d** | %.0f/s | %.2f ms | %.2f ms | %.0f/s | %.2f ms | %.2f ms | %.1f |\n" "$name" "$PAIRS" "${m[@]}" "$(echo "${m[2]}/${m[5]}" | bc -l)"
}

open_header() {
  echo
  echo "open loop at $OPEN_RATE requests/s for $DUR, at most $CONN in flight, latency from when each request was due:"
  echo
  echo "| path | fairgate rate | p50 | p99 | baseline rate | p50 | p99 | p99 ratio |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
}
