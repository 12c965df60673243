#!/usr/bin/env bash
# tide reproduce end to end on a small subset: a real part runs, a part that
# cannot run is skipped with its reason, a failing part is reported while the
# rest go on (exit 1), results.h5 / summary.json / REPORT.md / figures are
# written, bad input gives one error line.
set -u
TIDE=$1
SRC=$2
PY=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A source tree whose SoftRoCE bench script fails: the failure path.
mkdir -p "$dir/src/scripts"
cp -r "$SRC/scenarios" "$SRC/harness" "$dir/src/"
printf '#!/bin/sh\necho "rdma bench broke" >&2\nexit 3\n' > "$dir/src/scripts/softroce-bench.sh"
chmod +x "$dir/src/scripts/softroce-bench.sh"

"$TIDE" reproduce --source "$dir/src" --out "$dir/r" \
  --only sync_threads_p2p,transport_rdma > "$dir/out" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$dir/out"; fail "a failed part must give exit 1 (got $rc)"; }
grep -q 'transport_rdma *failed' "$dir/out" || { cat "$dir/out"; fail "failed part not reported"; }
grep -q 'sync_threads_p2p *ok' "$dir/out" || { cat "$dir/out"; fail "other part did not run"; }
"$PY" - "$dir/r" <<'PYEOF' || fail "output check"
import json, sys, h5py
d = sys.argv[1]
s = json.load(open(d + "/summary.json"))
assert s["schema"] == "tide.reproduce/1" and s["failed"] == 1, s
st = {p["name"]: p for p in s["parts"]}
assert st["sync_threads_p2p"]["status"] == "ok", st
assert "rdma bench broke" in st["transport_rdma"]["reason"], st["transport_rdma"]
fig = [f for f in s["figures"] if f["part"] == "sync_threads_p2p"]
assert fig and fig[0]["value"] > 0 and fig[0]["unit"] == "s", s["figures"]
f = h5py.File(d + "/results.h5")
assert f.attrs["schema"] in (b"tide.results", "tide.results")
for k in ("git_revision", "cpu", "kernel", "compiler"):
    assert k in f["environment"].attrs, k
r = f["runs/sync_threads_p2p"]
txt = lambda v: v.decode() if isinstance(v, bytes) else str(v)
assert " sync " in txt(r.attrs["command"]) and txt(r.attrs["status"]) == "ok"
assert json.loads(r["documents/result"][0])["verified"] is True
assert len(r["events/p2p/events/t_start"]) > 0
md = open(d + "/REPORT.md").read()
assert "timeline_sync.png" in md and "| sync_threads_p2p | ok |" in md, md
import os
assert os.path.getsize(d + "/timeline_sync.png") > 1000
PYEOF

# The simulated Kimi-K2 p2p update beside its published figures: the whole
# update and each span the scenario publishes.
"$TIDE" reproduce --quick --source "$dir/src" --out "$dir/s" --only sim_kimi_p2p --no-plots \
  > "$dir/out" 2>&1 || { cat "$dir/out"; fail "sim_kimi_p2p part"; }
for row in '| miles-p2p time | [0-9.]* | s | published | 7.227 s' \
           '| miles-p2p transfer span | [0-9.]* | s | published (transfer span) | 6.290 s' \
           '| miles-p2p finalize span | [0-9.]* | s | published (finalize span) | 0.88 s'; do
  grep -q -- "$row" "$dir/s/REPORT.md" || { cat "$dir/s/REPORT.md"; fail "no row: $row"; }
done

# A scenario's design comparison: its ranked table with bands in REPORT.md,
# its figure, summary.json's "compare"; scale scenarios are skipped with the
# command to run alone; without matplotlib the plot script says why it made
# no figures (python3 -S: no site packages).
"$TIDE" reproduce --quick --source "$dir/src" --out "$dir/c" --only compare_qwen3_30b_small_ep \
  > "$dir/out" 2>&1 || { cat "$dir/out"; fail "compare part"; }
grep -q '^| 1 | [a-z0-9-]* | [a-z-]* | [0-9.]* | [0-9.]* – [0-9.]* | [0-9.]* | ' "$dir/c/REPORT.md" \
  || { cat "$dir/c/REPORT.md"; fail "no ranked compare row with a band"; }
grep -q '(compare_qwen3_30b_small_ep.png)' "$dir/c/REPORT.md" || fail "compare figure not in REPORT.md"
[ "$(stat -c %s "$dir/c/compare_qwen3_30b_small_ep.png")" -gt 1000 ] || fail "compare figure"
"$PY" - "$dir/c/summary.json" <<'PYEOF' || fail "summary compare"
import json, sys
c = json.load(open(sys.argv[1]))["compare"]["compare_qwen3_30b_small_ep"]
r = c["results"]
assert c["file"] == "scenarios/qwen3-30b-small-ep.toml" and len(r) >= 2, c
assert [x["rank"] for x in r] == list(range(1, len(r) + 1)), r
assert all(x["seconds"] <= y["seconds"] for x, y in zip(r, r[1:])), r
assert all(x["band_seconds"][0] <= x["seconds"] <= x["band_seconds"][1] for x in r), r
PYEOF
"$TIDE" reproduce --quick --source "$dir/src" --list > "$dir/out" 2>&1 || fail "--list"
grep -q 'compare_kimi_k2_16384 .*(skipped: .* nodes, over .*tide sim compare --scenario scenarios/kimi-k2-16384.toml' \
  "$dir/out" || { cat "$dir/out"; fail "scale scenario not skipped with its command"; }
"$PY" -S "$SRC/harness/plots/reproduce.py" "$dir/c/results.h5" "$dir/c" > "$dir/out" 2>&1 \
  || { cat "$dir/out"; fail "plot script without its packages must exit 0"; }
grep -q '^skipped	.*matplotlib' "$dir/out" || { cat "$dir/out"; fail "no skip reason from the plots"; }

# A run with --history appends its summary there (--out alone does not),
# and tide compare reads two entries of the history.
[ -e "$dir/src/results/history" ] && fail "--out alone wrote a history"
for i in 1 2; do
  "$TIDE" reproduce --quick --source "$dir/src" --out "$dir/h$i" --only sim_kimi_p2p --no-plots \
    --history "$dir/hist" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "history run $i"; }
  sleep 1  # entries are named by the second
done
[ "$(ls "$dir/hist" | wc -l)" -eq 2 ] || { ls "$dir/hist"; fail "history has not 2 entries"; }
"$PY" - "$dir"/hist/*.json <<'PYEOF' || fail "history entry"
import json, sys
for f in sys.argv[1:]:
    j = json.load(open(f))
    s = j["samples"]["sim_kimi_p2p/miles-p2p time"]
    assert s["unit"] == "s" and s["better"] == "lower" and len(s["values"]) == 1, s
PYEOF
"$TIDE" compare "$dir"/hist/*.json > "$dir/out" 2>&1 || { cat "$dir/out"; fail "compare of the history"; }
grep -q "sim_kimi_p2p/miles-p2p time" "$dir/out" || { cat "$dir/out"; fail "compare lost a figure"; }

# The quick set skips the SoftRoCE guest with a reason, exit 0.
"$TIDE" reproduce --quick --source "$dir/src" --out "$dir/q" --only transport_rdma --no-plots \
  > "$dir/out" 2>&1 || { cat "$dir/out"; fail "quick skip must exit 0"; }
grep -q 'transport_rdma *skipped *.*quick set' "$dir/out" || { cat "$dir/out"; fail "no skip reason"; }

# Bad input: one line, non-zero.
bad() {
  "$TIDE" reproduce "$@" > "$dir/out" 2>&1 && fail "accepted: $*"
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "not one line: $*"; }
}
bad --source "$dir/src" --out "$dir/b" --only nosuch
bad --source "$dir/nowhere" --out "$dir/b"
echo "PASS"
