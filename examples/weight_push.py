#!/usr/bin/env python3
"""A weight push of a model of real size, tide against the baseline.

The trainer holds a torch model of about --push-mb MB (a stack of square
Linear layers, fp32 or bf16), changes every weight in place before each push
(as an optimizer step does), and pushes it to N worker processes that each
hold their own copy of the model:

  tide      tide.weight_sync over the model's own parameters (p2p writes
            into the workers' registered shards, every byte checked against
            the trainer's digests, then copied into the worker's model);
  baseline  the state dict as numpy arrays pickled with protocol 5 and
            out-of-band buffers into one shared-memory segment, each worker
            reading it in place and copying it into its model.

A push is timed on the trainer from its start until every worker has the
new weights in its model. Each worker then checks, apart from either
transport, that its parameters' SHA-256 is the trainer's. Run by
examples/rl_loop.py --compare, or alone:

    PYTHONPATH=build/python python3 examples/weight_push.py
"""

import argparse
import hashlib
import json
import multiprocessing as mp
import sys
import time

import numpy as np

from object_store import get_object, put_object, unlink_object

WIDTH = 2048


def make_model(mb, dtype):
    import torch

    per_layer = WIDTH * WIDTH * (2 if dtype == "bf16" else 4) / 1e6
    layers = max(1, round(mb / per_layer))
    model = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH, bias=True)
                                  for _ in range(layers)])
    return model.to(torch.bfloat16) if dtype == "bf16" else model


def digest(model):
    import torch

    h = hashlib.sha256()
    for v in model.state_dict().values():
        t = v.detach()
        h.update((t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes())
    return h.hexdigest()


def _worker(rank, port, args, queues):
    import torch

    torch.set_num_threads(1)
    import tide

    store = tide.Store.connect("127.0.0.1", port, token="wp", timeout=args.timeout)
    model = make_model(args.push_mb, args.push_dtype)
    sync = (tide.weight_sync(store, model, rank=rank, engines=args.workers, backend=args.backend,
                             timeout=args.timeout, connect_timeout=args.timeout)
            if args.transport == "tide" else None)
    for rep in range(args.push_reps):
        if sync is not None:
            sync.update()
        else:
            ref = queues["weights"][rank].get(timeout=args.timeout)

            def load(state):
                with torch.no_grad():
                    for k, v in model.state_dict().items():
                        src = torch.from_numpy(state[k])
                        v.copy_(src.view(torch.bfloat16) if v.dtype == torch.bfloat16 else src)

            get_object(ref, load, unlink=False)
        store.set("have/%d/%d" % (rep, rank), b"1")  # the weights are in the model
        store.set("digest/%d/%d" % (rep, rank), digest(model).encode())
    if sync is not None:
        sync.close()


def run(args):
    """Pushes of one transport: seconds per push (the first is warm-up)."""
    import torch

    import tide

    torch.set_num_threads(1)
    store = tide.Store.host("127.0.0.1", 0, token="wp")
    ctx = mp.get_context("spawn")
    queues = ({"weights": {w: ctx.Queue() for w in range(1, args.workers + 1)}}
              if args.transport == "baseline" else None)
    procs = [ctx.Process(target=_worker, args=(w, store.port, args, queues))
             for w in range(1, args.workers + 1)]
    for p in procs:
        p.start()
    model = make_model(args.push_mb, args.push_dtype)
    nbytes = sum(v.numel() * v.element_size() for v in model.state_dict().values())
    sync = (tide.weight_sync(store, model, rank=0, engines=args.workers, backend=args.backend,
                             timeout=args.timeout, connect_timeout=args.timeout)
            if args.transport == "tide" else None)
    seconds = []
    for rep in range(args.push_reps):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0 / 64)  # every weight changes, as after an optimizer step
        t0 = time.perf_counter()
        if sync is not None:
            sync.update()
        else:
            state = {k: (v.detach().view(torch.int16) if v.dtype == torch.bfloat16
                         else v.detach()).numpy() for k, v in model.state_dict().items()}
            ref = put_object(state)
            for w in range(1, args.workers + 1):
                queues["weights"][w].put(ref)
        for w in range(1, args.workers + 1):
            store.get("have/%d/%d" % (rep, w), args.timeout)
        seconds.append(time.perf_counter() - t0)
        if sync is None:
            unlink_object(ref)
        want = digest(model)
        for w in range(1, args.workers + 1):
            if store.get("digest/%d/%d" % (rep, w), args.timeout).decode() != want:
                raise SystemExit("weight push: worker %d does not hold push %d" % (w, rep))
    for p in procs:
        p.join(args.timeout)
        if p.exitcode != 0:
            raise SystemExit("weight push: a worker failed (exit %s)" % p.exitcode)
    if sync is not None:
        sync.close()
    steady = seconds[1:] if len(seconds) > 1 else seconds
    med = float(np.median(steady))
    return {"transport": args.transport, "dtype": args.push_dtype, "workers": args.workers,
            "bytes": int(nbytes), "push_s": med, "seconds": seconds,
            "gbps": nbytes * args.workers / med / 1e9, "bit_exact": True}


def compare(args):
    """tide and the baseline; returns both rows and the ratio."""
    rows = []
    for transport in ("tide", "baseline"):
        a = argparse.Namespace(**vars(args))
        a.transport = transport
        rows.append(run(a))
    t, b = rows
    print("weight push, %.0f MB of %s to %d workers: tide %.3f s (%.2f GB/s delivered), "
          "baseline %.3f s (%.2f GB/s): %.2fx; every push bit-exact on every worker" % (
              t["bytes"] / 1e6, t["dtype"], t["workers"], t["push_s"], t["gbps"], b["push_s"],
              b["gbps"], b["push_s"] / t["push_s"]), flush=True)
    return {"rows": rows, "ratio": b["push_s"] / t["push_s"]}


def add_arguments(ap):
    ap.add_argument("--push-mb", type=float, default=256, help="model size for the weight push")
    ap.add_argument("--push-dtype", choices=["fp32", "bf16"], default="bf16")
    ap.add_argument("--push-reps", type=int, default=4, help="pushes (the first is warm-up)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(ap)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--backend", default="shm")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if args.push_reps < 1 or args.workers < 1 or args.push_mb <= 0:
        ap.error("--push-reps and --workers >= 1, --push-mb > 0")
    out = compare(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, allow_nan=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
