#!/usr/bin/env python3
"""The data plane from Python against the C++ path, same run, same backend:
one ragged rollout batch (prompt, response, log_probs ragged; reward dense)
put by one rank and read by another, timed put + get + done + reap per
repetition, as `tide rollout`'s "tide" path (a batch built in pool memory)
and "tide_packed" path (a batch in heap memory, packed on put) time it.

    PYTHONPATH=build/python python3 python/bench/put_get.py --tide build/tide

Prints both paths' GB/s (median) and Python / C++; --json writes them.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import tide


def cpp_paths(binary, backend, samples, reps):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([binary, "rollout", "--backend", backend, "--samples", str(samples),
                        "--reps", str(reps), "--no-bus", "--json", f.name], check=True,
                       stdout=subprocess.DEVNULL)
        doc = json.load(open(f.name))
    return {p["path"]: p for p in doc["side_by_side"]["paths"] if "gbps_median" in p}


def rollout(alloc, samples, total_bytes, seed):
    """Columns of about `total_bytes`, written once into memory from `alloc`."""
    rng = np.random.default_rng(seed)
    resp = np.minimum(rng.lognormal(np.log(600), 0.9, samples).astype(np.int64) + 1, 32768)
    fixed = samples * (4 + 3 * 8) + 2 * 4 * int(resp.sum())  # reward, offsets, response, log_probs
    mean_prompt = max(1, (total_bytes - fixed) // (4 * samples))
    prompt = rng.integers(mean_prompt // 2, mean_prompt * 3 // 2 + 1, samples)
    cols = {}
    for name, lens, dt in (("prompt", prompt, np.int32), ("response", resp, np.int32),
                           ("log_probs", resp, np.float32)):
        offs = alloc([samples + 1], np.int64)
        offs[0] = 0
        np.cumsum(lens, out=offs[1:])
        vals = alloc([int(offs[-1])], dt)
        vals[:] = 7  # written, as a worker writes its tokens
        cols[name] = tide.Ragged(vals, offs)
    reward = alloc([samples], np.float32)
    reward[:] = rng.standard_normal(samples)
    cols["reward"] = reward
    return tide.Batch.from_dict(cols)


def python_path(a, b, batch, reps):
    seconds, moved = [], 0
    for i in range(reps + 1):  # the first is warm-up, as in tide rollout
        name = "bench/%d" % i
        t0 = time.perf_counter()
        a.put(name, batch)
        got = b.get(name)
        moved = sum(got[f].values.nbytes + got[f].offsets.nbytes
                    if isinstance(got[f], tide.Ragged) else got[f].nbytes for f in got.fields)
        del got
        b.done(name)
        a.reap()
        if i:
            seconds.append(time.perf_counter() - t0)
    return moved, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tide", default="build/tide", help="the tide binary (the C++ path)")
    ap.add_argument("--backend", default="shm")
    ap.add_argument("--samples", type=int, default=32768)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()

    cpp = cpp_paths(args.tide, args.backend, args.samples, args.reps)
    total = int(cpp["tide"]["bytes"])
    big = (total * 5 // 4 + (1 << 20)) // (1 << 20) << 20
    store, nodes = tide.Store.memory(), [None, None]

    def make(r):
        nodes[r] = tide.Node(store, backend=args.backend, rank=r, world_size=2,
                             pool=[(1 << 20, 8), (big, 3)], timeout=120)

    ts = [threading.Thread(target=make, args=(r,)) for r in (0, 1)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    a, b = nodes
    out = {"schema": "tide.python.put_get/1", "backend": args.backend, "samples": args.samples,
           "paths": []}
    for path, alloc in (("tide", a.empty), ("tide_packed", lambda s, d: np.empty(s, d))):
        batch = rollout(alloc, args.samples, total, 1)
        moved, secs = python_path(a, b, batch, args.reps)
        del batch
        py = moved / float(np.median(secs)) / 1e9
        ref = cpp[path]["gbps_median"]
        out["paths"].append({"path": path, "python_bytes": moved, "python_gbps_median": py,
                             "python_seconds": secs, "cpp_bytes": cpp[path]["bytes"],
                             "cpp_gbps_median": ref, "ratio": py / ref})
        print("%-12s python %7.3f GB/s (%d B)   C++ %7.3f GB/s (%d B)   python/C++ %.2f" % (
            path, py, moved, ref, cpp[path]["bytes"], py / ref), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
