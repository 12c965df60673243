#!/usr/bin/env bash
# Runs the ctest label `softroce` (RDMA tests) where RDMA can run:
#   - an RDMA device exists here (rxe or hardware): directly;
#   - the kernel has rdma_rxe but no device, and we are root: around
#     `softroce.sh up` / `down`;
#   - otherwise: all of them in ONE QEMU guest with two rxe devices
#     (`softroce.sh run --devices 2`), booted once.
# Only an environment where none of this is possible (no QEMU, no way to get
# a Debian kernel package) is reported as skipped; a guest that fails to come
# up is a failure. Ends with one summary line.
#
#   softroce-tests.sh [BUILD]     (default: build)
# Env: TIDE_SOFTROCE_TIMEOUT (s, default 1800), TIDE_SOFTROCE_CTEST_ARGS.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SR=$ROOT/scripts/softroce.sh
BUILD=${1:-build}
[ -d "$BUILD" ] || { echo "softroce tests: FAILED: no build directory $BUILD"; exit 1; }
BUILD=$(cd "$BUILD" && pwd -P)
TIMEOUT=${TIDE_SOFTROCE_TIMEOUT:-1800}
T0=$(date +%s)

summary() { echo "softroce tests: $* ($(($(date +%s) - T0)) s)"; }

count=$(ctest --test-dir "$BUILD" -N -L softroce 2>/dev/null | sed -n 's/^Total Tests: //p')
count=${count:-0}
# With no softroce test in the build (configured before tests/softroce
# existed), the smoke script alone still proves the RDMA environment.
if [ "$count" -gt 0 ]; then
  # shellcheck disable=SC2206  # extra ctest arguments are meant to split
  cmd=(ctest --test-dir "$BUILD" -L softroce --output-on-failure ${TIDE_SOFTROCE_CTEST_ARGS:-})
  what="ctest -L softroce ($count test(s))"
else
  cmd=(bash "$ROOT/tests/softroce/smoke.sh")
  what="the RDMA smoke test (no ctest test labelled softroce in $BUILD)"
fi

check=$(bash "$SR" check)
mode=$(sed -n 's/^mode: //p' <<<"$check")
why=$(sed -n 's/^why: //p' <<<"$check")
echo "softroce tests: mode $mode: $why"

rc=0
case $mode in
  hardware | native-rxe)
    created=0
    if ! ls /sys/class/infiniband/* >/dev/null 2>&1; then
      if [ "$(id -u)" -ne 0 ]; then
        summary "skipped: kernel has rdma_rxe but no device exists and creating one needs root (scripts/softroce.sh up)"
        exit 0
      fi
      bash "$SR" up || { summary "FAILED: scripts/softroce.sh up"; exit 1; }
      created=1
    fi
    "${cmd[@]}" || rc=$?
    [ $created -eq 1 ] && { bash "$SR" down || rc=1; }
    ;;
  guest)
    share=()
    # The build tree must be writable in the guest (ctest writes its logs).
    case $BUILD/ in
      "$ROOT"/*) ;;
      *) share=(--share "$BUILD") ;;
    esac
    bash "$SR" run --devices 2 --timeout "$TIMEOUT" --workdir "$ROOT" "${share[@]}" -v -- "${cmd[@]}" || rc=$?
    ;;
  *)
    summary "skipped: $why"
    exit 0
    ;;
esac

case $rc in
  0) summary "passed: $what, mode $mode" ;;
  124) summary "FAILED: timed out after $TIMEOUT s in the guest: $what" ;;
  125) summary "FAILED: the guest could not be set up (see the softroce: line above)" ;;
  *) summary "FAILED (exit $rc): $what, mode $mode" ;;
esac
[ $rc -eq 0 ] || exit 1
