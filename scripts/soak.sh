#!/usr/bin/env bash
# Soak with faults: N weight updates on a small emulated cluster (tiny-moe /
# 4, 4 nodes of 2 ranks, 5 Mbit/s links) while `tide sync --chaos` kills,
# stops and cuts off ranks and links (and loses store nodes), then a table
# per window of updates: updates that ended on the new version and on the
# previous one, faults that struck by kind, inference-rank states checked
# bit-exact against the generator, torn generation reads, hangs, restarts,
# and the open descriptors and resident memory of the long-lived processes.
# Exits non-zero when an invariant broke. Needs root (network namespaces).
#
#   soak.sh [--updates 1000] [--seed 1] [--strategy p2p|store] [--rate 0.3]
#           [--report 100] [--timeout 20] [--build build] [--json FILE]
#           [-- more tide sync flags]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
UPDATES=1000 SEED=1 STRATEGY=p2p RATE=0.3 REPORT=100 TIMEOUT=20
BUILD=$ROOT/build JSON=$ROOT/results/local/soak.json

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case $1 in
    --updates) UPDATES=${2:?}; shift 2 ;;
    --seed) SEED=${2:?}; shift 2 ;;
    --strategy) STRATEGY=${2:?}; shift 2 ;;
    --rate) RATE=${2:?}; shift 2 ;;
    --report) REPORT=${2:?}; shift 2 ;;
    --timeout) TIMEOUT=${2:?}; shift 2 ;;
    --build) BUILD=${2:?}; shift 2 ;;
    --json) JSON=${2:?}; shift 2 ;;
    --) shift; break ;;
    -h | --help) usage; exit 0 ;;
    *) echo "soak: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
[[ $UPDATES =~ ^[1-9][0-9]*$ && $SEED =~ ^[0-9]+$ && $REPORT =~ ^[1-9][0-9]*$ ]] ||
  { echo "soak: --updates and --report must be positive integers, --seed an integer" >&2; exit 2; }
[[ $STRATEGY == p2p || $STRATEGY == store ]] || { echo "soak: --strategy is p2p or store" >&2; exit 2; }
[ -x "$BUILD/tide" ] || { echo "soak: no $BUILD/tide (build first)" >&2; exit 2; }
mkdir -p "$(dirname "$JSON")" || exit 1

start=$(date +%s)
"$BUILD/tide" sync --model tiny-moe --scale 4 --train tp=2,pp=2,ep=2 --infer engines=2,tp=2,ep=2 \
  --cluster emulated:nodes=4,gpus=2,nic=5Mbps,nics=1 --bucket 64KiB --streams 1 \
  --strategy "$STRATEGY" --switch shadow --timeout "$TIMEOUT" --steps "$UPDATES" \
  --chaos "$SEED" --chaos-rate "$RATE" --chaos-report "$REPORT" --json "$JSON" "$@" \
  | grep --line-buffered -v '^  fault '
rc=${PIPESTATUS[0]}
echo "wall time: $(( $(date +%s) - start )) s"
[ -s "$JSON" ] || exit "${rc:-1}"
/usr/bin/python3 - "$JSON" << 'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
kinds = ["kill", "link", "slow", "store-node"]
print(f"\nseed {j['seed']}, {j['updates']} updates, {j['strategy']} ({j['switch']} switch), "
      f"{j['ranks']} ranks; schedule: " + ", ".join(f"{k} {j['scheduled'][k]}" for k in kinds))
hdr = ("updates", "new", "prev", "kill", "link", "slow", "store", "checked", "bit-exact",
       "torn", "gen reads", "hangs", "restarts", "median s", "driver fds/MiB", "ranks fds", "ranks MiB")
print(" | ".join(hdr))
def row(w):
    procs = w["processes"]
    drv = [p for p in procs if p["rank"] < 0]
    ranks = [p for p in procs if p["rank"] >= 0]
    fds = sorted(p["fds"] for p in ranks)
    mib = sorted(p["rss_bytes"] / 2**20 for p in ranks)
    d = f"{drv[0]['fds']}/{drv[0]['rss_bytes'] / 2**20:.1f}" if drv else "-"
    inj = w["faults_injected"]
    cells = (f"{w['first_update']}-{w['last_update']}", w["new_version"], w["previous_version"],
             inj["kill"], inj["link"], inj["slow"], inj["store-node"], w["states_checked"],
             w["states_bit_exact"], w["states_torn_mixed_or_wrong"] + w["generation_torn_reads"],
             w["generation_reads"], w["hangs"], w["restarts"], f"{w['update_median_seconds']:.3f}",
             d, f"{fds[0]}-{fds[-1]}" if fds else "-",
             f"{mib[0]:.1f}-{mib[-1]:.1f}" if mib else "-")
    print(" | ".join(str(c) for c in cells))
for w in j["windows"]:
    row(w)
t = j["total"]
print(f"total: {t['new_version']} new, {t['previous_version']} previous, "
      f"{t['states_bit_exact']}/{t['states_checked']} states bit-exact, "
      f"{t['generation_torn_reads']} torn reads, {t['hangs']} hangs; growth of long-lived "
      f"processes: fds {j['fd_growth']:+d}, rss {j['rss_growth_bytes'] / 2**20:+.1f} MiB; "
      f"invariants {'held' if j['invariants_held'] else 'BROKEN'}")
PYEOF
exit "$rc"
