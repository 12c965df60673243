import os
import threading

import pytest

# The package is imported from the build tree (PYTHONPATH=build/python, set
# by ctest); the source tree is where the scenarios live.
SOURCE_DIR = os.environ.get("TIDE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture
def source_dir():
    return SOURCE_DIR


@pytest.fixture
def node():
    import tide

    return tide.Node(tide.Store.memory(), backend="shm", pool=[(1 << 20, 8), (16 << 20, 2)])


def on_threads(fn, n):
    """fn(r) for r in 0..n-1, each on its own thread, all at once (ranks
    that wait for each other): returns the results by r."""
    out = [None] * n

    def run(r):
        out[r] = fn(r)

    ts = [threading.Thread(target=run, args=(r,)) for r in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out
