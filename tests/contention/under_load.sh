#!/usr/bin/env bash
# Runs a command with the CPU contended: N+1 busy processes on N cores, at
# the command's own priority, started before it and stopped after it (each
# also ends by itself after TIDE_LOAD_SECONDS, default 900, should this
# script be killed). Exits with the command's status.
#
#   under_load.sh CMD [ARGS...]
set -u
[ $# -gt 0 ] || { echo "usage: under_load.sh CMD [ARGS...]"; exit 2; }
limit=${TIDE_LOAD_SECONDS:-900}
hogs=$(($(nproc) + 1))
pids=()
stop() {
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2> /dev/null
  wait "${pids[@]}" 2> /dev/null
}
trap stop EXIT
for _ in $(seq "$hogs"); do
  timeout "$limit" sh -c 'while :; do :; done' &
  pids+=($!)
done
echo "under_load: $hogs busy processes on $(nproc) cores"
"$@"
