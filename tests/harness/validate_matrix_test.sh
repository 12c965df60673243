#!/usr/bin/env bash
# `tide validate --matrix`: a malformed matrix is one clear error (anywhere);
# then, as root, the quick subset of the shipped matrix runs for real on the
# emulated cluster and in the simulator, and each row's |error| against its
# fastest update (the one a loaded host slowed least) must stay within its
# budget in results/budgets/validation-quick.toml (the recorded |error| plus
# 2 points). Without root the real rows are skipped (77).
set -u
TIDE=$1
MATRIX=$2  # scenarios/validation/matrix.toml
BUDGET=$3  # results/budgets/validation-quick.toml
PY=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bad() {  # expected-substring matrix-text
  printf '%s\n' "$2" > "$dir/bad.toml"
  "$TIDE" validate --matrix "$dir/bad.toml" --host-tcp none > "$dir/out" 2>&1 &&
    fail "accepted: $2"
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "not one line for: $2"; }
  grep -qF -- "$1" "$dir/out" || { cat "$dir/out"; fail "no '$1' for: $2"; }
}
row='model = "tiny-moe"
train = "tp=2,pp=2"
infer = "engines=2,tp=2"
cluster = "emulated:nodes=4,gpus=2,nic=10Mbps,nics=1"'
bad "at least one [[config]]" "[defaults]
steps = 2"
bad "[[config]] 1: 'name' is missing" "[[config]]
$row
strategies = [\"p2p\"]"
bad "'strategies' is required" "[[config]]
name = \"a\"
$row"
bad "'miles-p2p' is not an update tide sync moves on the wire" "[[config]]
name = \"a\"
$row
strategies = [\"miles-p2p\"]"
bad "emulated clusters only" "[[config]]
name = \"a\"
model = \"tiny-moe\"
train = \"tp=2\"
infer = \"engines=1,tp=2\"
cluster = \"h100-ib-8x400\"
strategies = [\"p2p\"]"
bad "[[config]] 2: 'name' 'a' is used twice" "[[config]]
name = \"a\"
$row
strategies = [\"p2p\"]
[[config]]
name = \"a\"
$row
strategies = [\"p2p\"]"
bad "'stepz' is not a known key" "[[config]]
name = \"a\"
$row
strategies = [\"p2p\"]
stepz = 3"
bad "'broadcast' is not one of the row's strategies" "[[config]]
name = \"a\"
$row
strategies = [\"p2p\"]
quick = [\"broadcast\"]"
"$TIDE" validate --matrix "$MATRIX" --real x.json > "$dir/out" 2>&1 && fail "--matrix with --real"
grep -q "describes one run" "$dir/out" || { cat "$dir/out"; fail "--matrix with --real: message"; }
"$TIDE" validate --matrix "$dir/none.toml" > "$dir/out" 2>&1 && fail "a missing matrix"
grep -q "cannot open matrix" "$dir/out" || { cat "$dir/out"; fail "missing matrix: message"; }

if [ "$(id -u)" != 0 ] || ! command -v ip > /dev/null || ! ip netns add tdskip-mx 2> /dev/null; then
  echo "skipped: needs root to create network namespaces (the matrix's real runs)"
  exit 77
fi
ip netns del tdskip-mx

t0=$(date +%s)
"$TIDE" validate --matrix "$MATRIX" --quick --work-dir "$dir/work" --json "$dir/quick.json" \
  > "$dir/run" 2>&1 || { cat "$dir/run"; fail "the quick matrix"; }
cat "$dir/run"
echo "quick matrix: $(($(date +%s) - t0)) s wall"
"$PY" - "$dir/quick.json" "$BUDGET" <<'PYEOF' || fail "the quick matrix against its budget"
import json, sys, tomllib
j = json.load(open(sys.argv[1]))
budget = tomllib.load(open(sys.argv[2], "rb"))
margin = budget["margin"]
assert j["schema"] == "tide.validate.matrix/1", j["schema"]
for k in ("rows", "median_abs_error", "p90_abs_error", "max_abs_error", "rows_total"):
    assert k in j, k
want = budget["rows"]
ran = {r["name"]: r for r in j["rows"]}
assert set(ran) == set(want), f"quick rows {sorted(ran)} != budget rows {sorted(want)}"
bad = []
for name, rec in sorted(want.items()):
    r = ran[name]
    assert r["status"] == "ok", f"{name}: {r['status']}: {r.get('reason')}"
    for k in ("real_s", "sim_s", "error", "fastest_error", "bound_s", "real_steps_s"):
        assert k in r, (name, k)
    assert abs(r["sim_s"] / r["real_s"] - 1 - r["error"]) < 1e-9, r
    assert abs(r["sim_s"] / min(r["real_steps_s"]) - 1 - r["fastest_error"]) < 1e-9, r
    e = abs(r["fastest_error"])
    verdict = "ok" if e <= rec + margin else "WORSE"
    print(f"  {name:32s} |error| {e * 100:5.1f} %  recorded {rec * 100:5.1f} %  {verdict}")
    if e > rec + margin:
        bad.append(name)
assert not bad, f"worse than recorded by more than {margin * 100:.0f} points: {bad}"
PYEOF
echo "PASS"
