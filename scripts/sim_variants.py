#!/usr/bin/env python3
"""A mechanism simulated as a variant across the published rows.

Runs `tide sim` on every published scenario (scenarios/kimi-k2-miles.toml,
scenarios/published/*.toml) as committed and with the variant's overrides,
and prints a markdown table of the whole-update error per row and strategy,
before and after (docs/sim-history.md records these tables).

A variant is a set of overrides, each one of:
  calibration.KEY=VALUE   a [calibration] constant (host_op_us, engine_call_ms, ...)
  cluster.KEY=VALUE       a [cluster] figure (host_mem, nic, ...), e.g. cluster.host_mem=95GB/s

With --crossval the table is the held-out one instead: `tide sim crossval`
with the regression gate's settings (results/budgets/sim-crossval.toml: the
free constants fitted leaving each scenario out in turn) on the scenarios as
committed and on the variant's, then each strategy's mean and max held-out
|error| and the winners right, before and after. That is the test a
mechanism must pass to be kept (docs/sim.md, Calibration).

Usage: scripts/sim_variants.py [--tide build/tide] [--crossval] OVERRIDE...
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib


def apply(text, overrides):
    for o in overrides:
        table, rest = o.split(".", 1)
        key, value = rest.split("=", 1)
        if not re.fullmatch(r"[0-9.eE+-]+", value):
            value = '"' + value + '"'
        line = f"{key} = {value}\n"
        m = re.search(r"^\[" + table + r"\]\n", text, re.M)
        if not m:
            text += f"\n[{table}]\n" + line
            continue
        # Replace the key inside that table, else add it right below the header.
        end = re.search(r"^\[", text[m.end():], re.M)
        body_end = m.end() + (end.start() if end else len(text) - m.end())
        body = text[m.end():body_end]
        body2, n = re.subn(r"^" + re.escape(key) + r"\s*=.*\n", line, body, flags=re.M)
        if n == 0:
            body2 = line + body
        text = text[:m.end()] + body2 + text[body_end:]
    return text


def run(tide, path):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        subprocess.run([tide, "sim", "--scenario", path, "--json", out], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            return {r["strategy"]: r["update_s"] if "update_s" in r else r["seconds"]
                    for r in json.load(f)["results"]}


def published(text):
    pub = {}
    for m in re.finditer(r"^\[published\.([^\]]+)\]\nupdate = ([0-9.]+)", text, re.M):
        pub[m.group(1)] = float(m.group(2))
    return pub


def crossval(tide, texts):
    """tide sim crossval with the gate's settings on the scenarios `texts`
    (path -> TOML text, paths as in the gate's `scenarios`)."""
    with open("results/budgets/sim-crossval.toml", "rb") as f:
        b = tomllib.load(f)
    with tempfile.TemporaryDirectory() as d:
        for path, text in texts.items():
            os.makedirs(os.path.join(d, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(d, path), "w") as f:
                f.write(text)
        out = os.path.join(d, "cv.json")
        cmd = [tide, "sim", "crossval", "--profile", b["profile"], "--scenarios"]
        cmd += [os.path.join(d, s) for s in b["scenarios"]]
        cmd += ["--free", ",".join(b["free"]), "--grid", str(b["grid"]), "--json", out]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def main_crossval(a, files):
    texts = {f: open(f).read() for f in files}
    before = crossval(a.tide, texts)
    after = crossval(a.tide, {f: apply(t, a.overrides) for f, t in texts.items()})
    print("| row | strategy | published s | held-out before s | error | held-out after s | error |")
    print("|---|---|---|---|---|---|---|")
    for rb, ra in zip(before["rows"], after["rows"]):
        assert (rb["name"], rb["strategy"]) == (ra["name"], ra["strategy"])
        print(f"| {rb['name']} | {rb['strategy']} | {rb['published_s']:.3f} "
              f"| {rb['predicted_s']:.3f} | {100*rb['error']:+.1f} % "
              f"| {ra['predicted_s']:.3f} | {100*ra['error']:+.1f} % |")
    print()
    for k in sorted(before["mean_abs_error"]):
        print(f"{k}: held-out mean |error| {100*before['mean_abs_error'][k]:.1f} % -> "
              f"{100*after['mean_abs_error'][k]:.1f} %, max {100*before['max_abs_error'][k]:.1f} %"
              f" -> {100*after['max_abs_error'][k]:.1f} %")
    print(f"winner right (held out): {before['winner_right']} -> {after['winner_right']} of "
          f"{after['rows_total']}")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tide", default="build/tide")
    ap.add_argument("--crossval", action="store_true",
                    help="held-out errors (tide sim crossval, the gate's settings)")
    ap.add_argument("overrides", nargs="+")
    a = ap.parse_args()
    files = ["scenarios/kimi-k2-miles.toml"] + sorted(glob.glob("scenarios/published/*.toml"))
    if a.crossval:
        return main_crossval(a, files)
    print("| row | strategy | published s | before s | error | after s | error |")
    print("|---|---|---|---|---|---|---|")
    for f in files:
        text = open(f).read()
        pub = published(text)
        before = run(a.tide, f)
        with tempfile.NamedTemporaryFile("w", suffix=".toml", dir=os.path.dirname(f),
                                         delete=False) as t:
            t.write(apply(text, a.overrides))
            variant = t.name
        try:
            after = run(a.tide, variant)
        finally:
            os.unlink(variant)
        name = os.path.basename(f)[:-5]
        for s in sorted(pub):
            b, v = before[s], after[s]
            print(f"| {name} | {s} | {pub[s]:.3f} | {b:.3f} | {100*(b/pub[s]-1):+.1f} % "
                  f"| {v:.3f} | {100*(v/pub[s]-1):+.1f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
