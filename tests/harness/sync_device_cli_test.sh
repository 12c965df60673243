#!/usr/bin/env bash
# `tide sync --device-memory` end to end, ranks as launched processes.
#   host: runs everywhere. Bad input gets one line and exit 1; with host
#         memory standing in for the device (--device-memory-impl host), p2p
#         over shm and broadcast over tcp, per tensor and bucketed, are
#         verified bit-exact and a corrupted replica fails the run; the real
#         --device-memory either runs (a CUDA device) or exits 77 with the
#         one line "tide: skipped: no CUDA device" (or "built without CUDA").
#   gpu:  the real thing: shards in CUDA memory, p2p and broadcast over shm
#         and tcp, per tensor and bucketed, bit-exact from GPU to GPU; exit 77
#         (skipped) without a device.
set -u
TIDE=$1
MODE=${2:-host}
PY=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
small=(--model tiny-moe --train tp=2,pp=2,ep=2 --infer engines=2,tp=2,ep=2
       --cluster h100-ib-8x400:nodes=2 --bucket 64KiB --chunk 16KiB --streams 1 --timeout 60
       --ranks processes)

check_json() {  # file strategy staging memory
  "$PY" - "$@" <<'PYEOF' || fail "json $1"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["strategy"] == sys.argv[2], j["strategy"]
assert j["verified"] is True and j["verification"]["outcome"] == "bit-exact", j["verification"]
v = j["verification"]
assert v["verified_bytes"] == v["expected_bytes"] > 0, v
d = j["device_memory"]
assert d["memory"] == sys.argv[4] and d["staging"] == sys.argv[3], d
assert d["bucket_bytes"] == (65536 if sys.argv[3] == "bucketed" else 0), d
if sys.argv[4] == "cuda":
    assert d["gpu"]["name"] and d["gpu"]["driver_version"], d
assert all(s["seconds"] > 0 and s["bytes"] > 0 for s in j["steps"])
# Both staging copies are timed, inside the step.
assert all(0 < s["stage_out_seconds"] <= s["seconds"] and 0 < s["stage_in_seconds"] <= s["seconds"]
           for s in j["steps"]), j["steps"]
PYEOF
}

# One update run per (strategy, backend, staging); $1: the shard memory.
runs() {
  local impl=$1
  for cfg in "p2p shm per-tensor" "p2p tcp bucketed" "broadcast tcp per-tensor" \
             "broadcast shm bucketed"; do
    set -- $cfg
    "$TIDE" sync "${small[@]}" --strategy $1 --backend $2 --steps 2 --poison --device-memory \
        --device-memory-impl $impl --staging $3 --staging-bucket 64KiB --json "$dir/$1_$2.json" \
        > "$dir/out" 2>&1 || { cat "$dir/out"; fail "$impl $cfg"; }
    grep -q "device    shards in $impl memory, staged $3" "$dir/out" ||
      { cat "$dir/out"; fail "no device line: $impl $cfg"; }
    check_json "$dir/$1_$2.json" $1 $3 $impl
  done
}

if [ "$MODE" = gpu ]; then
  out=$("$TIDE" sync "${small[@]}" --strategy p2p --steps 1 --device-memory 2>&1); rc=$?
  if [ $rc = 77 ]; then
    echo "$out" | grep "skipped: " | tail -1 | sed 's/^tide: //'
    exit 77
  fi
  runs cuda
  echo "PASS (cuda)"
  exit 0
fi

bad() {  # expected-substring args... (exit 1; TIDE_WANT_RC=2 for a usage error)
  local want=$1; shift
  "$TIDE" sync "${small[@]}" "$@" > "$dir/out" 2>&1; local rc=$?
  [ $rc = "${TIDE_WANT_RC:-1}" ] || { cat "$dir/out"; fail "exit $rc for: $*"; }
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "not one line: $*"; }
  grep -q -- "$want" "$dir/out" || { cat "$dir/out"; fail "no '$want' for: $*"; }
}
bad "--device-memory takes full updates" --device-memory --sparse
bad "--device-memory takes full updates" --device-memory --strategy store
bad "drop --switch" --device-memory --switch shadow
# A name that is not a choice is a usage error, found while parsing.
TIDE_WANT_RC=2 bad "--staging must be per-tensor or bucketed" --device-memory --staging sideways
bad "--staging-streams must be 1..64" --device-memory --staging-streams 0
bad "--staging-bucket must be > 0" --device-memory --staging-bucket 0

runs host

# A replica corrupted after the transfer reaches the device and fails there.
"$TIDE" sync "${small[@]}" --strategy broadcast --backend shm --steps 1 --device-memory \
    --device-memory-impl host --corrupt-rank 5 --json "$dir/c.json" > "$dir/out" 2>&1 &&
  { cat "$dir/out"; fail "corrupted replica passed"; }
grep -q "not bit-exact on rank 5" "$dir/out" && grep -q "in host memory" "$dir/out" ||
  { cat "$dir/out"; fail "corruption not named"; }

# The real device memory: runs where a CUDA device is, else one skip line.
"$TIDE" sync "${small[@]}" --strategy p2p --steps 1 --device-memory --json "$dir/g.json" \
  > "$dir/out" 2>&1; rc=$?
if [ $rc = 77 ]; then
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "skip: not one line"; }
  grep -Eq "^tide: skipped: (no CUDA device|built without CUDA)" "$dir/out" ||
    { cat "$dir/out"; fail "skip line"; }
  [ ! -e "$dir/g.json" ] || fail "a skipped run left a result file"
  echo "cuda: $(sed 's/^tide: //' "$dir/out")"
else
  [ $rc = 0 ] || { cat "$dir/out"; fail "--device-memory: exit $rc"; }
  check_json "$dir/g.json" p2p bucketed cuda
fi
echo "PASS"
