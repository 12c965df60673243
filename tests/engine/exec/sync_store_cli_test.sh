#!/usr/bin/env bash
# `tide sync --strategy store` end to end (tiny-moe, ranks as threads over
# tcp on loopback): every update verified bit-exact, the catalog it leaves
# read back by `tide store list|inspect`; a store node dropped mid-read is
# read around and re-replicated, one dropped while importing is placed
# around; the version switch and an elastic join report their figures; bad
# input gives one error line; a rank killed (SIGKILL) in a run of launched
# processes fails it in bounded time.
set -u
TIDE=$1
PY=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=kill_rank.sh
. "$(dirname "$0")/kill_rank.sh"
base=(--model tiny-moe --train tp=2,pp=2,ep=2 --infer engines=2,tp=2,ep=2
      --cluster h100-ib-8x400:nodes=4 --bucket 64KiB --streams 1 --strategy store
      --store-fragment 64KiB)
tiny=("${base[@]}" --timeout 60 --ranks threads)

"$TIDE" sync "${tiny[@]}" --steps 3 --poison --json "$dir/s.json" \
    --store-catalog "$dir/cat.json" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "store run"; }
"$PY" - "$dir/s.json" "$dir/cat.json" <<'PYEOF' || fail "json"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["strategy"] == "store" and j["verified"] is True, j
assert len(j["steps"]) == 3
assert j["store"]["replicas"] == 2 and j["store"]["fragment_bytes"] == 65536, j["store"]
for s in j["steps"]:
    assert s["bytes_on_wire"] > 0 and s["bytes_read"] > 0, s
c = json.load(open(sys.argv[2]))
assert c["schema"] == "tide.store/1"
assert [s["version"] for s in c["snapshots"]] == [3], c["snapshots"]
assert c["snapshots"][0]["state"] == "READY"
PYEOF
"$TIDE" store list "$dir/cat.json" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "store list"; }
grep -Eq "^3 +READY .* checked$" "$dir/out" || { cat "$dir/out"; fail "list shows no checked v3"; }
"$TIDE" store inspect "$dir/cat.json" --version 3 --fragments > "$dir/out" 2>&1 ||
    { cat "$dir/out"; fail "store inspect"; }
grep -q "(checked)" "$dir/out" || { cat "$dir/out"; fail "inspect did not check the manifest"; }
grep -q "0 below 2 live replicas" "$dir/out" || { cat "$dir/out"; fail "inspect replicas"; }

# Node 2's segment dropped after version 1 is committed, before it is read.
"$TIDE" sync "${tiny[@]}" --steps 2 --store-lose-node 2 --store-catalog "$dir/lost.json" \
    > "$dir/out" 2>&1 || { cat "$dir/out"; fail "lost-node run"; }
"$TIDE" store list "$dir/lost.json" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "list lost"; }
for want in "lost: 2" "v1 DEGRADED" "v1 READY \\(re-replicated\\)" "^2 +READY"; do
  grep -Eq -- "$want" "$dir/out" || { cat "$dir/out"; fail "no '$want' after a lost node"; }
done

# Node 2 lost once version 1 is placed, before the trainers write it: placed again without it.
"$TIDE" sync "${tiny[@]}" --steps 2 --poison --store-lose-node 2 --store-lose-when import \
    --store-catalog "$dir/imp.json" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "lost-at-import run"; }
"$TIDE" store list "$dir/imp.json" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "list imp"; }
for want in "lost: 2" "node 2 lost \(while importing v1\)" "v1 IMPORTING \(placed again" "^2 +READY"; do
  grep -Eq -- "$want" "$dir/out" || { cat "$dir/out"; fail "no '$want' after a node lost at import"; }
done

# The version switch (store and p2p) and an engine joining after step 1.
"$TIDE" sync "${tiny[@]}" --steps 3 --switch shadow --join-engine-at-step 1 \
    --json "$dir/sw.json" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "switch+join run"; }
grep -q "^switch .* 0 torn" "$dir/out" || { cat "$dir/out"; fail "no switch summary"; }
grep -q "^join .* joined at step 2: v1 pulled under a lease" "$dir/out" ||
    { cat "$dir/out"; fail "no join summary"; }
p2p=(--model tiny-moe --train tp=2,pp=2,ep=2 --infer engines=2,tp=2,ep=2
     --cluster h100-ib-8x400:nodes=4 --bucket 64KiB --streams 1 --strategy p2p --timeout 60
     --ranks threads)
"$TIDE" sync "${p2p[@]}" --steps 2 --switch shadow --json "$dir/swp.json" > "$dir/out" 2>&1 ||
    { cat "$dir/out"; fail "p2p switch run"; }
"$PY" - "$dir/sw.json" "$dir/swp.json" <<'PYEOF' || fail "switch json"
import json, sys
for f in sys.argv[1:]:
    j = json.load(open(f))
    sw = j["switch"]
    assert sw["mode"] == "shadow" and sw["shadow_bytes"] > 0, sw
    assert len(sw["steps"]) == len(j["steps"]), sw
    for s in sw["steps"]:
        assert s["torn_reads"] == 0 and s["generation_reads"] > 0, s
        assert 0 < s["pause_us"] < s["transfer_seconds"] * 1e6, s
j = json.load(open(sys.argv[1]))
assert j["join"]["step"] == 2 and j["join"]["version"] == 1, j["join"]
assert j["join"]["bytes"] > 0 and len(j["join"]["ranks"]) == 2, j["join"]
assert j["join"]["seconds"] > j["join"]["pull_seconds"] > 0, j["join"]
assert j["join"]["other_engines_seconds"] > 0, j["join"]
PYEOF

# A tampered manifest is caught.
"$PY" - "$dir/cat.json" "$dir/bad.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["snapshots"][0]["manifest"] = c["snapshots"][0]["manifest"].replace("0 ", "0 1", 1)
json.dump(c, open(sys.argv[2], "w"))
PYEOF
"$TIDE" store inspect "$dir/bad.json" --version 3 > "$dir/out" 2>&1 && fail "tampered manifest accepted"
grep -q "does not match its hash" "$dir/out" || { cat "$dir/out"; fail "tampered: wrong error"; }

bad() {  # expected-substring command...
  local want=$1; shift
  "$TIDE" "$@" > "$dir/out" 2>&1 && fail "accepted: $*"
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "not one line: $*"; }
  grep -q -- "$want" "$dir/out" || { cat "$dir/out"; fail "no '$want' for: $*"; }
}
bad "need as many distinct nodes" sync "${tiny[@]}" --store-replicas 9
bad "store-fragment" sync "${tiny[@]}" --store-fragment 8
bad "--sparse needs --strategy p2p (got store)" sync "${tiny[@]}" --sparse
bad "there are 8 store nodes" sync "${tiny[@]}" --store-lose-node 9
bad "must be read or import" sync "${tiny[@]}" --store-lose-when later
bad "must be inplace or shadow" sync "${tiny[@]}" --switch maybe
bad "below --steps" sync "${tiny[@]}" --steps 2 --join-engine-at-step 2
bad "is for --strategy store" sync "${p2p[@]}" --join-engine-at-step 1
bad "not --sparse or disk-delta" sync "${p2p[@]}" --sparse --switch shadow
bad "no snapshot of version 7" store inspect "$dir/cat.json" --version 7
bad "not a store catalog" store list "$dir/s.json"
bad "cannot open" store list "$dir/missing.json"

# A rank killed (SIGKILL) in a run of launched processes.
kill_a_rank store "$dir/kill.out" "${base[@]}" --ranks processes --steps 200 --timeout 10
echo "PASS"
