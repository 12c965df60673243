#!/usr/bin/env bash
# A short regression check against results/baseline/ (part of `make test`):
# runs a few delta codec benchmarks 9 times and compares them with the
# committed baseline. It reports but does not fail on a regression
# (--no-fail: the baseline comes from another machine of the class, and a
# loaded CI box is noisy); it fails when the comparison itself cannot run.
set -u
BENCH=$1
TIDE=$2
SRC=$3
base=$SRC/results/baseline/delta.json
# Both ship with the tree and its build: missing is a broken checkout, not
# a missing capability, so it fails.
[ -f "$base" ] || { echo "FAIL: no baseline $base"; exit 1; }
[ -x "$BENCH" ] || { echo "FAIL: $BENCH not built"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The same filter, repetitions and minimum time as the baseline (results/baseline/README.md).
"$BENCH" --benchmark_filter='/(10|100)/' --benchmark_repetitions=9 --benchmark_min_time=0.02 \
  --benchmark_out_format=json --benchmark_out="$dir/new.json" > /dev/null 2>&1 \
  || { echo "FAIL: benchmark run"; exit 1; }
"$TIDE" compare --no-fail "$base" "$dir/new.json" --json "$dir/cmp.json" \
  || { echo "FAIL: tide compare exited non-zero with --no-fail"; exit 1; }
/usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j, 'empty comparison'" "$dir/cmp.json" \
  || { echo "FAIL: no comparison written"; exit 1; }
echo "PASS (report only)"
