#!/usr/bin/env bash
# Runs the whole test suite: every ctest test except the `softroce` label
# directly, then the `softroce` label where RDMA can run (see docs/softroce.md).
set -uo pipefail
BUILD=${1:-build}
JOBS=$(nproc)
cd "$(dirname "$0")/.."

ctest --test-dir "$BUILD" -LE softroce -j "$JOBS" --output-on-failure
rc=$?
if [ -x scripts/softroce-tests.sh ]; then
  bash scripts/softroce-tests.sh "$BUILD" || rc=1
fi
exit $rc
