import os

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
