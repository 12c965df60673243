#!/usr/bin/python3
"""Figures of `tide reproduce`, read only from its results.h5.

usage: /usr/bin/python3 harness/plots/reproduce.py results.h5 OUT_DIR

Prints one line "figure <file.png>\\t<caption>" per figure written; a figure
whose runs are missing (skipped or failed parts) is not made. Without the
Python packages it prints "skipped\\t<reason>" and makes none.
"""
import json
import sys

try:
    import h5py
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    from matplotlib.collections import LineCollection
except ImportError as e:
    # tide reproduce reports the figures as skipped with this reason.
    print(f"skipped\t{e} (the figures need h5py, numpy and matplotlib)")
    sys.exit(0)

DPI = 80
MAX_SEGMENTS = 200_000  # per panel; beyond that events are sampled evenly


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def run_ok(f, name):
    return f"runs/{name}" in f and text(f[f"runs/{name}"].attrs["status"]) == "ok"


def document(f, name, label="result"):
    path = f"runs/{name}/documents/{label}"
    if not run_ok(f, name) or path not in f:
        return None
    return json.loads(text(f[path][0]))


def events(f, name):
    """(label, columns) for every event table of a run."""
    out = []
    base = f"runs/{name}/events"
    if not run_ok(f, name) or base not in f:
        return out
    for label in f[base]:
        g = f[f"{base}/{label}/events"]
        names = text(g.attrs["path_names"]).split(",")
        cols = {k: g[k][()] for k in ("t_start", "t_end", "src", "dst", "bytes", "path")}
        cols["step"] = g["step"][()] if "step" in g else np.zeros(len(cols["t_start"]), int)
        cols["path_names"] = names
        out.append((label, cols))
    return out


def timeline(f, runs, title, fname, out):
    panels = []
    for name in runs:
        for label, cols in events(f, name):
            if len(cols["t_start"]):
                panels.append((f"{label} ({name})", cols))
    if not panels:
        return None
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 2.6 * len(panels)), squeeze=False)
    tmax = max(float(np.max(c["t_end"])) for _, c in panels)
    cmap = plt.get_cmap("tab10")
    for ax, (label, c) in zip(axes[:, 0], panels):
        n = len(c["t_start"])
        idx = np.arange(n)
        if n > MAX_SEGMENTS:
            idx = np.linspace(0, n - 1, MAX_SEGMENTS).astype(int)
        rank = np.where(c["src"][idx] >= 0, c["src"][idx], c["dst"][idx]).astype(float)
        paths = c["path"][idx]
        for p in np.unique(paths):
            m = paths == p
            segs = np.stack([np.stack([c["t_start"][idx][m], rank[m]], 1),
                             np.stack([c["t_end"][idx][m], rank[m]], 1)], 1)
            ax.add_collection(LineCollection(segs, colors=[cmap(int(p) % 10)], linewidths=1.5,
                                             label=c["path_names"][int(p)]))
        ax.set_xlim(0, tmax * 1.02)
        ax.set_ylim(-1, max(1.0, float(rank.max()) + 1))
        ax.set_ylabel("rank (source)")
        ax.set_title(f"{label}: {n} transfers, {float(np.max(c['t_end'])):.3g} s", fontsize=9)
        ax.legend(loc="upper right", fontsize=7)
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(f"{out}/{fname}", dpi=DPI)
    plt.close(fig)
    return fname


def headline(f, out):
    """The headline's real runs, one step each (the median step), on one time
    axis: every transfer per rank, each strategy's lower bound, its measured
    step time and the simulator's prediction of the same plan."""
    rows = []
    for s in ("broadcast", "p2p"):
        real = document(f, f"headline_sync_{s}")
        evs = events(f, f"headline_sync_{s}")
        if not real or not evs or not len(evs[0][1]["t_start"]):
            return None
        steps = real.get("steps", [])
        if not steps:
            return None
        # The step whose time is tide sync's median (its "median_step_seconds").
        med = real["median_step_seconds"]
        step = min(steps, key=lambda st: abs(st["seconds"] - med))["step"]
        c = evs[0][1]
        m = c["step"] == step
        if not m.any():  # steps numbered otherwise: the events of the last one
            m = c["step"] == c["step"].max()
        sim = document(f, f"headline_sim_{s}")
        pred = sim["results"][0]["seconds"] if sim else None
        rows.append((s, real, {k: (v[m] if isinstance(v, np.ndarray) else v) for k, v in c.items()},
                     step, pred))
    fig, axes = plt.subplots(2, 1, figsize=(10, 6.2), sharex=True)
    # Path colours that none of the marker lines use.
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:cyan", "tab:olive", "tab:brown",
              "tab:pink", "tab:gray"]
    tmax = 0.0
    for ax, (s, real, c, step, pred) in zip(axes, rows):
        t0 = float(np.min(c["t_start"]))
        rank = np.where(c["src"] >= 0, c["src"], c["dst"]).astype(float)
        for i, p in enumerate(np.unique(c["path"])):
            m = c["path"] == p
            segs = np.stack([np.stack([c["t_start"][m] - t0, rank[m]], 1),
                             np.stack([c["t_end"][m] - t0, rank[m]], 1)], 1)
            ax.add_collection(LineCollection(segs, colors=[colors[i % len(colors)]],
                                             linewidths=2, label=c["path_names"][int(p)]))
        secs = next(st["seconds"] for st in real["steps"] if st["step"] == step)
        lb = real["lower_bound_seconds"]
        ax.axvline(lb, color="black", ls="--", lw=1.5, label=f"lower bound {lb:.2f} s")
        ax.axvline(secs, color="tab:red", lw=1.5, label=f"measured {secs:.2f} s")
        if pred:
            ax.axvline(pred, color="tab:purple", ls=":", lw=1.5, label=f"simulated {pred:.2f} s")
        tmax = max(tmax, secs, lb, pred or 0, float(np.max(c["t_end"])) - t0)
        ax.set_ylim(-1, float(rank.max()) + 1)
        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_ylabel("rank (sender)")
        ax.set_title(f"{s}: step {step}, {len(c['t_start'])} transfers, "
                     f"{secs / lb:.2f}x its bound ({real.get('bottleneck', '')})", fontsize=9)
        ax.legend(loc="upper right", fontsize=7)
    axes[-1].set_xlim(0, tmax * 1.04)
    axes[-1].set_xlabel("time since the step's first transfer (s)")
    b, p = (r[1]["median_step_seconds"] for r in rows)
    lb_b, lb_p = (r[1]["lower_bound_seconds"] for r in rows)
    model = rows[0][1].get("model", "")
    if rows[0][1].get("scale", 1) > 1:
        model += f" / {rows[0][1]['scale']}"
    fig.suptitle(f"{model}, real run on the emulated cluster: "
                 f"p2p {b / p:.2f}x faster than broadcast (bounds: {lb_b / lb_p:.2f}x)")
    fig.tight_layout()
    fig.savefig(f"{out}/timeline_headline.png", dpi=DPI)
    plt.close(fig)
    return "timeline_headline.png"


def sweep(f, out):
    doc = document(f, "sim_sweep")
    if not doc or not doc.get("points"):
        return None
    axes_ = sorted({p["axis"] for p in doc["points"]})
    fig, axes = plt.subplots(1, len(axes_), figsize=(4 * len(axes_), 3.4), squeeze=False)
    for ax, a in zip(axes[0], axes_):
        pts = sorted((p["value"], p["p2p_over_broadcast"]) for p in doc["points"] if p["axis"] == a)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-")
        ax.axhline(1.0, color="grey", ls="--", lw=1)
        ax.set_xlabel(a)
        ax.set_ylabel("p2p time / broadcast time")
    fig.suptitle("Kimi-K2, simulated: p2p / broadcast (below 1: p2p wins)")
    fig.tight_layout()
    fig.savefig(f"{out}/sweep.png", dpi=DPI)
    plt.close(fig)
    return "sweep.png"


def bars(f, out):
    labels, vals, refs, refnames = [], [], [], []
    for b in ("tcp", "shm", "rdma"):
        d = document(f, f"transport_{b}")
        if not d:
            continue
        labels.append(b)
        if "rows" in d:  # the SoftRoCE bench: per size, beside ib_write_bw; the largest size
            row = max(d["rows"], key=lambda r: r.get("size_bytes", 0))
            vals.append(row.get("tide_gbps_median", 0))
            refs.append(row.get("ib_write_bw_gbps_median", 0))
            refnames.append("ib_write_bw")
            continue
        vals.append(d["gbps"]["median"])
        ref = d.get("reference", {})
        refs.append(ref.get("gbps", {}).get("median", 0) if isinstance(ref.get("gbps"), dict) else 0)
        refnames.append(ref.get("name", ""))
    if not labels:
        return None
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.bar(x - 0.2, vals, 0.4, label="tide")
    ax.bar(x + 0.2, refs, 0.4, label="reference")
    ax.set_xticks(x, [f"{l}\n(vs {r})" for l, r in zip(labels, refnames)])
    ax.set_ylabel("GB/s (1e9 B/s), median")
    ax.legend()
    ax.set_title("Transport WRITE bandwidth beside its reference")
    fig.tight_layout()
    fig.savefig(f"{out}/transport.png", dpi=DPI)
    plt.close(fig)
    return "transport.png"


def rollout(f, out):
    d = document(f, "rollout")
    if not d:
        return None
    paths = d.get("paths")
    if isinstance(paths, dict):
        paths = paths.get("paths")
    if not paths:
        return None
    pts = [(p["path"], p["gbps_median"]) for p in paths if "gbps_median" in p]
    if not pts:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.bar([p[0] for p in pts], [p[1] for p in pts])
    ax.set_ylabel("GB/s (1e9 B/s), median")
    ax.set_title("Rollout batch: transfer paths side by side")
    fig.tight_layout()
    fig.savefig(f"{out}/rollout.png", dpi=DPI)
    plt.close(fig)
    return "rollout.png"


def compare(f, out):
    """One figure per `tide sim compare` part: the ranked strategies, each
    predicted time with its band and its lower bound."""
    made = []
    if "runs" not in f:
        return made
    for name in sorted(f["runs"]):
        if not name.startswith("compare_"):
            continue
        doc = document(f, name)
        if not doc or not doc.get("results"):
            continue
        rows = doc["results"]  # fastest first
        n = len(rows)
        fig, ax = plt.subplots(figsize=(8, 1.2 + 0.45 * n))
        y = np.arange(n)[::-1]
        secs = np.array([r["seconds"] for r in rows])
        # A band not computed (null, with its band_reason) draws no bar.
        band = [r.get("band_seconds") or [r["seconds"], r["seconds"]] for r in rows]
        lo = np.array([min(b[0], r["seconds"]) for b, r in zip(band, rows)])
        hi = np.array([max(b[1], r["seconds"]) for b, r in zip(band, rows)])
        lb = np.array([r["lower_bound_seconds"] for r in rows])
        ax.barh(y, secs, color="tab:blue", alpha=0.75, label="predicted")
        ax.errorbar(secs, y, xerr=[secs - lo, hi - secs], fmt="none", ecolor="black", capsize=3,
                    lw=1, label="band (constants' ranges)")
        ax.scatter(lb, y, marker="|", s=300, color="tab:red", zorder=3, label="lower bound")
        for yi, r, h in zip(y, rows, hi):
            ax.text(h * 1.08, yi,
                    f"{r['seconds']:.3g} s ({r.get('ratio_to_bound', 0):.1f}x bound)"
                    + ("" if r.get("band_seconds") else ", band not computed"),
                    va="center", fontsize=7)
        ax.set_yticks(y, [f"{r['strategy']} [{r['profile']}]" for r in rows], fontsize=8)
        ax.set_xscale("log")
        ax.set_xlim(min(lb[lb > 0].min() if (lb > 0).any() else secs.min(), lo.min()) / 1.5,
                    hi.max() * 4)
        ax.set_xlabel("weight update time (s), log scale")
        height = 1.2 + 0.45 * n
        fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=7,
                   frameon=False)
        ax.set_title(f"{doc.get('scenario', name)}: strategies ranked (simulated)", fontsize=9)
        fig.tight_layout(rect=(0, 0.3 / height, 1, 1))  # room for the legend below
        fname = f"{name}.png"
        fig.savefig(f"{out}/{fname}", dpi=DPI)
        plt.close(fig)
        made.append((fname, f"Design comparison, simulated: {doc.get('scenario', name)}"))
    return made


def matrix(f, out):
    """Real vs simulated per row of the validation matrix (validation_matrix.py)."""
    path = "runs/validate_matrix/documents/result"
    if path not in f:
        return None
    doc = json.loads(text(f[path][0]))  # also of a run whose rows partly failed
    import validation_matrix  # beside this script

    return "validation_matrix.png" if validation_matrix.scatter(doc, f"{out}/validation_matrix.png") else None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out = sys.argv[2]
    with h5py.File(sys.argv[1], "r") as f:
        made = [
            (headline(f, out), "Headline: real runs per rank on one time axis, lower bounds marked"),
            (timeline(f, ["sim_kimi_broadcast", "sim_kimi_p2p"], "Kimi-K2 weight update, simulated: every transfer per rank",
                      "timeline_sim.png", out), "Timeline per rank, simulated Kimi-K2: broadcast vs p2p"),
            (timeline(f, ["sync_threads_broadcast", "sync_threads_p2p"],
                      "Real weight update (ranks as threads): every transfer per rank",
                      "timeline_sync.png", out), "Timeline per rank, real run (ranks as threads): broadcast vs p2p"),
            (sweep(f, out), "Simulated sweep: p2p / broadcast"),
            (matrix(f, out), "Validation matrix: real against simulated, one point per row"),
            (bars(f, out), "Transport bandwidth beside its reference"),
            (rollout(f, out), "Rollout data plane paths"),
        ]
        made += compare(f, out)
    for fname, caption in made:
        if fname:
            print(f"figure {fname}\t{caption}")


if __name__ == "__main__":
    main()
