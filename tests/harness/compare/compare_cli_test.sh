#!/usr/bin/env bash
# tide compare, end to end: an injected 20 % slowdown is flagged (exit 1), two
# samples of the same distribution are not (exit 0), bad input fails cleanly.
set -u
TIDE=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Nine repetitions around a center with ±1 % deterministic jitter.
gen() {  # file center
  local vals="" i
  for i in 0 1 2 3 4 5 6 7 8; do
    vals="$vals$(awk -v c="$2" -v i="$i" 'BEGIN{printf "%.6f", c*(1+0.01*sin(i*1.7+c))}'),"
  done
  printf '{"schema":"tide.bench.transport/1","samples":{"tcp_gbps":{"values":[%s],"unit":"gbps","better":"higher"}}}\n' "${vals%,}" >"$1"
}
gen "$dir/base.json" 10
gen "$dir/same.json" 10.02
gen "$dir/slow.json" 8

"$TIDE" compare "$dir/base.json" "$dir/same.json" >"$dir/out1" 2>&1
[ $? -eq 0 ] || { cat "$dir/out1"; fail "same build flagged"; }
grep -q '0 significant regression' "$dir/out1" || fail "no summary line"

"$TIDE" compare "$dir/base.json" "$dir/slow.json" --json "$dir/cmp.json" >"$dir/out2" 2>&1
[ $? -eq 1 ] || { cat "$dir/out2"; fail "20% slowdown not flagged with exit 1"; }
grep -q 'REGRESSED' "$dir/out2" || fail "no REGRESSED verdict"
grep -q '"verdict": "REGRESSED"' "$dir/cmp.json" || fail "JSON lacks verdict"

"$TIDE" compare "$dir/base.json" "$dir/slow.json" --no-fail >/dev/null 2>&1 || fail "--no-fail exited non-zero"
"$TIDE" compare "$dir/base.json" "$dir/slow.json" --threshold-for 'tcp=30' >/dev/null 2>&1 || fail "per-metric threshold ignored"

echo '{broken' >"$dir/bad.json"
out=$("$TIDE" compare "$dir/base.json" "$dir/bad.json" 2>&1)
rc=$?
[ $rc -ne 0 ] || fail "bad file accepted"
[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "bad file: more than one line: $out"
echo "$out" | grep -q 'not valid JSON' || fail "unclear error: $out"

# Bad input beyond the files: one line naming the problem, non-zero exit.
cbad() {  # expected-substring args...
  local want=$1; shift
  out=$("$TIDE" compare "$@" 2>&1) && fail "accepted: $*"
  [ "$(echo "$out" | wc -l)" -eq 1 ] || fail "not one line for $*: $out"
  echo "$out" | grep -q -- "$want" || fail "no '$want' for $*: $out"
}
sed 's/tcp_gbps/shm_gbps/' "$dir/base.json" >"$dir/other.json"
cbad "no metrics in common between $dir/base.json and $dir/other.json" \
  "$dir/base.json" "$dir/other.json"
cbad "no metrics in common" "$dir/base.json" "$dir/other.json" --no-fail
cbad "--threshold must be >= 0 (got -5)" "$dir/base.json" "$dir/same.json" --threshold -5
cbad "--plot /nonexistent/dir/x.png: directory /nonexistent/dir does not exist" \
  "$dir/base.json" "$dir/same.json" --plot /nonexistent/dir/x.png
# A failing plot script: its last stderr line, not the traceback.
mkdir "$dir/plots"
printf 'import sys\nprint("noise", file=sys.stderr)\nraise RuntimeError("no backend here")\n' \
  >"$dir/plots/history.py"
out=$(TIDE_PLOTS_DIR="$dir/plots" "$TIDE" compare "$dir/base.json" "$dir/same.json" \
  --plot "$dir/h0.png" 2>&1 >/dev/null) && fail "failing plot script accepted"
[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "plot failure: not one error line: $out"
echo "$out" | grep -q 'history.py failed (exit 1): RuntimeError: no backend here' ||
  fail "plot failure unclear: $out"

if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  "$TIDE" compare "$dir/base.json" "$dir/same.json" "$dir/slow.json" --no-fail --plot "$dir/h.png" >/dev/null 2>&1 || fail "plot failed"
  [ -s "$dir/h.png" ] || fail "no plot written"
else
  echo "plot: skipped: matplotlib not installed for /usr/bin/python3"
fi
echo "compare_cli_test: all checks passed"
