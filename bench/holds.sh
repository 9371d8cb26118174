#!/usr/bin/env bash
# Seat holds before and after: bench/holds built from a base
# revision and from this work tree, run alternately PAIRS times with the
# same flags, each run printed, then the median of each row's holds/s and
# p99. Both builds run with the same flags when the base revision's
# bench knows -client (its clients then are this one's); against an older
# base the work tree's runs time the hold and its release together
# (-timed cycle), as that base does, and use Go's net/http client
# (-client net/http) as it does, without the HTTP ceiling it does not
# know, so the two are comparable.
# Usage: bench/holds.sh [flags both builds know: -store -endpoint -clients -hot]
#   BASE=20fa879 PAIRS=3 DUR=10s bench/holds.sh -store bolt -clients 256
#   BASE=main PAIRS=3 DUR=5s bench/holds.sh -store bolt -clients 64 -ceiling=false
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${BASE:-20fa879} PAIRS=${PAIRS:-3} DUR=${DUR:-10s}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir "$W/base"
git archive "$BASE" | tar -x -C "$W/base"
(cd "$W/base" && go build -o "$W/before" ./bench/holds)
go build -o "$W/after" ./bench/holds
AFTER=(-timed cycle -client net/http -ceiling=false)
usage=$("$W/before" -h 2>&1 || true)
if grep -q -- '-client' <<<"$usage"; then
  AFTER=()
fi

for i in $(seq "$PAIRS"); do
  echo "pair $i, before ($BASE):"
  "$W/before" -duration "$DUR" "$@" | grep '^| [a-z]' | grep -v '^| store' | tee -a "$W/before.rows"
  echo "pair $i, after:"
  "$W/after" -duration "$DUR" ${AFTER[@]+"${AFTER[@]}"} "$@" | grep '^| [a-z]' | grep -v '^| store' | tee -a "$W/after.rows"
done

# median prints, per row (store, load, clients), the median holds/s and
# p99 (Go durations: µs, ms or s) of its runs.
median() {
  awk -F'|' '
    function secs(d) {
      gsub(/ /, "", d)
      if (d ~ /µs$/) return substr(d, 1, length(d) - 2) / 1e6
      if (d ~ /ms$/) return substr(d, 1, length(d) - 2) / 1e3
      if (d ~ /s$/) return substr(d, 1, length(d) - 1)
      return d
    }
    { k = $2 "|" $3 "|" $4; n[k]++; h[k, n[k]] = $6; p[k, n[k]] = secs($8); if (!(k in seen)) { seen[k] = 1; order[++rows] = k } }
    function med(a, k, c,    i, j, t, v) {
      for (i = 1; i <= c; i++) v[i] = a[k, i] + 0
      for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      return c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
    }
    END { for (r = 1; r <= rows; r++) { k = order[r]; printf "|%s| %s runs | holds/s %.0f | p99 %.1f ms |\n", k, n[k], med(h, k, n[k]), 1000 * med(p, k, n[k]) } }
  ' "$1"
}
echo
echo "medians, before ($BASE):"
median "$W/before.rows"
echo "medians, after:"
median "$W/after.rows"
