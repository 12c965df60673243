#!/usr/bin/env python3
"""Micro-benchmark of the Python side of one transfer-engine write call.

The RL framework's p2p path (radixark/miles at PR #976,
`update_weight_from_distributed/p2p.py`) writes each set of ready replica
parameters to each session with one `batch_transfer_sync_write`, submitted
to a ThreadPoolExecutor and, for all but the last engine rank, waited for.
What of one such call runs in Python, timed here on this host's CPU with
the standard library only (docs/sim-history.md, "a per-call cost of the
transfer engine"):
  pool_handoff  executor.submit(fn) + future.result() of a function that
                returns at once: the hand-off to a pool thread and back
  per_name      the session function's list building per parameter name
                (`_do_p2p_write_one_session`: a registry lookup, three
                appends, a membership test and a lookup in the remote
                session's table), over 64 names of a 1,400-entry registry
The C++ part of the call (pybind's list conversion, the batch's
allocation, submission per request and slice, status polling, release)
is not timed: no transfer engine runs here.

Usage: python3 scripts/micro_te_call.py [--out FILE] [--reps N]
"""
import argparse
import time
from concurrent.futures import ThreadPoolExecutor

from micro_common import emit, host, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write tide.micro.te_call/1 JSON here")
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args()
    if a.reps < 1:
        ap.error("--reps must be >= 1")

    pool = ThreadPoolExecutor(max_workers=4)  # the framework's default worker count
    noop = lambda: 0
    for _ in range(200):
        pool.submit(noop).result()
    handoff = []
    for _ in range(a.reps):
        n = 2000
        t0 = time.perf_counter()
        for _ in range(n):
            pool.submit(noop).result()
        handoff.append((time.perf_counter() - t0) / n)
    pool.shutdown()

    registry = {f"model.layers.{i // 20}.p{i % 20}.weight": (4096 * i, 1024, 2) for i in range(1400)}
    remote = {k: (v[0] + 7, v[1], v[2]) for k, v in registry.items()}
    names = list(registry)[700:764]

    def build():
        src, lens, valid = [], [], []
        for name in names:
            ptr, numel, size = registry.get(name)
            src.append(ptr)
            lens.append(numel * size)
            valid.append(name)
        dst = []
        for name in valid:
            if name in remote:
                dst.append(remote[name][0])
        return src, dst, lens

    per_name = []
    for _ in range(a.reps):
        n = 2000
        t0 = time.perf_counter()
        for _ in range(n):
            build()
        per_name.append((time.perf_counter() - t0) / n / len(names))

    out = {
        "schema": "tide.micro.te_call/1",
        "command": "python3 scripts/micro_te_call.py" + (f" --out {a.out}" if a.out else ""),
        **host(),
        "results": {
            "pool_handoff": summary(handoff, 1e6, "us"),
            "per_name": summary(per_name, 1e9, "ns"),
        },
    }
    emit(out, a.out)


if __name__ == "__main__":
    main()
