#!/usr/bin/env python3
"""Micro-benchmarks of the RL framework's host-side per-tensor work, on CPU.

Times, with PyTorch on this host's CPU, the operations the weight-update
code issues per tensor from Python (docs/sim.md, "Micro-benchmarks"):
  alloc         torch.empty of one tensor (allocator + tensor object)
  narrow_copy   dst.narrow(0, off, n).copy_(src) of a small tensor: the
                loaders' slice-and-copy, dispatch only (16 elements)
  name_match    one step of a loader's name-matching loop: a tuple unpack
                and a substring test over a Kimi-K2-like expert mapping
                (384 experts x 3 projections = 1,152 entries) for each of
                Kimi-K2-like parameter names
  gloo_call     one torch.distributed broadcast of a 16-element tensor on
                the gloo backend in a world of one process (the host-side
                cost of a collective call, no peer to wait for)
Each figure is the median over repetitions, with the min and max. The CPU
model, core count, Python and torch versions go with the numbers.

Usage: /usr/bin/python3 scripts/micro_host_ops.py [--out FILE] [--reps N]
Needs Debian's python3-torch (apt-get install python3-torch); without it,
the script says so and exits 2.
"""
import argparse
import os
import sys
import tempfile
import time

from micro_common import emit, host, summary


def timed(fn, inner, reps):
    """Per-call seconds of fn() over `inner` calls, for each of `reps` runs."""
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        out.append((time.perf_counter() - t0) / inner)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write the JSON here (default: stdout)")
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args()
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        print("skipped: PyTorch is not installed for this python "
              "(Debian: apt-get install python3-torch; run with /usr/bin/python3)",
              file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    reps = a.reps
    results = {}

    # alloc: one tensor of an expert projection's shape (bf16, 2048 x 7168).
    results["alloc"] = summary(
        timed(lambda: torch.empty((2048, 7168), dtype=torch.bfloat16), 2000, reps), 1e6, "us")

    dst = torch.zeros(4096, dtype=torch.bfloat16)
    src = torch.ones(16, dtype=torch.bfloat16)
    results["narrow_copy"] = summary(
        timed(lambda: dst.narrow(0, 128, 16).copy_(src), 5000, reps), 1e6, "us")

    # name_match: the loaders' loop (tuple unpack, substring test) over the
    # expert mapping, for parameter names of Kimi-K2's shape.
    mapping = [("experts.w13_" if p != "down_proj" else "experts.w2_",
                f"experts.{e}.{p}.", e, p)
               for e in range(384) for p in ("gate_proj", "up_proj", "down_proj")]
    names = [f"model.layers.{l}.mlp.experts.{e}.{p}.weight"
             for l in (1, 30, 60) for e in (0, 191, 383) for p in ("gate_proj", "down_proj")]

    def scan():
        hits = 0
        for name in names:
            for param_name, weight_name, expert_id, shard_id in mapping:
                if weight_name not in name:
                    continue
                hits += 1
                break
        return hits

    steps = 0
    for name in names:
        for _, weight_name, _, _ in mapping:
            steps += 1
            if weight_name in name:
                break
    results["name_match"] = summary([t / steps for t in timed(scan, 20, reps)], 1e9, "ns")
    results["name_match"]["steps_per_scan"] = steps

    # gloo_call: a collective in a world of one, over a file store.
    with tempfile.TemporaryDirectory() as d:
        dist.init_process_group("gloo", init_method="file://" + os.path.join(d, "store"),
                                rank=0, world_size=1)
        t = torch.zeros(16)
        results["gloo_call"] = summary(timed(lambda: dist.broadcast(t, 0), 2000, reps), 1e6, "us")
        dist.destroy_process_group()

    doc = {
        "schema": "tide.micro.host_ops/1",
        "command": "/usr/bin/python3 scripts/micro_host_ops.py" + (f" --out {a.out}" if a.out else ""),
        **host(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "results": results,
    }
    emit(doc, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
