#!/usr/bin/python3
"""Plots `tide sim sweep --csv F.csv`: p2p/broadcast time ratio per swept axis,
with the crossover (ratio 1: above it p2p loses).

usage: /usr/bin/python3 harness/plots/sweep.py F.csv OUT.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = {}
    with open(sys.argv[1]) as f:
        for r in csv.DictReader(f):
            rows.setdefault(r["axis"], []).append(
                (float(r["value"]), float(r["p2p_over_broadcast"])))
    if not rows:
        sys.exit("sweep.py: no rows in " + sys.argv[1])
    fig, axes = plt.subplots(1, len(rows), figsize=(5 * len(rows), 4), squeeze=False)
    for ax, (axis, pts) in zip(axes[0], sorted(rows.items())):
        pts.sort()
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        ax.plot(xs, ys, "o-")
        ax.axhline(1.0, color="red", linestyle="--", label="crossover (p2p = broadcast)")
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if (y0 - 1) * (y1 - 1) < 0:  # linear interpolation of the crossing
                xc = x0 + (1 - y0) * (x1 - x0) / (y1 - y0)
                ax.axvline(xc, color="gray", linestyle=":")
                ax.annotate("%.3g" % xc, (xc, 1.0))
        ax.set_xlabel(axis)
        ax.set_ylabel("p2p time / broadcast time")
        ax.set_xscale("log", base=2)
        ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)


if __name__ == "__main__":
    main()
