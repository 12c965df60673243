#!/usr/bin/env bash
# `tide sync --strategy p2p --sparse` and `--strategy disk-delta` end to end,
# ranks as threads over tcp on loopback: tiny-moe and a Kimi-K2-shaped model
# (--scale 256), every step verified bit-exact, JSON carries bytes_on_wire,
# changed_fraction and compression_ratio; bad combinations give one error line.
set -u
TIDE=$1
PY=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=kill_rank.sh
. "$(dirname "$0")/kill_rank.sh"
base=(--model tiny-moe --train tp=2,pp=2,ep=2 --infer engines=2,tp=2,ep=2
      --cluster h100-ib-8x400:nodes=4 --bucket 64KiB --streams 1)
scale=${TIDE_TEST_TIME_SCALE:-1}  # sanitizer builds run slower (tests/CMakeLists.txt)
tiny=("${base[@]}" --timeout $((60 * scale)) --ranks threads)
kimi=(--model kimi-k2 --scale 256 --train tp=2,pp=2,ep=2 --infer engines=2,tp=2,ep=2
      --cluster h100-ib-8x400:nodes=4 --bucket 8MiB --streams 1 --timeout $((120 * scale))
      --ranks threads)

check_json() {  # file strategy steps min-ratio
  "$PY" - "$@" <<'PYEOF' || fail "json $1"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "tide.sync/1", j
assert j["strategy"] == sys.argv[2], j["strategy"]
assert j["verified"] is True
assert len(j["steps"]) == int(sys.argv[3])
assert 0 < j["changed_fraction"] < 1, j["changed_fraction"]
assert j["compression_ratio"] >= float(sys.argv[4]), j["compression_ratio"]
assert j["bytes_on_wire"] == sum(s["bytes_on_wire"] for s in j["steps"])
for s in j["steps"]:
    assert s["bytes_on_wire"] > 0 and s["full_bytes"] > 0, s
print(sys.argv[2], "changed_fraction %.4f compression_ratio %.2f" %
      (j["changed_fraction"], j["compression_ratio"]))
PYEOF
}

run() {  # name args...
  local name=$1; shift
  "$TIDE" sync "$@" --json "$dir/$name.json" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "$name"; }
}

run tiny_sparse "${tiny[@]}" --strategy p2p --sparse --steps 3
check_json "$dir/tiny_sparse.json" p2p-sparse 3 2
run tiny_disk "${tiny[@]}" --strategy disk-delta --steps 3 --base-every 4 --delta-dir "$dir/dd"
check_json "$dir/tiny_disk.json" disk-delta 3 2
ls "$dir/dd"/*.manifest > /dev/null || fail "no manifests in --delta-dir"
run kimi_sparse "${kimi[@]}" --strategy p2p --sparse --steps 2
check_json "$dir/kimi_sparse.json" p2p-sparse 2 4
run kimi_disk "${kimi[@]}" --strategy disk-delta --steps 2
check_json "$dir/kimi_disk.json" disk-delta 2 4

bad() {  # expected-substring args...
  local want=$1; shift
  "$TIDE" sync "${tiny[@]}" "$@" > "$dir/out" 2>&1 && fail "accepted: $*"
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "not one line: $*"; }
  grep -q -- "$want" "$dir/out" || { cat "$dir/out"; fail "no '$want' for: $*"; }
}
bad "needs --strategy p2p" --strategy broadcast --sparse
bad "drop --poison" --strategy p2p --sparse --poison
bad "base-every" --strategy disk-delta --base-every 0
bad "--sparse needs --strategy p2p (got disk-delta)" --strategy disk-delta --sparse
# A rank killed (SIGKILL) during a sparse run of launched processes: the run
# fails within a bounded time with one error line, nothing hangs.
for strategy in "p2p --sparse" "disk-delta"; do
  # shellcheck disable=SC2086
  kill_a_rank "$strategy" "$dir/kill.out" "${base[@]}" --ranks processes --strategy $strategy \
      --steps 40 --timeout 10
done
echo "PASS"
