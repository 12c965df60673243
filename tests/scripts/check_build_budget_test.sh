#!/usr/bin/env bash
# scripts/check-build-budget.py: a clean build within its budget passes, one
# beyond it fails and shows the host's reference compile beside the recorded
# one; a timing without the reference is still checked; a malformed timing
# fails; a build that was not clean here is reported as not checked.
set -u
ROOT=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
check() { python3 "$ROOT/scripts/check-build-budget.py" "$dir/budget.toml" "$1"; }
cat > "$dir/budget.toml" <<'TOML'
cpu_seconds = 1000
tolerance_percent = 15
reference_seconds = 5.0
TOML
mkdir "$dir/ok" "$dir/grown" "$dir/noref" "$dir/bad" "$dir/none"
echo "500 900 100 5.0" > "$dir/ok/.clean-build-time"     # at the budget
echo "600 1100 100 6.0" > "$dir/grown/.clean-build-time" # +20 %, host 20 % slower
echo "500 1050 50" > "$dir/noref/.clean-build-time"      # +10 %, no reference
echo "500 900" > "$dir/bad/.clean-build-time"
check "$dir/ok" | grep -q ": ok$" || fail "a build at its budget did not pass"
out=$(check "$dir/grown") && fail "a build 20 % over its budget passed: $out"
echo "$out" | grep -q "FAIL" || fail "no FAIL verdict: $out"
echo "$out" | grep -q "reference compile 6.00 s CPU, recorded 5.00 s (+20 %)" \
  || fail "the host's reference compile is not shown: $out"
check "$dir/noref" | grep -q ": ok$" || fail "a timing without the reference was not checked"
out=$(check "$dir/bad") && fail "a malformed timing passed: $out"
check "$dir/none" | grep -q "not checked" || fail "a build that was not clean was not reported"
echo "ok: check-build-budget.py"
