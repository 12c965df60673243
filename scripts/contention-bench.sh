#!/usr/bin/env bash
# The tcp transport under CPU contention: runs
#   tide bench transport --backend tcp --size 8MiB --block 256KiB --streams 2 --repetitions 3
# RUNS times (default 200) with N+1 busy processes on N cores
# (tests/contention/under_load.sh) and counts the runs that fail. Prints the
# first error lines of each failure and one summary line; exits 1 on any.
#
#   contention-bench.sh [BUILD] [RUNS]
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
RUNS=${2:-200}
TIDE=$BUILD/tide
[ -x "$TIDE" ] || { echo "contention-bench: no $TIDE (build first)"; exit 2; }
cmd=("$TIDE" bench transport --backend tcp --size 8MiB --block 256KiB --streams 2 --repetitions 3
     --no-reference)
inner() {
  local fails=0 t0=$SECONDS
  for i in $(seq 1 "$RUNS"); do
    if ! out=$(timeout 120 "${cmd[@]}" 2>&1); then
      fails=$((fails + 1))
      echo "run $i failed: $(tail -2 <<<"$out")"
    fi
    [ $((i % 50)) -eq 0 ] && echo "... $i runs, $fails failed"
  done
  echo "contention-bench: $fails of $RUNS runs failed ($(nproc) cores, $(($(nproc) + 1)) busy processes, $((SECONDS - t0)) s): ${cmd[*]#"$BUILD/"}"
  [ "$fails" -eq 0 ]
}
export RUNS BUILD
bash "$ROOT/tests/contention/under_load.sh" bash -c "$(declare -p cmd); $(declare -f inner); inner"
