#!/usr/bin/env python3
"""Plot metric medians across result sets (input: `tide compare` history JSON)."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, out):
    with open(src) as f:
        h = json.load(f)
    sets = h["sets"]
    metrics = h["metrics"]
    names = sorted(metrics)[:24]  # a readable page; the JSON holds them all
    fig, ax = plt.subplots(figsize=(9, 5))
    for name in names:
        med = metrics[name]["medians"]
        base = next((m for m in med if m), None)
        if not base:
            continue
        rel = [None if m is None else 100.0 * m / base for m in med]
        ax.plot(range(len(sets)), rel, marker="o", label=name)
    ax.axhline(100, color="grey", lw=0.8)
    ax.set_xticks(range(len(sets)))
    ax.set_xticklabels([s.rsplit("/", 1)[-1] for s in sets], rotation=30, ha="right")
    ax.set_ylabel("median, % of first set")
    ax.set_title("tide metrics across result sets")
    ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
