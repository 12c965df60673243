#!/usr/bin/env bash
# `make build`: builds BUILD_DIR; a clean build (no .ninja_log yet) is timed
# with /usr/bin/time into BUILD_DIR/.clean-build-time ("wall user sys", s),
# which scripts/check-build-budget.py holds against results/budgets/build.toml.
#   timed-build.sh BUILD_DIR JOBS
set -euo pipefail
BUILD=$1
JOBS=$2
if [ ! -f "$BUILD/.ninja_log" ] && [ -x /usr/bin/time ]; then
  /usr/bin/time -f "%e %U %S" -o "$BUILD/.clean-build-time.tmp" cmake --build "$BUILD" -j "$JOBS"
  mv "$BUILD/.clean-build-time.tmp" "$BUILD/.clean-build-time"
  read -r wall user sys < "$BUILD/.clean-build-time"
  echo "clean build: ${wall} s wall, user ${user} s + sys ${sys} s CPU on ${JOBS} jobs"
else
  cmake --build "$BUILD" -j "$JOBS"
fi
