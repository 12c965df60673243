#!/usr/bin/env bash
# The headline of `tide reproduce` on tiny-moe (--headline-tiny: the same
# parts, seconds instead of minutes): its table opens REPORT.md and
# summary.json "headline" holds the same figures, read from the parts'
# documents.
#  1. Without network namespaces (as root: run as an unprivileged user) the
#     real side is null beside the part's skip reason; the simulated sides
#     are there.
#  2. With them (root only; exit 77 "skipped: <reason>" otherwise, after 1):
#     the real side comes from tide sync's JSON, verification included, the
#     prediction is checked against the run's bytes, and the figure is drawn.
set -u
TIDE=$1
SRC=$2
PY=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
hl=headline_plan_broadcast,headline_plan_p2p,headline_sync_broadcast,headline_sync_p2p
hl=$hl,headline_sim_broadcast,headline_sim_p2p

# 1. No namespaces.
chmod 755 "$dir"
mkdir "$dir/u"
as_user=()
if [ "$(id -u)" = 0 ]; then
  chown 65534:65534 "$dir/u"
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
fi
"${as_user[@]}" "$TIDE" reproduce --headline-tiny --source "$SRC" --out "$dir/u/r" --no-plots \
  --only "$hl,sim_kimi_broadcast,sim_kimi_p2p" > "$dir/out1" 2>&1 \
  || { cat "$dir/out1"; fail "a skipped real run must not fail the set"; }
"$PY" - "$dir/u/r" <<'PYEOF' || { cat "$dir/out1"; fail "headline without namespaces"; }
import json, sys
d = sys.argv[1]
h = json.load(open(d + "/summary.json"))["headline"]
assert h["real"] is None, h
assert h["real_status"] == "skipped" and "needs root" in h["real_reason"], h
assert h["setup"]["model"] == "tiny-moe" and h["setup"]["cluster"].startswith("emulated:"), h
for side in ("sim_same_cluster", "sim_full_scale"):
    s = h[side]
    assert s["broadcast_s"] > 0 and s["p2p_s"] > 0, (side, s)
    assert abs(s["speedup"] - s["broadcast_s"] / s["p2p_s"]) < 1e-9, (side, s)
assert "validation" not in h["sim_same_cluster"], h  # nothing to check it against
assert h["sim_full_scale"]["strategy"] == {"broadcast": "miles-broadcast", "p2p": "miles-p2p"}, h
assert h["published"]["broadcast_s"] == 53.279 and h["published"]["p2p_s"] == 7.227, h
md = open(d + "/REPORT.md").read()
first = [l for l in md.splitlines() if l.startswith("## ")][0]
assert first.startswith("## Headline"), first
row = [l for l in md.splitlines() if l.startswith("| **real run, measured** |")]
assert row and "skipped: " in row[0] and "needs root" in row[0], row
assert "| published, full-scale Kimi-K2 | 53.279 s | 7.227 s | 7.37× |" in md, md
PYEOF

# 2. The real run: root and network namespaces only.
if [ "$(id -u)" != 0 ] || ! command -v ip > /dev/null || ! command -v tc > /dev/null; then
  echo "skipped: the headline's real run needs root and iproute2 (ip, tc); checked: its skip"
  exit 77
fi
if ! ip netns add tdhl-probe 2> /dev/null; then
  echo "skipped: cannot create network namespaces here; checked: the headline's skip"
  exit 77
fi
ip netns del tdhl-probe
"$TIDE" reproduce --headline-tiny --source "$SRC" --out "$dir/r" --only "$hl" > "$dir/out2" 2>&1 \
  || { cat "$dir/out2"; fail "headline run"; }
"$PY" - "$dir/r" <<'PYEOF' || { cat "$dir/out2"; fail "headline with its real run"; }
import json, os, sys
d = sys.argv[1]
h = json.load(open(d + "/summary.json"))["headline"]
r = h["real"]
assert h["real_status"] == "ok" and r is not None, h
for s in ("broadcast", "p2p"):
    run = json.load(open(f"{d}/parts/headline_sync_{s}.json"))
    assert r[s + "_s"] == run["median_step_seconds"] > 0, (s, r, run)
    assert r["lower_bound_s"][s] == run["lower_bound_seconds"] > 0, (s, r)
    assert r["verification"][s] == run["verification"]["outcome"] == "bit-exact", (s, r)
    assert r["steps_s"][s] == [st["seconds"] for st in run["steps"]], (s, r)
    v = h["sim_same_cluster"]["validation"][s]
    assert "refused" not in v and len(v["steps"]) == len(run["steps"]), v
assert r["verified"] is True
assert abs(r["speedup"] - r["broadcast_s"] / r["p2p_s"]) < 1e-9, r
lb = r["lower_bound_s"]
assert abs(r["bound_speedup"] - lb["broadcast"] / lb["p2p"]) < 1e-9, r
assert h["sim_full_scale"] is None and "sim_kimi_broadcast not run" in h["sim_full_scale_reason"]
md = open(d + "/REPORT.md").read()
lines = md.splitlines()
assert [l for l in lines if l.startswith("## ")][0].startswith("## Headline")
want = "| **real run, measured** | {:.3f} s | {:.3f} s | **{:.2f}×** |".format(
    r["broadcast_s"], r["p2p_s"], r["speedup"])
assert want in lines, (want, md)
assert "| verification (tide sync, every inference byte) | bit-exact | bit-exact | |" in lines, md
# The figure, right under the table (before the other sections).
assert os.path.getsize(d + "/timeline_headline.png") > 1000
assert md.index("(timeline_headline.png)") < md.index("## Parts"), md
# The units of each plan, real (tide sync --plan) and simulated (tide sim
# --plan), as timelines beside the report, named under the headline.
tl = {(t["side"], t["strategy"]): t["file"] for t in h["timelines"]}
assert set(tl) == {(a, b) for a in ("real", "sim") for b in ("broadcast", "p2p")}, tl
for (side, s), f in tl.items():
    ev = json.load(open(d + "/" + f))["traceEvents"]
    xs = [e for e in ev if e["ph"] == "X" and "unit" in e.get("args", {})]
    pid = 1 if side == "real" else 2
    assert xs and all(e["pid"] == pid for e in xs), (f, len(xs))
    assert "(" + f + ")" in md, (f, md)
PYEOF
echo "PASS"
