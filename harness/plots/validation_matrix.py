#!/usr/bin/python3
"""Real vs simulated step time of every row of a validation matrix
(`tide validate --matrix --json F`, schema tide.validate.matrix/1): one point
per row, y = x and the +-10 % lines, tcp and rdma marked apart.

usage: /usr/bin/python3 harness/plots/validation_matrix.py F.json OUT.png
"""
import json
import sys


def scatter(doc, out_png):
    """Writes the figure; returns False when no row ran."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in doc.get("rows", []) if r.get("status") == "ok"]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(6, 5.4))
    lo = min(min(r["real_s"], r["sim_s"]) for r in rows) * 0.8
    hi = max(max(r["real_s"], r["sim_s"]) for r in rows) * 1.25
    xs = [lo, hi]
    ax.plot(xs, xs, color="black", lw=1, label="y = x")
    for f, style in ((1.1, "--"), (0.9, "--")):
        ax.plot(xs, [x * f for x in xs], color="grey", ls=style, lw=1)
    ax.plot([], [], color="grey", ls="--", lw=1, label="±10 %")
    marks = {("tcp", "broadcast"): ("o", "tab:blue"), ("tcp", "p2p"): ("s", "tab:orange"),
             ("tcp", "p2p-rr"): ("^", "tab:green"), ("rdma", "broadcast"): ("o", "tab:purple"),
             ("rdma", "p2p"): ("s", "tab:red"), ("rdma", "p2p-rr"): ("^", "tab:brown")}
    for (backend, strategy), (m, c) in marks.items():
        pts = [r for r in rows if r["backend"] == backend and r["strategy"] == strategy]
        if pts:
            ax.scatter([r["real_s"] for r in pts], [r["sim_s"] for r in pts], marker=m,
                       color=c, s=28, label=f"{strategy} ({backend})", zorder=3)
    worst = sorted(rows, key=lambda r: -abs(r["error"]))[:3]
    for r in worst:
        ax.annotate(r["name"], (r["real_s"], r["sim_s"]), fontsize=7,
                    xytext=(4, -10), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("real step, median (s)")
    ax.set_ylabel("simulated step (s)")
    ax.set_title(f"Validation matrix: {len(rows)} rows, |error| median "
                 f"{doc['median_abs_error'] * 100:.1f} %, p90 {doc['p90_abs_error'] * 100:.1f} %, "
                 f"max {doc['max_abs_error'] * 100:.1f} %", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out_png, dpi=80)
    plt.close(fig)
    return True


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    if doc.get("schema") != "tide.validate.matrix/1":
        sys.exit(f"validation_matrix.py: {sys.argv[1]} is not tide.validate.matrix/1")
    if not scatter(doc, sys.argv[2]):
        sys.exit("validation_matrix.py: no row of the matrix ran")


if __name__ == "__main__":
    main()
