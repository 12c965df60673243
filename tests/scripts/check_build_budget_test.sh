#!/usr/bin/env bash
# scripts/check-build-budget.py: a clean build within its budget passes, one
# beyond it fails, in units of the reference compile (so the same build on a
# host twice as slow passes); a timing without the reference or a reference
# of 0 s fails; a build that was not clean here is reported as not checked.
set -u
ROOT=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
check() { python3 "$ROOT/scripts/check-build-budget.py" "$dir/budget.toml" "$1"; }
cat > "$dir/budget.toml" <<'TOML'
reference_units = 100.0
tolerance_percent = 15
TOML
mkdir "$dir/ok" "$dir/slow-host" "$dir/grown" "$dir/old" "$dir/zero" "$dir/none"
echo "500 900 100 10" > "$dir/ok/.clean-build-time"           # 100 units
echo "1000 1800 200 20" > "$dir/slow-host/.clean-build-time"  # 100 units, host 2x slower
echo "600 1100 100 10" > "$dir/grown/.clean-build-time"       # 120 units: +20 %
echo "500 900 100" > "$dir/old/.clean-build-time"
echo "500 900 100 0" > "$dir/zero/.clean-build-time"
check "$dir/ok" | grep -q ": ok$" || fail "a build at its budget did not pass"
check "$dir/slow-host" | grep -q ": ok$" || fail "the same build on a slower host did not pass"
out=$(check "$dir/grown") && fail "a build 20 % over its budget passed: $out"
echo "$out" | grep -q "FAIL" || fail "no FAIL verdict: $out"
out=$(check "$dir/old") && fail "a timing without the reference passed: $out"
out=$(check "$dir/zero") && fail "a reference of 0 s passed: $out"
check "$dir/none" | grep -q "not checked" || fail "a build that was not clean was not reported"
echo "ok: check-build-budget.py"
