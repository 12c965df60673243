#!/usr/bin/env python3
"""A small, real RL loop on CPU with tide's data plane and weight sync.

A torch policy (embedding -> MLP -> vocabulary logits) is trained with
REINFORCE to emit low token ids. N rollout-worker processes each hold a copy
of the policy, sample ragged token responses for long prompts (slices of a
prompt corpus) and hand the rollouts to the trainer process; the trainer
recomputes the responses' log-probabilities under its own policy, takes an
Adam step, and pushes the new weights to every worker before they generate
again (sync), or while they keep generating one version behind (async).

Two transports for the same loop, side by side (--compare; it also pushes a
model of real size both ways, examples/weight_push.py):
  tide      rollouts as typed-ragged batches written into the workers'
            registered pools and read once by the trainer (tide.Node and
            the rollout bus); weights by tide.WeightSync (p2p writes into the
            workers' registered shards, every byte checked against digests
            of the trainer's tensors).
  baseline  what frameworks do over Ray's object store, from the standard
            library: a dict per sample (token arrays, log-probs, reward)
            pickled with protocol 5 and out-of-band buffers into a fresh
            multiprocessing.shared_memory segment, read back with the
            buffers in place and collated into batch arrays; weights as a
            pickled state dict through shared memory.

Every received weight is also checked here, apart from tide: each worker
hashes its parameters after a push and the trainer compares them with its
own. Run from the repository with the package built:

    PYTHONPATH=build/python python3 examples/rl_loop.py --compare
"""

import argparse
import hashlib
import json
import multiprocessing as mp
import sys
import time

import numpy as np

import weight_push
from object_store import get_object, put_object, unlink_object

VOCAB, DIM, MAX_RESPONSE = 64, 32, 32


# ---------------------------------------------------------------- the policy

def make_policy(seed=0):
    import torch

    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Embedding(VOCAB, DIM), torch.nn.Linear(DIM, DIM),
                               torch.nn.Tanh(), torch.nn.Linear(DIM, VOCAB))


def generate(policy, first, rng):
    """Samples one response per start token: ragged (values, offsets) of
    token ids and their log-probs under the policy, and a reward per sample
    (the share of tokens below VOCAB/4, what the policy learns to emit)."""
    import torch

    n = len(first)
    tokens = np.zeros((n, MAX_RESPONSE), np.int32)
    logp = np.zeros((n, MAX_RESPONSE), np.float32)
    lengths = rng.integers(MAX_RESPONSE // 4, MAX_RESPONSE + 1, n)
    cur = torch.from_numpy(first.astype(np.int64))
    gen = torch.Generator().manual_seed(int(rng.integers(1 << 31)))
    with torch.no_grad():
        for t in range(MAX_RESPONSE):
            lp = torch.log_softmax(policy(cur), dim=-1)
            nxt = torch.multinomial(lp.exp(), 1, generator=gen).squeeze(1)
            tokens[:, t] = nxt.numpy()
            logp[:, t] = lp.gather(1, nxt[:, None]).squeeze(1).numpy()
            cur = nxt
    mask = np.arange(MAX_RESPONSE)[None, :] < lengths[:, None]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    reward = ((tokens < VOCAB // 4) & mask).sum(1) / lengths
    return tokens[mask], logp[mask], offsets, reward.astype(np.float32)


def train_step(policy, opt, first, resp, offsets, reward):
    """REINFORCE on the ragged responses, log-probs recomputed here."""
    import torch

    n = len(offsets) - 1
    lengths = np.diff(offsets)
    padded = np.zeros((n, MAX_RESPONSE), np.int64)
    mask = np.arange(MAX_RESPONSE)[None, :] < lengths[:, None]
    padded[mask] = resp
    tok = torch.from_numpy(padded)
    prev = torch.cat([torch.from_numpy(first.astype(np.int64))[:, None], tok[:, :-1]], 1)
    lp = torch.log_softmax(policy(prev), dim=-1).gather(2, tok[:, :, None]).squeeze(2)
    lp = (lp * torch.from_numpy(mask)).sum(1)
    r = torch.from_numpy(reward)
    loss = -((r - r.mean()) * lp).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(reward.mean())


def weights_digest(policy):
    h = hashlib.sha256()
    for v in policy.state_dict().values():
        h.update(v.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


# ----------------------------------------------------------- rollout layout

def rollout_columns(alloc, corpus, rng, samples, prompt_tokens, layout, policy):
    """One worker's rollout batch as columns, each written once into memory
    from `alloc` (a tide pool, or the worker's heap for the baseline)."""
    if layout == "ragged":
        lens = rng.integers(prompt_tokens // 2, prompt_tokens * 3 // 2 + 1, samples)
    else:
        lens = np.full(samples, prompt_tokens)
    starts = rng.integers(0, len(corpus) - lens.max(), samples)
    poff = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    pvals = alloc([int(poff[-1])], np.int32)
    for i in range(samples):
        pvals[poff[i]:poff[i + 1]] = corpus[starts[i]:starts[i] + lens[i]]
    first = pvals[poff[1:] - 1]
    rvals, rlogp, roff, reward = generate(policy, first, rng)
    cols = {"first": first, "reward": reward}
    if layout == "ragged":
        cols.update(prompt=(pvals, poff), response=(rvals, roff), logprobs=(rlogp, roff))
    else:  # dense: fixed prompts, responses padded to MAX_RESPONSE with their lengths
        cols["prompt"] = pvals.reshape(samples, prompt_tokens)
        lengths = np.diff(roff)
        mask = np.arange(MAX_RESPONSE)[None, :] < lengths[:, None]
        for name, v in (("response", rvals), ("logprobs", rlogp)):
            d = alloc([samples, MAX_RESPONSE], v.dtype)
            d[...] = 0
            d[mask] = v
            cols[name] = d
        cols["lengths"] = lengths.astype(np.int32)
    return cols


def responses_of(cols):
    """(first, response values, offsets, reward) from either layout."""
    if isinstance(cols["response"], tuple):
        vals, offs = cols["response"]
        return cols["first"], vals, offs, cols["reward"]
    lengths = cols["lengths"]
    mask = np.arange(MAX_RESPONSE)[None, :] < lengths[:, None]
    offs = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return cols["first"], cols["response"][mask], offs, cols["reward"]


def nbytes(cols):
    return sum(sum(a.nbytes for a in v) if isinstance(v, tuple) else v.nbytes
               for v in cols.values())


# ------------------------------------------------- transport: tide

class TideSide:
    def __init__(self, store, rank, world, args, policy):
        import tide

        self.tide = tide
        pool = [(1 << 20, 32), (args.pool_mb << 20, 4)]
        self.node = tide.Node(store, backend=args.backend, rank=rank, world_size=world,
                              pool=pool, timeout=args.timeout)
        cfg = dict(producers=world - 1, consumers=1, name="rollouts", timeout=args.timeout)
        if args.mode == "async":
            cfg.update(queue_capacity=2 * (world - 1), max_staleness=args.max_staleness)
        self.bus_cfg = tide.BusConfig(mode=args.mode, **cfg)
        self.rank = rank
        if rank == 0:
            self.bus = tide.RolloutConsumer(self.node, self.bus_cfg, 0)
        else:
            self.bus = tide.RolloutProducer(self.node, self.bus_cfg, rank - 1)
        self.weights = tide.weight_sync(store, policy, rank=rank, engines=world - 1,
                                        backend=args.backend, timeout=args.timeout,
                                        connect_timeout=args.timeout)
        self.alloc = self.node.empty

    def send(self, step, version, cols):
        t0 = time.perf_counter()
        batch = self.tide.Batch.from_dict(
            {k: self.tide.Ragged(*v) if isinstance(v, tuple) else v for k, v in cols.items()},
            meta={"version": version})
        if self.bus_cfg.mode == "sync":
            self.bus.put_step(step, batch)
        else:
            self.bus.put(batch, version)
        return time.perf_counter() - t0

    def end_send(self, step):
        if self.bus_cfg.mode == "sync":
            self.bus.end_step(step)
        else:
            self.bus.reap()

    def take_step(self, step):
        """sync: every worker's batch of `step`, as (columns, version)."""
        return [(self._columns(b), b.meta["version"]) for b in self.bus.get_step(step)]

    def take(self, step, version):
        """async: the next batch on the bus fresh enough (the bus drops the
        others unread), or None."""
        got = self.bus.get(version)
        return None if got is None else (self._columns(got[0]), got[1])

    def claimed(self):
        """Slots of the queue taken so far, dropped ones included."""
        st = self.bus.stats
        return st["batches"] + st["dropped"]

    def end_receive(self, step):
        if self.bus_cfg.mode == "sync":
            self.bus.end_step(step)

    @staticmethod
    def _columns(b):
        cols = {}
        for k in b.fields:
            c = b[k]
            cols[k] = (c.values, c.offsets) if hasattr(c, "offsets") else c
        return cols

    def push(self, policy):
        return self.weights.update()["seconds"]

    def pull(self, policy):
        self.weights.update()  # into the policy's own parameters, verified first

    def close(self):
        self.weights.close()


# --------------------------------------------- transport: the baseline

def per_sample(cols):
    """The rollout as the frameworks keep it: a dict per sample."""
    out = []
    for i in range(len(cols["reward"])):
        out.append({k: (v[0][v[1][i]:v[1][i + 1]] if isinstance(v, tuple) else v[i])
                    for k, v in cols.items()})
    return out


def collate(samples, ragged):
    """Batch arrays again (what a trainer's data loader does)."""
    cols = {}
    for k in samples[0]:
        if ragged and k in ("prompt", "response", "logprobs"):
            offs = np.concatenate([[0], np.cumsum([len(s[k]) for s in samples])]).astype(np.int64)
            cols[k] = (np.concatenate([s[k] for s in samples]), offs)
        else:
            cols[k] = np.stack([s[k] for s in samples])
    return cols


class BaselineSide:
    def __init__(self, store, queues, rank, args):
        self.store, self.q, self.rank, self.args = store, queues, rank, args
        self.alloc = lambda shape, dtype: np.empty(shape, dtype)
        self.taken = 0

    def send(self, step, version, cols):
        t0 = time.perf_counter()
        self.q["rollouts"].put((put_object(per_sample(cols)), version))
        return time.perf_counter() - t0

    def end_send(self, step):
        pass

    def _get(self, version):
        ref, v = self.q["rollouts"].get(timeout=self.args.timeout)
        if self.args.mode == "async" and version - v > self.args.max_staleness:
            unlink_object(ref)  # dropped unread, as the bus drops it
            return None
        return get_object(ref, lambda s: collate(s, self.args.layout == "ragged")), v

    def take_step(self, step):
        return [self._get(0) for _ in range(self.args.workers)]

    def take(self, step, version):
        self.taken += 1
        return self._get(version)

    def claimed(self):
        return self.taken

    def end_receive(self, step):
        pass

    def push(self, policy):
        t0 = time.perf_counter()
        ref = put_object({k: v.detach().numpy() for k, v in policy.state_dict().items()})
        for w in range(1, self.args.workers + 1):
            self.q["weights"][w].put(ref)
        for _ in range(self.args.workers):
            self.q["loaded"].get(timeout=self.args.timeout)
        unlink_object(ref)
        return time.perf_counter() - t0

    def pull(self, policy):
        import torch

        def load(state):
            with torch.no_grad():
                for k, v in policy.state_dict().items():
                    v.copy_(torch.from_numpy(state[k]))

        get_object(self.q["weights"][self.rank].get(timeout=self.args.timeout), load,
                   unlink=False)
        self.q["loaded"].put(self.rank)

    def close(self):
        pass


# ------------------------------------------------------------ the processes

def make_side(args, store, queues, rank, policy):
    if args.transport == "tide":
        return TideSide(store, rank, args.workers + 1, args, policy)
    return BaselineSide(store, queues, rank, args)


def count(store, key):
    return store.add(key, 0)


def worker(rank, port, args, queues):
    import torch

    torch.set_num_threads(1)
    import tide

    store = tide.Store.connect("127.0.0.1", port, token="rl", timeout=args.timeout)
    policy = make_policy(seed=rank)  # not the trainer's: the first push must fix it
    side = make_side(args, store, queues, rank, policy)
    rng = np.random.default_rng(rank)
    corpus = rng.integers(0, VOCAB, args.corpus_tokens, dtype=np.int32)
    per_worker = args.samples // args.workers
    pushes = 0

    def take_push():
        nonlocal pushes
        side.pull(policy)
        pushes += 1
        store.set("digest/%d/%d" % (pushes, rank), weights_digest(policy).encode())

    take_push()  # the trainer's initial weights
    step = 0
    while True:
        if args.mode == "sync":
            if step == args.steps:
                break
        else:
            # Never more than one batch per worker waiting: the bus always
            # has room, so a put never blocks while the trainer pushes.
            while count(store, "puts") - count(store, "consumed") >= args.workers:
                if count(store, "pushes") > pushes:
                    take_push()
                elif count(store, "stop"):
                    break
                else:
                    time.sleep(0.002)
            if count(store, "stop"):
                break
        step += 1
        cols = rollout_columns(side.alloc, corpus, rng, per_worker, args.prompt_tokens,
                               args.layout, policy)
        sent = side.send(step, pushes, cols)
        store.set("sent/%d/%d" % (rank, step), b"%f" % sent)
        del cols
        store.add("puts", 1)
        side.end_send(step)
        if args.mode == "sync":
            take_push()
        while count(store, "pushes") > pushes:
            take_push()
    store.add("exited", 1)
    if args.mode == "async":
        store.get("drained", args.timeout)  # the trainer read every batch put
    side.close()


def run(args):
    import torch

    import tide

    torch.set_num_threads(1)
    store = tide.Store.host("127.0.0.1", 0, token="rl")
    ctx = mp.get_context("spawn")
    queues = None
    if args.transport == "baseline":
        queues = {"rollouts": ctx.Queue(), "loaded": ctx.Queue(),
                  "weights": {w: ctx.Queue() for w in range(1, args.workers + 1)}}
    t_spawn = time.perf_counter()
    procs = [ctx.Process(target=worker, args=(w, store.port, args, queues))
             for w in range(1, args.workers + 1)]
    for p in procs:
        p.start()
    policy = make_policy(seed=0)
    opt = torch.optim.Adam(policy.parameters(), lr=3e-3)
    side = make_side(args, store, queues, 0, policy)
    version = 0

    def push():
        nonlocal version
        version += 1
        store.add("pushes", 1)
        seconds = side.push(policy)
        want = weights_digest(policy)
        for w in range(1, args.workers + 1):
            if store.get("digest/%d/%d" % (version, w), args.timeout).decode() != want:
                raise SystemExit("worker %d does not hold weights version %d" % (w, version))
        return seconds

    push()  # version 1 everywhere: the trainer's initial weights, checked
    rows, t_start = [], time.perf_counter()
    setup = t_start - t_spawn
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        if args.mode == "sync":  # generation, then the handoff alone
            sent = max(float(store.get("sent/%d/%d" % (w, step), args.timeout))
                       for w in range(1, args.workers + 1))
        t1 = time.perf_counter()
        if args.mode == "sync":
            batches = side.take_step(step)
            store.add("consumed", len(batches))
        else:
            batches = []
            while len(batches) < args.workers:
                before = side.claimed()
                b = side.take(step, version)
                store.add("consumed", side.claimed() - before)
                if b is not None:
                    batches.append(b)
        t2 = time.perf_counter()
        parts = [responses_of(c) for c, _ in batches]
        moved = sum(nbytes(c) for c, _ in batches)
        stale = [version - v for _, v in batches]
        del batches
        side.end_receive(step)
        first, resp, reward = (np.concatenate([p[i] for p in parts]) for i in (0, 1, 3))
        offs = join_offsets([p[2] for p in parts])
        del parts
        t3 = time.perf_counter()
        mean_reward = train_step(policy, opt, first, resp, offs, reward)
        t4 = time.perf_counter()
        rows.append({"step": step, "samples": int(len(reward)), "bytes": int(moved),
                     # async: the trainer's wait and read are one call
                     "rollout_wait_s": (t1 - t0) if args.mode == "sync" else t2 - t1,
                     "transfer_s": (sent + t2 - t1) if args.mode == "sync" else None,
                     "receive_s": t2 - t1, "train_s": t4 - t3, "push_s": push(),
                     "staleness": stale, "reward": mean_reward})
    wall = time.perf_counter() - t_start
    store.add("stop", 1)
    if args.mode == "async":
        while True:  # read what is still on the bus, until every worker left
            exited = count(store, "exited")
            if side.claimed() < count(store, "puts"):
                before = side.claimed()
                side.take(args.steps + 1, version)
                store.add("consumed", side.claimed() - before)
            elif exited == args.workers:
                break
            else:
                time.sleep(0.002)
        store.set("drained", b"1")
    for p in procs:
        p.join(args.timeout)
        if p.exitcode != 0:
            raise SystemExit("a worker failed (exit %s)" % p.exitcode)
    side.close()
    return summarize(args, rows, wall, setup)


def join_offsets(parts):
    out, base = [np.zeros(1, np.int64)], 0
    for o in parts:
        out.append(o[1:] + base)
        base += int(o[-1])
    return np.concatenate(out)


def summarize(args, rows, wall, setup):
    steady = rows[1:] if len(rows) > 1 else rows  # the first step pays the set-up

    def med(k):  # None where the mode has no such figure (JSON null)
        v = [r[k] for r in steady if r[k] is not None]
        return float(np.median(v)) if v else None

    return {"transport": args.transport, "layout": args.layout, "mode": args.mode,
            "backend": args.backend, "workers": args.workers, "steps": args.steps,
            "setup_s": setup, "samples_per_s": sum(r["samples"] for r in rows) / wall,
            "rollout_mb_per_step": med("bytes") / 1e6, "rollout_wait_s": med("rollout_wait_s"),
            "transfer_s": med("transfer_s"), "receive_s": med("receive_s"),
            "train_s": med("train_s"), "push_s": med("push_s"),
            "max_staleness": max(max(r["staleness"]) for r in rows),
            "reward_first": rows[0]["reward"], "reward_last": rows[-1]["reward"],
            "weights_bit_exact": True, "rows": rows}


# ------------------------------------------------------------------- report

def table(results):
    head = ("transport", "layout", "mode", "MB/step", "samples/s", "handoff s", "recv s",
            "wait s", "train s", "push s", "stale", "setup s")
    fmt = "%-9s %-6s %-5s %8s %9s %9s %7s %7s %7s %7s %5s %7s"
    lines = [fmt % head]
    for r in results:
        handoff = "-" if r["mode"] == "async" else "%.4f" % r["transfer_s"]
        lines.append(fmt % (r["transport"], r["layout"], r["mode"],
                            "%.1f" % r["rollout_mb_per_step"], "%.0f" % r["samples_per_s"],
                            handoff, "%.4f" % r["receive_s"], "%.3f" % r["rollout_wait_s"],
                            "%.3f" % r["train_s"], "%.4f" % r["push_s"], r["max_staleness"],
                            "%.1f" % r["setup_s"]))
    lines.append("handoff: the slowest worker's send plus the trainer's receive, into batch "
                 "arrays (sync; medians over the steps after the first)")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["sync", "async", "both"], default="sync")
    ap.add_argument("--transport", choices=["tide", "baseline"], default="tide")
    ap.add_argument("--layout", choices=["ragged", "dense"], default="ragged")
    ap.add_argument("--compare", action="store_true",
                    help="tide and the baseline, ragged and dense, in one run, with ratios")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--samples", type=int, default=4096, help="rollout samples per step")
    ap.add_argument("--prompt-tokens", type=int, default=16384,
                    help="mean prompt length in tokens (int32): 4096 x 16384 is 256 MiB")
    ap.add_argument("--corpus-tokens", type=int, default=1 << 24)
    ap.add_argument("--backend", default="shm", help="tide's transport: shm or tcp")
    ap.add_argument("--pool-mb", type=int, default=160, help="tide pool's large buffers, MiB")
    ap.add_argument("--max-staleness", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--json", help="write the figures here")
    weight_push.add_arguments(ap)
    args = ap.parse_args(argv)
    if args.workers < 1 or args.steps < 1 or args.samples < args.workers:
        ap.error("--workers and --steps >= 1, --samples >= --workers")
    modes = ["sync", "async"] if args.mode == "both" else [args.mode]
    pairs = ([("tide", "ragged"), ("baseline", "ragged"), ("tide", "dense"),
              ("baseline", "dense")] if args.compare else [(args.transport, args.layout)])
    results = []
    for mode in modes:
        for transport, layout in pairs:
            a = argparse.Namespace(**vars(args))
            a.transport, a.layout, a.mode = transport, layout, mode
            t0 = time.perf_counter()
            results.append(run(a))
            print("%s %s %s: %d steps in %.1f s, reward %.3f -> %.3f" % (
                transport, layout, mode, args.steps, time.perf_counter() - t0,
                results[-1]["reward_first"], results[-1]["reward_last"]), flush=True)
    print(table(results))
    out = {"schema": "tide.rl_loop/1", "results": results}
    if args.compare:
        by = {(r["transport"], r["layout"], r["mode"]): r for r in results}
        out["ratios"] = {}
        for mode in modes:
            for layout in ("ragged", "dense"):
                t, b = by[("tide", layout, mode)], by[("baseline", layout, mode)]
                key = "transfer" if mode == "sync" else "receive"
                ratio = {key: b[key + "_s"] / t[key + "_s"], "push": b["push_s"] / t["push_s"],
                         "samples_per_s": t["samples_per_s"] / b["samples_per_s"]}
                out["ratios"]["%s/%s" % (mode, layout)] = ratio
                print("%s %s: tide's rollout %s %.2fx as fast as the baseline's, weight push "
                      "%.2fx, samples/s %.2fx" % (mode, layout, "handoff" if mode == "sync"
                                                  else "receive", ratio[key], ratio["push"],
                                                  ratio["samples_per_s"]))
        # The loop's policy is small: the push of a model of real size, apart.
        out["weight_push"] = weight_push.compare(args)
    print("weights: every push checked bit-exact on every worker (tide's verification and the "
          "loop's own digest)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, allow_nan=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
