#!/usr/bin/env bash
# The regression gate catches what it is for, on copies of the budgets file:
#  1. a changed prediction: the Kimi-K2 scenario with a slower NIC fails every
#     sim metric it moves, the cause naming the changed input (cluster);
#  2. a changed baseline (a budgets file edited by hand): the plan metric
#     fails with old and new value, inputs unchanged (so: the code);
#  3. --update rewrites the baselines (hand-written part kept) and the gate
#     then passes;
#  4. a planted slowdown in instruction counts (TIDE_KERNELS_PLANT makes
#     tide_kernels run 25 % more delta_encode work) fails ir.delta_encode
#     only, naming the plant and the functions that grew (needs valgrind and
#     the default build, as regress_gate_test's instructions mode);
#  5. bad input: one error line, exit 1.
#   regress_catch_test.sh TIDE SOURCE_DIR BUILD_TYPE CXX_FLAGS
set -u
TIDE=$1
SRC=$2
BUILD_TYPE=$3
CXX_FLAGS=$4
PY=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
budgets=$SRC/results/budgets/regressions.toml
[ -f "$budgets" ] || fail "no budgets file $budgets"

# verdicts FILE.json NAME=VERDICT... [--others ok]: each named metric has that
# verdict; --others ok: every other metric passed.
verdicts() {
  "$PY" - "$@" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
rows = {r["name"]: r for r in j["metrics"]}
others_ok = "--others-ok" in sys.argv
named = set()
for a in sys.argv[2:]:
    if a == "--others-ok":
        continue
    name, want = a.split("=", 1)
    named.add(name)
    assert name in rows, f"{name} not in {sorted(rows)}"
    assert rows[name]["verdict"] == want, (name, rows[name])
if others_ok:
    bad = [n for n, r in rows.items() if n not in named and r["fails"]]
    assert not bad, bad
PYEOF
}

# 1. A changed prediction: a slower NIC (40 GB/s; 47.5 when written) in a
# copy of the scenario.
sed 's|^nic = "[^"]*"|nic = "40GB/s"|' "$SRC/scenarios/kimi-k2-miles.toml" > "$dir/kimi.toml"
cmp -s "$SRC/scenarios/kimi-k2-miles.toml" "$dir/kimi.toml" && fail "could not change the NIC figure"
sed "s|^scenarios = .*|scenarios = [\"$dir/kimi.toml\"]|" "$budgets" > "$dir/nic.toml"
"$TIDE" regress check --budgets "$dir/nic.toml" --only '^sim\.' --json "$dir/nic.json" \
    > "$dir/out" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$dir/out"; fail "slower NIC: exit $rc, want 1"; }
verdicts "$dir/nic.json" sim.kimi-k2-miles.miles-p2p.update_s=CHANGED \
    sim.kimi-k2-miles.miles-broadcast.lower_bound_s=CHANGED \
    sim.kimi-k2-miles.miles-p2p.wire_bytes=ok || { cat "$dir/out"; fail "slower NIC verdicts"; }
grep -q '^FAIL sim.kimi-k2-miles.miles-p2p.update_s: .* -> .*: inputs of sim.kimi-k2-miles changed: cluster$' \
    "$dir/out" || { cat "$dir/out"; fail "slower NIC: no old -> new and cause line"; }
grep -q 'regression gate failed: .*sim.kimi-k2-miles.miles-p2p.update_s' "$dir/out" \
    || { cat "$dir/out"; fail "slower NIC: the failing metrics are not listed"; }
echo "ok: a slower NIC in the scenario fails the gate, cause: cluster"

# 2. A baseline edited by hand: the p2p plan's network bytes one byte more.
"$PY" - "$budgets" "$dir/edited.toml" <<'PYEOF' || fail "editing the budgets copy"
import re, sys
text = open(sys.argv[1]).read()
head, sep, tail = text.partition("[metrics.plan.qwen3-small-p2p]")
assert sep, "no [metrics.plan.qwen3-small-p2p] table"
tail, n = re.subn(r"^network_bytes = \[(\d+),", lambda m: f"network_bytes = [{int(m[1]) + 1},",
                  tail, count=1, flags=re.M)
assert n == 1
open(sys.argv[2], "w").write(head + sep + tail)
PYEOF
"$TIDE" regress check --budgets "$dir/edited.toml" --only '^plan\.qwen3-small-p2p\.' \
    --json "$dir/edited.json" > "$dir/out" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$dir/out"; fail "edited baseline: exit $rc, want 1"; }
verdicts "$dir/edited.json" plan.qwen3-small-p2p.network_bytes=CHANGED --others-ok \
    || { cat "$dir/out"; fail "edited baseline verdicts"; }
grep -q 'inputs of plan.qwen3-small-p2p unchanged: the code changed the result' "$dir/out" \
    || { cat "$dir/out"; fail "edited baseline: cause"; }
echo "ok: an edited plan baseline fails the gate with old and new bytes"

# 3. --update rewrites it; the hand-written part stays; the gate passes again.
"$TIDE" regress check --budgets "$dir/edited.toml" --only '^plan\.' --update > "$dir/out" 2>&1 \
    || { cat "$dir/out"; fail "--update"; }
"$PY" - "$budgets" "$dir/edited.toml" <<'PYEOF' || fail "--update changed the hand-written part"
import sys
a, b = (open(p).read() for p in sys.argv[1:])
cut = a.index("\n[metrics")
assert a[:cut] == b[:cut]
PYEOF
"$TIDE" regress check --budgets "$dir/edited.toml" --only '^plan\.' > "$dir/out" 2>&1 \
    || { cat "$dir/out"; fail "gate after --update"; }
echo "ok: --update rewrites the baseline and keeps the hand-written part"

# 5. Bad input.
for args in "--budgets $dir/none.toml" "--budgets $budgets --only (" ; do
  # shellcheck disable=SC2086
  "$TIDE" regress check $args > "$dir/out" 2>&1
  rc=$?
  [ $rc -eq 1 ] || { cat "$dir/out"; fail "bad input '$args': exit $rc, want 1"; }
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "bad input '$args': not one line"; }
done
echo "ok: bad input is one line, exit 1"

# 4. A planted slowdown in instruction counts.
if ! command -v valgrind > /dev/null; then
  echo "skipped: valgrind not installed (the planted-slowdown case)"
  exit 77
fi
if [ "$BUILD_TYPE" != RelWithDebInfo ] || [[ "$CXX_FLAGS" == *-fsanitize* ]]; then
  echo "skipped: instruction counts need the default preset's build (RelWithDebInfo, no" \
       "sanitizer); this build: $BUILD_TYPE $CXX_FLAGS"
  exit 77
fi
TIDE_KERNELS_PLANT=delta_encode=25 "$TIDE" regress check --budgets "$budgets" \
    --only '^ir\.(delta_encode|manifest_decode)$' --json "$dir/plant.json" > "$dir/out" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$dir/out"; fail "planted slowdown: exit $rc, want 1"; }
verdicts "$dir/plant.json" ir.delta_encode=REGRESSED ir.manifest_decode=ok --others-ok \
    || { cat "$dir/out"; fail "planted slowdown verdicts"; }
grep -q '^FAIL ir.delta_encode: .*a planted slowdown ran (TIDE_KERNELS_PLANT); largest moves: ' \
    "$dir/out" || { cat "$dir/out"; fail "planted slowdown: cause line"; }
"$PY" - "$dir/plant.json" <<'PYEOF' || fail "planted slowdown size"
import json, sys
r = {r["name"]: r for r in json.load(open(sys.argv[1]))["metrics"]}["ir.delta_encode"]
# 8 units + 2 planted: +25 %, give or take the planted tensors' share.
assert 22 < r["change_percent"] < 28, r
print(f"planted: ir.delta_encode {r['baseline']:.0f} -> {r['measured']:.0f} Ir "
      f"({r['change_percent']:+.1f} %)")
PYEOF
cp "$budgets" "$dir/plant.toml"
TIDE_KERNELS_PLANT=delta_encode=25 "$TIDE" regress check --budgets "$dir/plant.toml" \
    --only '^ir\.delta_encode$' --update > "$dir/out" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q 'refusing --update from a planted slowdown' "$dir/out" \
    || { cat "$dir/out"; fail "--update from a planted run: exit $rc, want a refusal"; }
cmp -s "$budgets" "$dir/plant.toml" || fail "a refused --update changed the file"
echo "ok: a planted slowdown fails ir.delta_encode; --update refuses to record it"
echo "PASS"
