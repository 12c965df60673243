"""tide.Node and the rollout bus: put/get between ranks (threads of this
process, and processes over a TCP store), in place from pool memory,
verification, and the failures a user meets: a closed node, buffers still
viewed, a peer that dies."""

import multiprocessing as mp
import threading

import numpy as np
import pytest

import tide

from conftest import on_threads


def rollout(rows, seed):
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 300, rows)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    return {"response": tide.Ragged(rng.integers(0, 50000, offsets[-1]).astype(np.int32), offsets),
            "reward": rng.standard_normal(rows).astype(np.float32)}


def pair(backend, pool=((1 << 20, 8), (16 << 20, 2)), **kw):
    store = tide.Store.memory()
    return on_threads(lambda r: tide.Node(store, backend=backend, rank=r, world_size=2,
                                          pool=list(pool), **kw), 2)


@pytest.mark.parametrize("backend", ["shm", "tcp"])
def test_put_get_between_ranks(backend):
    a, b = pair(backend, checksums="on")
    cols = rollout(64, 1)
    a.put("step0", tide.Batch.from_dict(cols, meta={"v": 1}))
    got = b.get("step0", rows=[(8, 24)])
    assert got.rows == 16 and got.meta == {"v": 1}
    want = tide.Batch.from_dict(cols).slice(8, 24)
    assert np.array_equal(got["reward"], want["reward"])
    for i in range(16):
        assert np.array_equal(got["response"][i], want["response"][i])
    whole = b.get("step0")
    assert np.array_equal(whole["response"].values, cols["response"].values)
    del got, whole
    b.done("step0")
    assert a.reap() == 1


def test_put_from_pool_memory_is_zero_copy(node):
    arr = node.empty([1000], np.float32)
    arr[:] = np.arange(1000)
    node.put("z", tide.Batch.from_dict({"x": arr}))
    assert node.stats()["put_bytes_zero_copy"] == 4000
    assert node.stats()["put_bytes_packed"] == 0
    assert np.array_equal(node.get("z")["x"], np.arange(1000, dtype=np.float32))


def test_get_of_missing_batch_times_out(node):
    with pytest.raises(tide.Timeout) as e:
        node.get("never", timeout=0.2)
    assert isinstance(e.value, TimeoutError)


def test_close_refuses_while_views_are_out_then_closes():
    n = tide.Node(tide.Store.memory(), backend="shm", pool=[(1 << 20, 4)])
    view = n.empty([16], np.uint8)
    with pytest.raises(tide.Error, match="still in use"):
        n.close()
    del view
    n.close()
    with pytest.raises(tide.Error, match="was closed"):
        n.get("x")


def test_bad_node_arguments():
    with pytest.raises(tide.InvalidArgument, match="not in a world"):
        tide.Node(tide.Store.memory(), rank=2, world_size=2)
    with pytest.raises(tide.Error):
        tide.Node(tide.Store.memory(), backend="carrier-pigeon")
    with pytest.raises(tide.InvalidArgument, match="mode must be"):
        tide.BusConfig(mode="sometimes")


def test_bus_sync_and_async():
    a, b = pair("shm")
    sync = tide.BusConfig(mode="sync", name="s")
    prod, cons = tide.RolloutProducer(a, sync, 0), tide.RolloutConsumer(b, sync, 0)
    for step in range(3):
        batch = tide.Batch.from_dict(rollout(32, step))
        t = threading.Thread(target=lambda: (prod.put_step(step, batch), prod.end_step(step)))
        t.start()
        got = cons.get_step(step)
        assert len(got) == 1 and got[0].rows == 32
        del got
        cons.end_step(step)
        t.join()
    asy = tide.BusConfig(mode="async", name="a", queue_capacity=2, max_staleness=1, total_batches=4)
    prod, cons = tide.RolloutProducer(a, asy, 0), tide.RolloutConsumer(b, asy, 0)

    def produce():
        for v in range(4):
            prod.put(tide.Batch.from_dict(rollout(8, v)), v)
            prod.reap()

    t = threading.Thread(target=produce)
    t.start()
    seen = []
    while True:
        got = cons.get(3)  # the trainer is at version 3: versions 0 and 1 are too stale
        if got is None:
            break
        batch, version, staleness = got
        seen.append((version, staleness))
        del batch
    t.join()
    assert seen == [(2, 1), (3, 0)] and cons.stats["dropped"] == 2


def _publisher(port, die):
    import tide as t

    store = t.Store.connect("127.0.0.1", port, token="tk")
    n = t.Node(store, backend="tcp", rank=1, world_size=2, timeout=10)
    if not die:
        n.put("b", t.Batch.from_dict({"x": np.arange(100, dtype=np.int64)}))
        store.barrier("read", 2)
    # die: the process leaves without publishing (as a crashed rollout worker).


@pytest.mark.parametrize("die", [False, True])
def test_processes_over_a_tcp_store_and_a_peer_that_dies(die):
    store = tide.Store.host("127.0.0.1", 0, token="tk")
    p = mp.get_context("spawn").Process(target=_publisher, args=(store.port, die))
    p.start()
    n = tide.Node(store, backend="tcp", rank=0, world_size=2, timeout=10)
    if die:
        p.join(30)
        with pytest.raises((tide.Timeout, tide.Unavailable)):
            n.get("b", timeout=1)
    else:
        assert n.get("b")["x"].tolist() == list(range(100))
        store.barrier("read", 2)
        p.join(30)
    assert p.exitcode == 0


def test_views_alive_at_interpreter_exit_do_not_outlive_their_pool():
    # Globals are cleared in no set order at exit: a batch and an array still
    # viewing the pool must give their buffers back before the Node goes.
    import os
    import subprocess
    import sys

    script = ("import numpy as np, tide\n"
              "n = tide.Node(tide.Store.memory(), backend='shm')\n"
              "n.put('a', tide.Batch.from_dict({'x': np.arange(4)}))\n"
              "g = n.get('a')\nx = g['x']\ne = n.empty([3], np.int8)\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       env=dict(os.environ), timeout=60)
    assert r.returncode == 0, r.stderr
    assert "tide error" not in r.stderr, r.stderr
