#!/usr/bin/env bash
# `tide plan` plans what `tide sync` moves (same --infer-dtype default), so
# `tide validate` accepts the pair, and `tide sim --plan` predicts what it
# predicts; the model's FP8 plan is refused on the
# byte check; bad input gives one error line and a non-zero exit.
set -u
TIDE=$1
PY=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
small=(--model tiny-moe --train tp=2,pp=2,ep=2 --infer engines=2,tp=2,ep=2
       --cluster h100-ib-8x400:nodes=2 --bucket 64KiB --chunk 16KiB)

for s in p2p broadcast; do
  "$TIDE" plan "${small[@]}" --strategy $s --json "$dir/plan_$s.json" > "$dir/out" 2>&1 \
    || { cat "$dir/out"; fail "plan $s"; }
  "$TIDE" plan "${small[@]}" --strategy $s --infer-dtype model --json "$dir/fp8_$s.json" \
    > "$dir/out" 2>&1 || { cat "$dir/out"; fail "plan $s --infer-dtype model"; }
  "$TIDE" sync "${small[@]}" --strategy $s --steps 2 --streams 1 --timeout 60 \
    --json "$dir/real_$s.json" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "sync $s"; }
  "$PY" - "$dir/plan_$s.json" "$dir/fp8_$s.json" "$dir/real_$s.json" <<'PYEOF' || fail "bytes $s"
import json, sys
plan, fp8, real = (json.load(open(f)) for f in sys.argv[1:])
b = plan["summary"]["total_bytes"]
assert all(st["bytes"] + st["local_bytes"] == b for st in real["steps"]), (b, real["steps"])
assert fp8["summary"]["total_bytes"] != b, "the model's dtype plan moves the same bytes"
PYEOF
  # Threads on one host are not the cluster the simulator models: the error
  # may be anything, but the pair must be accepted (exit 0 = pass, or the
  # threshold failure, never a refusal).
  "$TIDE" validate --real "$dir/real_$s.json" --plan "$dir/plan_$s.json" \
    --json "$dir/val_$s.json" > "$dir/out" 2>&1
  grep -q "mean |error|" "$dir/out" || { cat "$dir/out"; fail "validate $s refused the pair"; }
  "$PY" -c "import json; j=json.load(open('$dir/val_$s.json')); assert len(j['steps']) == 2, j" \
    || fail "val json $s"
  "$TIDE" validate --real "$dir/real_$s.json" --plan "$dir/fp8_$s.json" > "$dir/out" 2>&1 \
    && fail "validate accepted the FP8 plan for a bf16 run ($s)"
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "refusal not one line ($s)"; }
  # The recorded plan run for real (`tide sync --plan`): the plan says what
  # the update is, bit-exact, the same bytes.
  "$TIDE" sync --plan "$dir/plan_$s.json" --cluster h100-ib-8x400:nodes=2 --steps 1 --streams 1 \
    --timeout 60 --json "$dir/rec_$s.json" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "sync --plan $s"; }
  "$PY" - "$dir/plan_$s.json" "$dir/rec_$s.json" <<'PYEOF' || fail "sync --plan json $s"
import json, sys
plan, real = (json.load(open(f)) for f in sys.argv[1:])
assert real["verified"] and real["verification"]["outcome"] == "bit-exact", real["verification"]
assert real["strategy"] == plan["strategy"], (real["strategy"], plan["strategy"])
b = plan["summary"]["total_bytes"]
assert all(st["bytes"] + st["local_bytes"] == b for st in real["steps"]), (b, real["steps"])
PYEOF
done

# A recorded plan is refused, in one line naming why, when the run's flags
# describe another update, when its cluster places ranks otherwise, when its
# holdings are not what its layouts give, and when it is of another version.
pbad() {  # expected-substring args...
  local want=$1; shift
  "$TIDE" sync "$@" --steps 1 --timeout 30 > "$dir/out" 2>&1 && fail "sync accepted: $*"
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "not one line: sync $*"; }
  grep -q -- "$want" "$dir/out" || { cat "$dir/out"; fail "no '$want' for: sync $*"; }
}
rec=(--plan "$dir/plan_p2p.json")
pbad "--train tp=4,pp=1,ep=2: the plan was made with --train" "${rec[@]}" --train tp=4,pp=1,ep=2
pbad "--strategy broadcast: the plan was made with --strategy p2p" "${rec[@]}" --strategy broadcast
pbad "the plan places 8 GPUs per node" "${rec[@]}" --cluster emulated:nodes=8,gpus=2,nic=1Gbps
# A valid plan of other layouts (one engine of TP4) that records ours.
"$TIDE" plan --model tiny-moe --train tp=2,pp=2,ep=2 --infer engines=1,tp=4,ep=4 \
  --cluster h100-ib-8x400:nodes=2 --strategy p2p --json "$dir/other.json" > "$dir/out" 2>&1 \
  || { cat "$dir/out"; fail "plan other"; }
"$PY" - "$dir/plan_p2p.json" "$dir/other.json" "$dir/torn.json" "$dir/old.json" "$dir/bare.json" <<'PYEOF' || fail "edit plans"
import json, sys
src, other, torn, old, bare = sys.argv[1:]
p = json.load(open(src))
t = json.load(open(other))
t["params"]["workload"] = p["params"]["workload"]
json.dump(t, open(torn, "w"))
o = dict(p, schema="tide.plan/1")
json.dump(o, open(old, "w"))
b = json.loads(json.dumps(p))
b["params"]["workload"]["model"] = ""
json.dump(b, open(bare, "w"))
PYEOF
pbad "training and inference holdings are not what its layouts" --plan "$dir/torn.json"
pbad "schema is 'tide.plan/1', this tide reads tide.plan/2" --plan "$dir/old.json"
pbad "the plan records no workload" --plan "$dir/bare.json"
pbad "cannot open plan" --plan "$dir/none.json"

# One plan through both executors, unit by unit: the real run records every
# piece of its schedule, `tide validate` compares them with the simulated
# ones, and the timelines are Chrome trace-event JSON with one slice per
# piece, real and simulated side by side.
for s in p2p broadcast; do
  "$TIDE" sync --plan "$dir/plan_$s.json" --cluster h100-ib-8x400:nodes=2 --steps 2 --streams 1 \
    --timeout 60 --json "$dir/u_$s.json" --trace-out "$dir/real_$s.tl.json" > "$dir/out" 2>&1 \
    || { cat "$dir/out"; fail "sync --plan --trace-out $s"; }
  "$TIDE" validate --real "$dir/u_$s.json" --plan "$dir/plan_$s.json" --json "$dir/uv_$s.json" \
    --trace-out "$dir/both_$s.tl.json" > "$dir/out" 2>&1
  grep -q "^units: [0-9]* pieces" "$dir/out" || { cat "$dir/out"; fail "no per-unit errors ($s)"; }
  "$PY" - "$dir/plan_$s.json" "$dir/u_$s.json" "$dir/uv_$s.json" "$dir/real_$s.tl.json" \
    "$dir/both_$s.tl.json" <<'PYEOF' || fail "units and timelines $s"
import json, sys
plan, run, val, real_tl, both_tl = (json.load(open(f)) for f in sys.argv[1:])
pieces = plan["schedule"]["pieces"]
assert len(run["units"]["rows"]) == 2 * pieces, (len(run["units"]["rows"]), pieces)
assert val["units"]["compared_pieces"] == 2 * pieces, val["units"]
for q in ("median", "p90"):
    assert 0 <= val["units"][q] <= val["units"]["worst"]["error"], val["units"]
def slices(tl, pid):
    ev = tl["traceEvents"]
    for e in ev:
        assert "ph" in e and "pid" in e and "tid" in e, e
        if e["ph"] == "X":
            assert all(k in e for k in ("name", "ts", "dur")) and e["dur"] >= 0, e
    xs = [e for e in ev if e["ph"] == "X" and e["pid"] == pid and "unit" in e["args"]]
    last = {}
    for e in ev:  # monotone per track
        if e["ph"] != "X":
            continue
        k = (e["pid"], e["tid"])
        assert e["ts"] >= last.get(k, -1), (k, e["ts"], last.get(k))
        last[k] = e["ts"]
    return xs
assert len(slices(real_tl, 1)) == 2 * pieces, len(slices(real_tl, 1))
assert len(slices(both_tl, 1)) == 2 * pieces and len(slices(both_tl, 2)) == pieces
assert {e["name"] for e in slices(both_tl, 1)} == {e["name"] for e in slices(both_tl, 2)}
PYEOF
done

# On an emulated cluster the host's loopback tcp rate is probed, or given;
# a bad rate is one error line.
emu=(--real "$dir/real_p2p.json" --plan "$dir/plan_p2p.json" --cluster emulated:nodes=2,gpus=8,nic=1Gbps)
"$TIDE" validate "${emu[@]}" > "$dir/out" 2>&1
grep -q "GB/s (probe)" "$dir/out" || { cat "$dir/out"; fail "no host probe on an emulated cluster"; }
"$TIDE" validate "${emu[@]}" --host-tcp 2GB/s --json "$dir/val_emu.json" > "$dir/out" 2>&1
grep -q "2.000 GB/s (given)" "$dir/out" || { cat "$dir/out"; fail "--host-tcp 2GB/s not used"; }
"$PY" -c "import json; j=json.load(open('$dir/val_emu.json')); assert j['host_tcp_source'] == 'given' and abs(j['host_tcp_gbps'] - 2) < 1e-9, j" \
  || fail "val json host tcp"
# `tide sim --plan` is the same prediction without a real run (what tide
# reproduce's headline shows beside the run).
"$TIDE" sim --plan "$dir/plan_p2p.json" --cluster emulated:nodes=2,gpus=8,nic=1Gbps \
  --host-tcp 2GB/s --json "$dir/sim_emu.json" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "sim --plan"; }
"$PY" - "$dir/sim_emu.json" "$dir/val_emu.json" "$dir/plan_p2p.json" <<'PYEOF' || fail "sim --plan json"
import json, sys
sim, val, plan = (json.load(open(f)) for f in sys.argv[1:])
assert sim["results"][0]["seconds"] == val["steps"][0]["sim_seconds"] > 0, (sim["results"], val)
assert sim["inputs"]["plan_bytes"] == plan["summary"]["total_bytes"] == val["plan_bytes"], sim
assert sim["inputs"]["host_tcp_source"] == "given", sim
assert plan["params"]["chunk_bytes"] == 16 << 10, plan["params"]
PYEOF
sbad() {  # expected-substring args...
  local want=$1; shift
  "$TIDE" sim "$@" > "$dir/out" 2>&1 && fail "sim accepted: $*"
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "not one line: sim $*"; }
  grep -q -- "$want" "$dir/out" || { cat "$dir/out"; fail "no '$want' for: sim $*"; }
}
sbad "--plan needs --cluster" --plan "$dir/plan_p2p.json"
sbad "requires --plan" --cluster emulated:nodes=2,gpus=8,nic=1Gbps
sbad "drop --scenario" --plan "$dir/plan_p2p.json" --cluster h100-ib-8x400:nodes=2 \
  --scenario "$dir/none.toml"
sbad "cannot open" --plan "$dir/none.json" --cluster h100-ib-8x400:nodes=2
"$TIDE" validate "${emu[@]}" --host-tcp fast > "$dir/out" 2>&1 && fail "accepted --host-tcp fast"
[ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "bad --host-tcp: not one line"; }

"$TIDE" plan "${small[@]}" --infer-dtype fp4 > "$dir/out" 2>&1 && fail "accepted --infer-dtype fp4"
[ "$(wc -l < "$dir/out")" -eq 1 ] && grep -q "infer-dtype" "$dir/out" \
  || { cat "$dir/out"; fail "bad --infer-dtype: not one clear line"; }
# Bad validate input: one line that names the flag or file and the problem.
vbad() {  # expected-substring args...
  local want=$1; shift
  "$TIDE" validate "$@" > "$dir/out" 2>&1 && fail "validate accepted: $*"
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "not one line: $*"; }
  grep -q -- "$want" "$dir/out" || { cat "$dir/out"; fail "no '$want' for: $*"; }
}
ok=(--real "$dir/real_p2p.json" --plan "$dir/plan_p2p.json")
vbad "--chunk" "${ok[@]}" --chunk 16KiB
vbad "--threshold must be > 0 (got 0)" "${ok[@]}" --threshold 0
# A file that is not a sync result says so, not "no --cluster".
vbad "--real $dir/plan_p2p.json: schema is 'tide.plan/2', want tide.sync/1" \
  --real "$dir/plan_p2p.json" --plan "$dir/plan_p2p.json"
# A planted mismatch: a run that ran a unit its schedule does not list, or
# ran a write before the conversion it waits for, is refused in one line.
"$PY" - "$dir/u_p2p.json" "$dir/plant_unit.json" "$dir/plant_order.json" <<'PYEOF' || fail "plant"
import json, sys
src, unit, order = sys.argv[1:]
r = json.load(open(src))
a = json.loads(json.dumps(r))
a["units"]["rows"][0][1] = 10 ** 6
json.dump(a, open(unit, "w"))
b = json.loads(json.dumps(r))
rows = b["units"]["rows"]
# Trainer rank 0's last unit to start (a write, which waits for its own
# conversion of that bucket): started at its update's start instead.
w = max((x for x in rows if x[0] == rows[0][0] and x[3] == 0), key=lambda x: x[4])
w[4] = 0
json.dump(b, open(order, "w"))
PYEOF
vbad "which the schedule does not list" --real "$dir/plant_unit.json" --plan "$dir/plan_p2p.json"
vbad "which it waits for, ended at" --real "$dir/plant_order.json" --plan "$dir/plan_p2p.json"
echo "PASS"
