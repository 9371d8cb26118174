# Shared helpers of the e2e scenarios: counted checks and JSON fields.
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
