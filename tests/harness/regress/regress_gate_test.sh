#!/usr/bin/env bash
# The regression gate itself, as `make test` runs it: `tide regress check`
# against results/budgets/regressions.toml must pass. MODE `figures` checks
# the deterministic figures (simulator predictions, plans); MODE
# `instructions` the kernels' instruction counts under callgrind, which
# need valgrind and the build the baselines were recorded with.
#   regress_gate_test.sh TIDE SOURCE_DIR MODE BUILD_TYPE CXX_FLAGS
set -u
TIDE=$1
SRC=$2
MODE=$3
BUILD_TYPE=$4
CXX_FLAGS=$5
PY=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
budgets=$SRC/results/budgets/regressions.toml
[ -f "$budgets" ] || fail "no budgets file $budgets"

case $MODE in
  figures) only='^(sim|plan)\.' ;;
  instructions)
    only='^ir\.'
    if ! command -v valgrind > /dev/null; then
      echo "skipped: valgrind not installed (scripts/install-deps.sh installs it)"
      exit 77
    fi
    if [ "$BUILD_TYPE" != RelWithDebInfo ] || [[ "$CXX_FLAGS" == *-fsanitize* ]]; then
      echo "skipped: instruction counts need the default preset's build (RelWithDebInfo, no" \
           "sanitizer); this build: $BUILD_TYPE $CXX_FLAGS"
      exit 77
    fi
    ;;
  *) fail "unknown mode $MODE" ;;
esac

start=$(date +%s.%N)
"$TIDE" regress check --budgets "$budgets" --only "$only" --json "$dir/gate.json" \
    > "$dir/out" 2>&1
rc=$?
cat "$dir/out"
[ $rc -eq 0 ] || fail "the gate found metrics beyond their thresholds (exit $rc; see above)"
"$PY" - "$dir/gate.json" "$MODE" <<'PYEOF' || fail "gate JSON"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "tide.regress/1", j["schema"]
ctx = j["context"]
for k in ("host", "cpu_model", "cpus", "cpu_cores", "load_average", "kernel", "compiler",
          "build_type", "git_revision", "date"):
    assert k in ctx, k
rows = j["metrics"]
assert j["failed"] == 0 and not any(r["fails"] for r in rows)
want = {"figures": ("sim.", "plan."), "instructions": ("ir.",)}[sys.argv[2]]
assert rows and all(r["name"].startswith(want) for r in rows), [r["name"] for r in rows]
for p in want:  # every kind measured
    assert any(r["name"].startswith(p) for r in rows), p
print(f"{len(rows)} metrics within their thresholds; gate {j['seconds']:.1f} s "
      f"(callgrind {j['callgrind_seconds']:.1f} s)")
PYEOF
end=$(date +%s.%N)
echo "PASS ($MODE, $(awk "BEGIN{printf \"%.1f\", $end - $start}") s)"
