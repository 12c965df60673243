#!/usr/bin/env bash
# scripts/check-skips.py: a skip with an allowed reason passes, one without
# (a missed figure, a broken rendezvous) fails the check, in Google Test and
# in ctest (exit 77) reports alike.
set -u
ROOT=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
check() { python3 "$ROOT/scripts/check-skips.py" "$ROOT/tests/skip-allowlist.txt" "$1"; }
mkdir "$dir/ok" "$dir/bad" "$dir/bad77"
cat > "$dir/ok/a.xml" <<'XML'
<testsuites><testsuite name="S">
<testcase name="Ran" classname="S"/>
<testcase name="Rdma" classname="S"><skipped message="skipped: no RDMA device (see docs)"/></testcase>
</testsuite></testsuites>
XML
cat > "$dir/ok/ctest.xml" <<'XML'
<testsuite name="ctest"><testcase name="netns" classname="netns" status="notrun">
<skipped/><system-out>skipped: needs root and iproute2 (ip, tc) to create network namespaces</system-out>
</testcase></testsuite>
XML
# As ctest 3.25 writes an exit-77 skip: the message names the mechanism only.
cat > "$dir/ok/ctest2.xml" <<'XML'
<testsuite name="ctest"><testcase name="gpu" classname="gpu" status="notrun">
<skipped message="SKIP_RETURN_CODE=77"/><system-out>skipped: no CUDA device
</system-out></testcase></testsuite>
XML
cp "$dir/ok/a.xml" "$dir/bad/"
cat > "$dir/bad/b.xml" <<'XML'
<testsuites><testsuite name="S">
<testcase name="Figure" classname="S"><skipped message="known gap: p2p 38 % too fast"/></testcase>
</testsuite></testsuites>
XML
cat > "$dir/bad77/ctest.xml" <<'XML'
<testsuite name="ctest"><testcase name="t" classname="t" status="notrun">
<skipped message="SKIP_RETURN_CODE=77"/><system-out>skipped: rendezvous refused</system-out></testcase></testsuite>
XML
out=$(check "$dir/ok") || { echo "$out"; fail "allowed skips were refused"; }
grep -q "skipped: 3 test(s), 3 allowed" <<<"$out" || { echo "$out"; fail "count"; }
out=$(check "$dir/bad") && { echo "$out"; fail "a skip for a missed figure passed"; }
grep -q "NOT ALLOWED: S.Figure: known gap" <<<"$out" || { echo "$out"; fail "not named"; }
out=$(check "$dir/bad77") && { echo "$out"; fail "a ctest skip without an allowed reason passed"; }
echo "PASS"
