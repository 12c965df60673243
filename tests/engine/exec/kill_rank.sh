# Sourced by the sync CLI tests (needs $TIDE and fail()).
# kill_a_rank LABEL OUT ARGS...: runs `tide sync ARGS` (ranks as launched
# processes), kills its last launched worker with SIGKILL about 1 s in, and
# checks that the run fails within 90 s with a `tide: error` line.
kill_a_rank() {
  local label=$1 out=$2
  shift 2
  local start pid victim rc took
  start=$(date +%s)
  "$TIDE" sync "$@" > "$out" 2>&1 &
  pid=$!
  victim=""
  for _ in $(seq 200); do
    victim=$(pgrep -P "$pid" | tail -1)
    [ -n "$victim" ] && break
    sleep 0.05
  done
  [ -n "$victim" ] || fail "no worker processes seen ($label)"
  sleep 1
  kill -9 "$victim" 2>/dev/null
  rc=0
  wait "$pid" || rc=$?
  took=$(( $(date +%s) - start ))
  [ "$rc" -ne 0 ] || { cat "$out"; fail "a killed rank went unnoticed ($label)"; }
  [ "$took" -lt 90 ] || fail "took ${took} s to fail ($label)"
  grep -q "tide: error" "$out" || { cat "$out"; fail "no error line ($label)"; }
  echo "$label: rank killed, run failed cleanly in ${took} s"
}
