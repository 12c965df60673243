"""tide.WeightSync: a trainer's tensors (numpy, torch, a torch module) reach
every engine bit-exact through p2p and broadcast, ranks as threads and as
processes; the failures a user meets: tensors that differ between ranks, bad
dtypes and layouts, non-contiguous tensors, an engine that dies."""

import multiprocessing as mp

import numpy as np
import pytest

import tide

from conftest import on_threads


def tensors(seed, zero=False):
    rng = np.random.default_rng(seed)
    t = {"embed": rng.standard_normal((50, 16)).astype(np.float32),
         "w1": rng.standard_normal((16, 32)).astype(np.float16),
         "b1": rng.standard_normal(32).astype(np.float32),
         "scale": np.array(1.5, dtype=np.float32)}
    if zero:
        for a in t.values():
            a[...] = 0
    return t


def on_ranks(store, arrays, engines, **kw):
    """A WeightSync per rank, created at once: (syncs, errors) by rank."""
    def make(r):
        try:
            return tide.WeightSync(store, arrays[r], rank=r, engines=engines, timeout=20, **kw), None
        except tide.Error as e:
            return None, e

    made = on_threads(make, engines + 1)
    return [m[0] for m in made], [m[1] for m in made]


def update_all(syncs):
    return on_threads(lambda r: syncs[r].update(), len(syncs))


@pytest.mark.parametrize("strategy", ["p2p", "broadcast"])
@pytest.mark.parametrize("backend", ["shm", "tcp"])
def test_engines_get_the_trainers_tensors_every_step(strategy, backend):
    engines = 2
    arrays = [tensors(1)] + [tensors(0, zero=True) for _ in range(engines)]
    syncs, errors = on_ranks(tide.Store.memory(), arrays, engines, strategy=strategy,
                             backend=backend, bucket=1024)
    assert errors == [None] * (engines + 1)
    for step in (1, 2):
        for name, a in arrays[0].items():  # the trainer's optimizer step, in place
            a[...] = tensors(10 + step)[name]
        figures = update_all(syncs)
        assert [f["step"] for f in figures] == [step] * (engines + 1)
        for r in range(1, engines + 1):
            assert figures[r]["bytes_verified"] == sum(a.nbytes for a in arrays[0].values())
            for name, a in arrays[0].items():
                assert np.array_equal(arrays[r][name], a), (r, name)
    assert figures[0]["bytes_sent"] > 0
    for s in syncs:
        s.close()


def test_torch_module_and_bf16_tensors():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    make = lambda: torch.nn.Sequential(torch.nn.Embedding(40, 8), torch.nn.Linear(8, 40))  # noqa
    trainer, engine = make(), make()
    with torch.no_grad():
        for p in engine.parameters():
            p.zero_()
    extra = [torch.randn(5, 3).to(torch.bfloat16), torch.zeros(5, 3, dtype=torch.bfloat16)]
    store = tide.Store.memory()

    def make_sync(r):
        ts = dict((trainer if r == 0 else engine).state_dict(keep_vars=True))
        ts["extra"] = extra[r]
        return tide.weight_sync(store, ts, rank=r, engines=1, timeout=20)

    syncs = on_threads(make_sync, 2)
    with torch.no_grad():
        for p in trainer.parameters():
            p.add_(1.0)
    update_all(syncs)
    for a, b in zip(trainer.state_dict().values(), engine.state_dict().values()):
        assert torch.equal(a, b)
    assert torch.equal(extra[0], extra[1])


def test_ranks_with_different_tensors_are_refused():
    arrays = [tensors(1), tensors(1)]
    arrays[1]["w1"] = np.zeros((16, 31), np.float16)
    _, errors = on_ranks(tide.Store.memory(), arrays, 1)
    for e in errors:  # both sides learn it at once, neither waits for a timeout
        assert isinstance(e, tide.InvalidArgument)
        assert "not the trainer's" in str(e) and "w1:fp16,16,31" in str(e), str(e)


def test_bad_tensors_and_options():
    store = tide.Store.memory()
    with pytest.raises(tide.InvalidArgument, match="weight sync moves bf16, fp16 and fp32"):
        tide.WeightSync(store, {"n": np.zeros(4, np.int64)}, rank=0, engines=1)
    with pytest.raises(tide.InvalidArgument, match="not C-contiguous"):
        tide.WeightSync(store, {"t": np.zeros((4, 4), np.float32).T}, rank=0, engines=1)
    with pytest.raises(tide.InvalidArgument, match="is not in a sync"):
        tide.WeightSync(store, tensors(1), rank=3, engines=1)
    with pytest.raises(tide.InvalidArgument, match="no tensors"):
        tide.WeightSync(store, {}, rank=0, engines=1)
    with pytest.raises(tide.InvalidArgument, match="plans from a model's architecture"):
        tide.WeightSync(store, tensors(1), rank=0, engines=1, strategy="miles-broadcast")
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(tide.InvalidArgument, match="read-only on an engine"):
        tide.WeightSync(store, {"x": ro}, rank=1, engines=1)
    torch = pytest.importorskip("torch")
    with pytest.raises(tide.InvalidArgument, match="not contiguous"):
        tide.weight_sync(store, {"t": torch.zeros(4, 4).t()}, rank=0, engines=1)


def _engine(port, die):
    import tide as t

    store = t.Store.connect("127.0.0.1", port, token="w")
    arrays = tensors(0, zero=True)
    s = t.WeightSync(store, arrays, rank=1, engines=1, backend="tcp", timeout=5,
                     connect_timeout=60)
    if die:
        return  # gone before the update, as a crashed engine
    s.update()
    ok = all(np.array_equal(arrays[k], v) for k, v in tensors(1).items())
    store.set("engine-ok", b"1" if ok else b"0")


@pytest.mark.parametrize("die", [False, True])
def test_processes_and_an_engine_that_dies(die):
    store = tide.Store.host("127.0.0.1", 0, token="w")
    p = mp.get_context("spawn").Process(target=_engine, args=(store.port, die))
    p.start()
    # A process may start slowly on a busy host (connect_timeout); a step
    # with a dead engine fails after `timeout`.
    s = tide.WeightSync(store, tensors(1), rank=0, engines=1, backend="tcp", timeout=5,
                        connect_timeout=60)
    if die:
        p.join(30)
        with pytest.raises(tide.Error):
            s.update()
        with pytest.raises(tide.Error, match="an earlier update failed"):
            s.update()
    else:
        assert s.update()["step"] == 1
        assert store.get("engine-ok", timeout=20) == b"1"
        p.join(30)
    assert p.exitcode == 0
