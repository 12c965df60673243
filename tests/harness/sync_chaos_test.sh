#!/usr/bin/env bash
# `tide sync --chaos`: a short soak with faults on an emulated cluster (rank
# kills, link loss and rate cuts, stopped ranks, store-node loss). Every
# invariant must hold and every kind of fault must have struck; the same
# soak with updates in place (no rollback, a hidden test knob) must fail on
# the torn shards its killed trainers leave. Bad flags are one error line.
# Needs root: skipped (77) otherwise.
set -u
TIDE=$1
PY=/usr/bin/python3
if [ "$(id -u)" != 0 ] || ! command -v ip > /dev/null || ! command -v tc > /dev/null; then
  echo "skipped: needs root (CAP_NET_ADMIN) and iproute2 (ip, tc)"
  exit 77
fi
if ! ip netns add tdskip-chaos 2> /dev/null; then
  echo "skipped: needs root (CAP_NET_ADMIN): cannot create network namespaces here"
  exit 77
fi
ip netns del tdskip-chaos
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
leftovers() { ip netns list | grep -E '^td[0-9a-f]{4}-' || true; }
before=$(leftovers)
small=(--model tiny-moe --scale 4 --train tp=2,pp=2,ep=2 --infer engines=2,tp=2,ep=2
       --cluster emulated:nodes=4,gpus=2,nic=5Mbps,nics=1 --bucket 64KiB --streams 1
       --timeout 10 --chaos-max-burst 1)

# Bad input: one line, nothing started.
bad() {
  "$TIDE" sync "${small[@]}" "$@" > "$dir/bad" 2>&1 && fail "accepted: $*"
  grep -q "^tide: error: .*\(chaos\|switch\|strategy\)" "$dir/bad" \
    || { cat "$dir/bad"; fail "no reason for: $*"; }
  [ "$(wc -l < "$dir/bad")" -le 2 ] || { cat "$dir/bad"; fail "more than one line for: $*"; }
}
bad --chaos x1 --strategy p2p --switch shadow --steps 5
bad --chaos 1 --strategy p2p --switch shadow --steps 5 --chaos-kinds kill,typo
bad --chaos 1 --strategy p2p --switch inplace --steps 5
bad --chaos 1 --strategy broadcast --switch shadow --steps 5
bad --chaos 1 --strategy p2p --switch shadow --steps 5 --chaos-kinds store-node
bad --chaos 1 --strategy p2p --switch shadow --steps 5 --chaos-max-burst 6
bad --chaos 1 --strategy p2p --switch shadow --steps 5 --chaos-rate 2
[ "$(leftovers)" = "$before" ] || fail "namespaces left after bad input"

# check JSON KIND...: invariants held, the updates all ran, each KIND struck.
check() {
  "$PY" - "$@" << 'PYEOF' || fail "json $1"
import json, sys
j = json.load(open(sys.argv[1]))
t = j["total"]
assert j["schema"] == "tide.sync.chaos/1"
assert j["invariants_held"] and j["violation_count"] == 0, j["violations"]
assert t["updates"] == j["updates"], t
assert t["hangs"] == 0 and t["generation_torn_reads"] == 0, t
assert t["states_checked"] > 0 and t["states_torn_mixed_or_wrong"] == 0, t
assert t["states_bit_exact"] == t["states_checked"], t
assert t["generation_reads"] > 0, t
assert t["new_version"] > 0, t
assert len(j["schedule"]) > 0 and j["windows"], j
for kind in sys.argv[2:]:
    assert t["faults_injected"][kind] > 0, (kind, t["faults_injected"])
# Every window samples the driver and every rank; the ranks kills spare
# live through the run (the growth check compares them).
assert len(j["never_killed_ranks"]) == 2, j["never_killed_ranks"]
for w in j["windows"]:
    assert len(w["processes"]) == j["ranks"] + 1, w["processes"]
    assert all(p["fds"] > 0 and p["rss_bytes"] > 0 for p in w["processes"])
    for p in w["processes"]:
        if p["rank"] in j["never_killed_ranks"] or p["rank"] < 0:
            assert p["original"], p
PYEOF
}

"$TIDE" sync "${small[@]}" --strategy p2p --switch shadow --steps 40 --chaos 11 --chaos-rate 0.6 \
  --chaos-kinds kill,link,slow --chaos-report 20 --json "$dir/p2p.json" > "$dir/p2p" 2>&1 \
  || { cat "$dir/p2p"; fail "p2p soak"; }
check "$dir/p2p.json" kill link slow
"$PY" -c "import json; t=json.load(open('$dir/p2p.json'))['total']; assert t['previous_version'] > 0 and t['restarts'] > 0, t" \
  || fail "p2p soak abandoned no update (the recovery path did not run)"
[ "$(leftovers)" = "$before" ] || fail "namespaces left after the p2p soak: $(leftovers)"

"$TIDE" sync "${small[@]}" --strategy store --switch shadow --steps 24 --chaos 5 --chaos-rate 0.6 \
  --chaos-kinds kill,store-node --chaos-report 12 --json "$dir/store.json" > "$dir/store" 2>&1 \
  || { cat "$dir/store"; fail "store soak"; }
check "$dir/store.json" kill store-node
[ "$(leftovers)" = "$before" ] || fail "namespaces left after the store soak: $(leftovers)"

# The checks can fail: in place, a trainer killed mid-update leaves its
# targets torn, and the soak must say so and exit non-zero.
"$TIDE" sync "${small[@]}" --strategy p2p --switch inplace --chaos-unsafe-inplace --steps 12 \
  --chaos 11 --chaos-rate 1 --chaos-kinds kill --chaos-report 12 --json "$dir/torn.json" \
  > "$dir/torn" 2>&1 && { cat "$dir/torn"; fail "a soak without rollback passed"; }
grep -q "torn or mixed" "$dir/torn" || { cat "$dir/torn"; fail "no torn shard reported"; }
"$PY" -c "import json; j=json.load(open('$dir/torn.json')); assert not j['invariants_held'] and j['total']['states_torn_mixed_or_wrong'] > 0" \
  || fail "json torn"
[ "$(leftovers)" = "$before" ] || fail "namespaces left after the torn soak: $(leftovers)"
# Ctrl-C in the middle of a long soak: it stops within seconds, exits
# non-zero and leaves no namespace, qdisc or rank behind.
"$TIDE" sync "${small[@]}" --strategy p2p --switch shadow --steps 100000 --chaos 3 \
  > "$dir/int" 2>&1 &
pid=$!
# Interrupt the soak itself, not its start-up: on a loaded host planning
# alone can take longer than any fixed sleep (and a Ctrl-C there simply
# ends the process, with nothing to clean up).
for _ in $(seq 240); do grep -q "^cluster " "$dir/int" && break; sleep 0.5; done
grep -q "^cluster " "$dir/int" || { kill -KILL $pid; cat "$dir/int"; fail "the soak did not start"; }
sleep 2
kill -INT $pid
for _ in $(seq 60); do kill -0 $pid 2> /dev/null || break; sleep 0.5; done
if kill -0 $pid 2> /dev/null; then
  kill -KILL $pid
  fail "an interrupted soak did not stop within 30 s"
fi
wait $pid && fail "an interrupted soak exited 0"
grep -q "interrupted" "$dir/int" || { cat "$dir/int"; fail "no interruption reported"; }
[ "$(leftovers)" = "$before" ] || fail "namespaces left after Ctrl-C: $(leftovers)"
pgrep -f -- "--worker --chaos 3 " > /dev/null && fail "ranks left after Ctrl-C"
echo "PASS"
