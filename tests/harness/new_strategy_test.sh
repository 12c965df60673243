#!/usr/bin/env bash
# A strategy added as docs/adding-a-strategy.md describes (p2p-rr: a class,
# its plan, one descriptor) is listed, planned, run for real bit-exact and
# simulated, with nothing added to sim/; strategies a command cannot run are
# refused with one line that says why.
set -u
TIDE=$1
PY=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
small=(--model tiny-moe --train tp=2,pp=2,ep=2 --infer engines=2,tp=2,ep=2
       --cluster h100-ib-8x400:nodes=2 --bucket 64KiB --chunk 16KiB)

"$TIDE" strategies --json > "$dir/table.json" || fail "tide strategies"
"$PY" - "$dir/table.json" <<'PYEOF' || fail "strategy table"
import json, sys
t = {d["name"]: d for d in json.load(open(sys.argv[1]))}
rr = t["p2p-rr"]
assert rr["delivery"] == "wire" and rr["runs_in"] == "tide sync, tide sim", rr
assert t["miles-p2p"]["runs_in"] == "tide sim" and t["miles-p2p"]["profile"] == "miles"
assert t["store"]["plan"] == "p2p" and t["store"]["runs_in"] == "tide sync"
PYEOF

"$TIDE" plan "${small[@]}" --strategy p2p-rr --json "$dir/plan.json" > "$dir/out" 2>&1 ||
  { cat "$dir/out"; fail "plan"; }
"$TIDE" sync "${small[@]}" --strategy p2p-rr --steps 2 --streams 1 --timeout 60 \
    --json "$dir/sync.json" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "sync"; }
"$PY" - "$dir/plan.json" "$dir/sync.json" <<'PYEOF' || fail "plan/sync json"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["strategy"] == "p2p-rr", p["strategy"]
assert p["params"]["assignment"] == "round_robin"
j = json.load(open(sys.argv[2]))
assert j["strategy"] == "p2p-rr", j["strategy"]
v = j["verification"]
assert v["outcome"] == "bit-exact" and v["verified_bytes"] == v["expected_bytes"] > 0, v
PYEOF

cat > "$dir/s.toml" <<'TOML'
name = "tiny"
[model]
zoo = "tiny-moe"
[train]
layout = "tp=2,pp=2,ep=2"
nodes = 1
[infer]
layout = "engines=2,tp=2,ep=2"
nodes = 1
[cluster]
preset = "h100-ib-8x400"
[strategy]
names = ["p2p", "p2p-rr"]
bucket = "64KiB"
TOML
"$TIDE" sim --scenario "$dir/s.toml" --json "$dir/sim.json" > "$dir/out" 2>&1 ||
  { cat "$dir/out"; fail "sim"; }
"$PY" - "$dir/sim.json" <<'PYEOF' || fail "sim json"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["context"]["git_revision"] and doc["context"]["cpus"] > 0, doc["context"]
r = {x["strategy"]: x for x in doc["results"]}
for s in ("p2p", "p2p-rr"):
    assert r[s]["seconds"] > 0 and r[s]["lower_bound_seconds"] > 0, r[s]
# The same bytes reach every inference rank; only the sources differ.
assert r["p2p"]["bytes_per_inference_rank"] == r["p2p-rr"]["bytes_per_inference_rank"]
PYEOF

bad() {  # expected-substring args...
  local want=$1; shift
  "$TIDE" "$@" > "$dir/out" 2>&1 && fail "accepted: $*"
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "not one line: $*"; }
  grep -q -- "$want" "$dir/out" || { cat "$dir/out"; fail "no '$want' for: $*"; }
}
bad "simulated (tide sim), not run" sync "${small[@]}" --strategy miles-p2p
bad "unknown strategy 'p2p-x'" sync "${small[@]}" --strategy p2p-x
bad "which the simulator does not model" sim --scenario "$dir/s.toml" --strategy store
bad "unknown strategy 'p2p-x'" sim --scenario "$dir/s.toml" --strategy p2p-x
echo "new strategy: planned, run bit-exact, simulated"
