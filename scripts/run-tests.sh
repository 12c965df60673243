#!/usr/bin/env bash
# Runs the whole test suite: every ctest test except the `softroce` label
# directly (the `contention` label among them: the transport suite and the
# tcp/shm CLI tests again under a CPU hog), then the `softroce` label where
# RDMA can run (see docs/softroce.md). Then counts the skipped tests and
# fails on any skip whose reason is not on tests/skip-allowlist.txt (a skip
# stands only for a missing capability: no device, no root).
set -uo pipefail
BUILD=${1:-build}
JOBS=$(nproc)
cd "$(dirname "$0")/.."

results=$BUILD/test-results
rm -rf "$results"
mkdir -p "$results"
# Every Google Test binary writes its report here (one file per run).
export GTEST_OUTPUT="xml:$(cd "$results" && pwd)/"
ctest --test-dir "$BUILD" -LE softroce -j "$JOBS" --output-on-failure \
  --output-junit "$(cd "$results" && pwd)/ctest.xml"
rc=$?
if [ -x scripts/softroce-tests.sh ]; then
  bash scripts/softroce-tests.sh "$BUILD" || rc=1
fi
python3 scripts/check-skips.py tests/skip-allowlist.txt "$results" || rc=1
python3 scripts/check-build-budget.py results/budgets/build.toml "$BUILD" || rc=1
exit $rc
