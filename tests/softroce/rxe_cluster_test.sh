#!/usr/bin/env bash
# RDMA p2p vs broadcast on an emulated RDMA cluster: one rxe device per node
# on shaped links (engine/exec/launch/rxe_cluster.h). Both strategies must verify
# bit-exact, their traffic must have crossed the nodes' shaped links (the
# bound's bottleneck link carried at least the plan's bytes), no step may
# beat its shaped lower bound, and p2p must beat broadcast by the ratio of
# the bounds (1.93x) within the budget in results/budgets/rxe-cluster.toml
# (aimed at +-20 %), each strategy timed by the fastest of its 3 steps: the
# guest is emulated, so a step can lose seconds of CPU to the host's other
# load, and the fastest step is the one that lost least. Needs root and
# rdma_rxe (the SoftRoCE guest: scripts/softroce-tests.sh); exit 77 (skipped)
# otherwise.
set -u
TIDE=$1
BUDGET=$2  # results/budgets/rxe-cluster.toml
PY=/usr/bin/python3
if [ "$(id -u)" != 0 ]; then
  echo "skipped: needs root to create links, qdiscs and rxe devices"
  exit 77
fi
if [ ! -d /sys/module/rdma_rxe ] && ! modprobe rdma_rxe 2> /dev/null; then
  echo "skipped: this kernel has no rdma_rxe (run it through scripts/softroce-tests.sh)"
  exit 77
fi
for t in ip tc rdma; do
  command -v $t > /dev/null || { echo "FAIL: $t not installed (iproute2)"; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 6 nodes of one rank: 4 pipeline-stage trainers, one inference engine of
# tp=2. At 2 Mbit/s the bounds are p2p 1.99 s, broadcast 3.83 s.
run=(--model tiny-moe --train tp=1,pp=4 --infer engines=1,tp=2 --backend rdma
     --cluster emulated:nodes=6,gpus=1,nic=2Mbps,nics=1 --bucket 1MiB --chunk 64KiB
     --streams 1 --steps 3 --timeout 180)
for s in p2p broadcast; do
  t0=$(date +%s)
  "$TIDE" sync "${run[@]}" --strategy $s --json "$dir/$s.json" > "$dir/$s.out" 2>&1 ||
    { cat "$dir/$s.out"; fail "rdma $s on the rxe cluster"; }
  echo "$s: $(grep -E '^\[rank 0\] step ' "$dir/$s.out" | sed 's/^\[rank 0\] //' | tr '\n' ' ')($(($(date +%s) - t0)) s wall)"
  grep -q "^cluster .* rxe devices tr" "$dir/$s.out" || { cat "$dir/$s.out"; fail "no cluster line"; }
  "$PY" - "$dir/$s.json" << 'PYEOF' || { cat "$dir/$s.out"; fail "json $s"; }
import json, re, sys
j = json.load(open(sys.argv[1]))
assert j["backend"] == "rdma" and j["ranks_as"] == "processes on one rxe device per node", j["ranks_as"]
assert j["verified"] is True and j["verification"]["outcome"] == "bit-exact", j["verification"]
b = j["lower_bound"]["bottleneck"]
m = re.fullmatch(r"node (\d+) nic 0 (tx|rx)", b["link"])
assert m, b
node, way = int(m.group(1)), m.group(2)
crossed = j["links"][node][way + "_bytes"]
need = b["bytes"] * len(j["steps"])
assert crossed >= need, f"{b['link']}: {crossed} B through its shaped link, the plan moves {need} B over it"
for s in j["steps"]:
    assert s["ratio_to_bound"] >= 0.9, f"step {s['step']} beat its shaped bound: {s['ratio_to_bound']}"
print(f"  bottleneck {b['link']}: {crossed} B through the shaper, plan {need} B")
PYEOF
done
"$PY" - "$dir/p2p.json" "$dir/broadcast.json" "$BUDGET" << 'PYEOF' || fail "p2p vs broadcast"
import json, sys, tomllib
p, b = (json.load(open(f)) for f in sys.argv[1:3])
budget = tomllib.load(open(sys.argv[3], "rb"))
fastest = lambda j: min(s["seconds"] for s in j["steps"])
speedup = fastest(b) / fastest(p)
bound = b["lower_bound_seconds"] / p["lower_bound_seconds"]
error = speedup / bound - 1
print(f"p2p vs broadcast: {speedup:.2f}x faster; the bounds say {bound:.2f}x ({error:+.0%}; "
      f"target within {budget['target']:.0%}: {'met' if abs(error) <= budget['target'] else 'MISSED'})")
assert abs(error) <= budget["budget"], f"|{error:+.0%}| is past the budget {budget['budget']:.0%}"
PYEOF
left=$( (ls /sys/class/infiniband; ls /sys/class/net) 2> /dev/null | grep -E '^tr[0-9a-f]{4}(r[0-9]+|n[0-9]+|b[0-9]+|br)$')
[ -z "$left" ] || fail "left behind: $left"
echo "PASS"
