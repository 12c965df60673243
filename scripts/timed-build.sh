#!/usr/bin/env bash
# `make build`: builds BUILD_DIR; a clean build (no .ninja_log yet) is timed
# with /usr/bin/time into BUILD_DIR/.clean-build-time ("wall user sys ref",
# s), which scripts/check-build-budget.py holds against
# results/budgets/build.toml. `ref` is the CPU seconds of the reference
# compile (scripts/build-reference.cc) on this host, the median of three
# around the build: the check shows it beside the recorded one.
#   timed-build.sh BUILD_DIR JOBS
set -euo pipefail
BUILD=$1
JOBS=$2
HERE=$(cd "$(dirname "$0")" && pwd)

# CPU seconds (user + sys) of one reference compile, with the build's compiler.
reference_cpu() {
  local cxx
  cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
  /usr/bin/time -f "%U %S" -o "$BUILD/.reference-time" \
    "${cxx:-c++}" -std=c++20 -O2 -g1 -c "$HERE/build-reference.cc" -o "$BUILD/.reference.o"
  awk '{ printf "%.2f\n", $1 + $2 }' "$BUILD/.reference-time"
}

if [ ! -f "$BUILD/.ninja_log" ] && [ -x /usr/bin/time ]; then
  # Twice before the build and once after, the median: one compile of ~5 s
  # varied by 40 % on an idle virtual machine.
  a=$(reference_cpu)
  b=$(reference_cpu)
  /usr/bin/time -f "%e %U %S" -o "$BUILD/.clean-build-time.tmp" cmake --build "$BUILD" -j "$JOBS"
  c=$(reference_cpu)
  ref=$(printf '%s\n%s\n%s\n' "$a" "$b" "$c" | sort -g | sed -n 2p)
  rm -f "$BUILD/.reference-time" "$BUILD/.reference.o"
  echo "$(cat "$BUILD/.clean-build-time.tmp") $ref" > "$BUILD/.clean-build-time"
  rm -f "$BUILD/.clean-build-time.tmp"
  read -r wall user sys ref < "$BUILD/.clean-build-time"
  echo "clean build: ${wall} s wall, user ${user} s + sys ${sys} s CPU on ${JOBS} jobs" \
    "(reference compile ${ref} s CPU)"
else
  cmake --build "$BUILD" -j "$JOBS"
fi
