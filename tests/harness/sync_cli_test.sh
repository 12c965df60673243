#!/usr/bin/env bash
# `tide sync` end to end on a tiny Kimi-K2-shaped model: ranks as threads and
# as launched processes, both strategies, JSON checked; bad flags give one
# error line and a non-zero exit.
set -u
TIDE=$1
PY=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
small=(--model tiny-moe --train tp=2,pp=2,ep=2 --infer engines=2,tp=2,ep=2
       --cluster h100-ib-8x400:nodes=2 --bucket 64KiB --chunk 16KiB --streams 1 --timeout 60)

check_json() {  # file strategy steps
  "$PY" - "$@" <<'PYEOF' || fail "json $1"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "tide.sync/1", j
assert j["strategy"] == sys.argv[2], j["strategy"]
assert j["verified"] is True
v = j["verification"]
assert v["outcome"] == "bit-exact" and v["verified_bytes"] == v["expected_bytes"] > 0, v
assert len(j["steps"]) == int(sys.argv[3])
assert all(s["verified_bytes"] > 0 for s in j["steps"])
assert sum(s["verified_bytes"] for s in j["steps"]) == v["verified_bytes"]
assert all(s["seconds"] > 0 and s["bytes"] > 0 for s in j["steps"])
assert j["lower_bound_seconds"] > 0 and j["ratio_to_bound"] > 0
assert j["samples"]["step_seconds"]["values"] == [s["seconds"] for s in j["steps"]]
# The plan's register steps, performed at set-up on every rank that holds a buffer.
r = j["work"]["register"]
assert r["outcome"] == "performed" and r["page_bytes"] > 0, r
assert 0 < len(r["ranks"]) <= j["ranks"] and r["steps"] == len(r["ranks"]), r
assert r["pages"] == sum(x["pages"] for x in r["ranks"]) >= r["bytes"] / r["page_bytes"], r
assert r["registered_bytes"] >= r["bytes"] > 0 and r["seconds_max"] > 0, r
assert all(x["seconds"] > 0 and x["registrations"] > 0 for x in r["ranks"]), r
assert j["context"]["git_revision"] and len(j["context"]["load_average"]) == 3, j["context"]
PYEOF
}

for s in p2p broadcast; do
  "$TIDE" sync "${small[@]}" --strategy $s --steps 2 --poison --json "$dir/t_$s.json" \
      --events "$dir/t_$s.h5" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "threads $s"; }
  check_json "$dir/t_$s.json" $s 2
  [ -s "$dir/t_$s.h5" ] || fail "no events file"
  "$TIDE" sync "${small[@]}" --strategy $s --steps 1 --ranks processes --backend shm \
      --json "$dir/p_$s.json" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "processes $s"; }
  check_json "$dir/p_$s.json" $s 1
done

# A shard corrupted after its transfer must fail the run, in threads and in
# processes, with the block named, and leave the outcome in --json.
for mode in threads processes; do
  "$TIDE" sync "${small[@]}" --strategy p2p --steps 2 --ranks $mode --backend shm \
      --corrupt-rank 5 --json "$dir/c_$mode.json" > "$dir/out" 2>&1 &&
    { cat "$dir/out"; fail "corrupted shard passed ($mode)"; }
  grep -q "not bit-exact on rank 5" "$dir/out" || { cat "$dir/out"; fail "no rank named ($mode)"; }
  "$PY" - "$dir/c_$mode.json" <<'PYEOF' || fail "corrupt json $mode"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["verified"] is False, j
assert j["verification"]["outcome"] == "not bit-exact", j
assert "not bit-exact on rank 5" in j["error"], j
PYEOF
done

bad() {  # expected-substring args...
  local want=$1; shift
  "$TIDE" sync "${small[@]}" "$@" > "$dir/out" 2>&1 && fail "accepted: $*"
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "not one line: $*"; }
  grep -q -- "$want" "$dir/out" || { cat "$dir/out"; fail "no '$want' for: $*"; }
}
bad "carrier" --backend carrier
bad "steps" --steps 0
bad "broadcast, p2p" --strategy pigeon
bad "ranks" --ranks lots
bad "infer-dtype" --infer-dtype fp4
bad "FP8 inference weights take full updates" --infer-dtype model --sparse
# rdma on an emulated cluster runs on one rxe device per node (ctest
# rxe_cluster_test, label softroce); without rdma_rxe or root it is one
# clear error.
emu_rdma=(--model tiny-moe --train tp=2,pp=2,ep=2 --infer engines=2,tp=2,ep=2
          --cluster emulated:nodes=4,gpus=2,nic=100Mbps --backend rdma)
if [ "$(id -u)" != 0 ] || { [ ! -d /sys/module/rdma_rxe ] && ! modinfo rdma_rxe > /dev/null 2>&1; }; then
  "$TIDE" sync "${emu_rdma[@]}" > "$dir/out" 2>&1 && fail "accepted: emulated rdma without rdma_rxe"
  [ "$(wc -l < "$dir/out")" -eq 1 ] && grep -Eq "no rdma_rxe|needs root" "$dir/out" ||
    { cat "$dir/out"; fail "emulated rdma without rdma_rxe: not one clear line"; }
fi
bad "scale" --scale 0
# -1 means "none"; lower values are refused, not read as none.
bad "store-lose-node must be a node index >= 0 (got -7)" --strategy store --store-lose-node -7
bad "join-engine-at-step must be a step >= 0 (got -3)" --strategy store --join-engine-at-step -3
# An unwritable --json fails before the run, naming the flag.
bad "--json /nonexistent/dir/s.json: directory /nonexistent/dir does not exist" \
  --json /nonexistent/dir/s.json
# --replay: the versions of a trace from `tide trace gen` (its seed, AdamW
# settings and routing), sparse p2p, verified; a trace of another model is
# refused with the flags that fit.
"$TIDE" trace gen --model tiny-moe --steps 2 --out "$dir/t.h5" > "$dir/out" 2>&1 ||
  { cat "$dir/out"; fail "trace gen"; }
"$TIDE" sync "${small[@]}" --replay "$dir/t.h5" --steps 2 --sparse --json "$dir/r.json" \
  > "$dir/out" 2>&1 || { cat "$dir/out"; fail "replay"; }
"$PY" -c 'import json, sys; j = json.load(open(sys.argv[1])); assert j["verified"] is True and j["replay"] == sys.argv[2] and len(j["steps"]) == 2, j' \
  "$dir/r.json" "$dir/t.h5" || fail "replay json"
"$TIDE" sync --model kimi-k2 --scale 512 --train tp=2,pp=2,ep=2 --infer engines=1,tp=4,ep=4 \
  --cluster h800-roce:nodes=2 --replay "$dir/t.h5" --steps 1 > "$dir/out" 2>&1 && fail "accepted: replay of another model"
grep -q -- "--model tiny-moe --scale 1" "$dir/out" || { cat "$dir/out"; fail "replay mismatch message"; }
bad "trace has 2 RL steps" --replay "$dir/t.h5" --steps 3
echo "PASS"
