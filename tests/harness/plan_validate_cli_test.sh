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
  "$TIDE" validate --real "$dir/real_$s.json" --plan "$dir/plan_$s.json" --chunk 16KiB \
    --json "$dir/val_$s.json" > "$dir/out" 2>&1
  grep -q "mean |error|" "$dir/out" || { cat "$dir/out"; fail "validate $s refused the pair"; }
  "$PY" -c "import json; j=json.load(open('$dir/val_$s.json')); assert len(j['steps']) == 2, j" \
    || fail "val json $s"
  "$TIDE" validate --real "$dir/real_$s.json" --plan "$dir/fp8_$s.json" > "$dir/out" 2>&1 \
    && fail "validate accepted the FP8 plan for a bf16 run ($s)"
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "refusal not one line ($s)"; }
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
assert sim["inputs"]["host_tcp_source"] == "given" and sim["inputs"]["chunk_bytes"] == 1 << 20, sim
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
vbad "--chunk must be > 0" "${ok[@]}" --chunk 0
vbad "--threshold must be > 0 (got 0)" "${ok[@]}" --threshold 0
# A file that is not a sync result says so, not "no --cluster".
vbad "--real $dir/plan_p2p.json: schema is 'tide.plan/1', want tide.sync/1" \
  --real "$dir/plan_p2p.json" --plan "$dir/plan_p2p.json"
echo "PASS"
