"""tide.Batch and tide.Ragged: conversion both ways, views not copies, and
one clear exception for every kind of bad input."""

import numpy as np
import pytest

import tide


def ragged_rows():
    return [np.arange(n, dtype=np.int32) for n in (3, 0, 5, 1)]


def test_dense_and_ragged_round_trip():
    reward = np.linspace(0, 1, 4, dtype=np.float32)
    b = tide.Batch.from_dict({"reward": reward, "tokens": ragged_rows()}, meta={"step": 7})
    assert b.rows == 4 and set(b.fields) == {"reward", "tokens"} and b.meta == {"step": 7}
    # A dense column is the caller's array, not a copy of it.
    assert np.shares_memory(b["reward"], reward)
    t = b["tokens"]
    assert isinstance(t, tide.Ragged) and len(t) == 4
    assert t.offsets.tolist() == [0, 3, 3, 8, 9]
    for i, row in enumerate(ragged_rows()):
        assert np.array_equal(t[i], row)
    assert not b["reward"].flags.writeable


def test_ragged_from_values_and_offsets_is_zero_copy():
    values = np.arange(10, dtype=np.int64)
    offsets = np.array([0, 4, 10], dtype=np.int64)
    b = tide.Batch.from_dict({"x": tide.Ragged(values, offsets)})
    assert np.shares_memory(b["x"].values, values)
    s = b.slice(1, 2)
    # A slice's offsets are rebased (the one copy on the way out), its values a view.
    assert s["x"].offsets.tolist() == [0, 6]
    assert np.array_equal(s["x"].values, values[4:])
    assert np.shares_memory(s["x"].values, values)


def test_object_column_and_inner_shape():
    b = tide.Batch.from_dict({"text": [b"ab", b"", b"cde"],
                              "emb": tide.Ragged(np.ones((5, 3), np.float16),
                                                 np.array([0, 2, 2, 5], np.int64))})
    assert b["text"][2] == b"cde" and b["text"].object
    assert b["emb"].values.shape == (5, 3)
    assert b["emb"][2].shape == (3, 3)


def test_bf16_from_torch_is_exact():
    torch = pytest.importorskip("torch")
    w = torch.randn(8, 4).to(torch.bfloat16)
    b = tide.from_torch({"w": w})
    assert b.dtype("w") == "bf16"
    back = tide.to_torch(b)["w"]
    assert back.dtype == torch.bfloat16 and torch.equal(back, w)


@pytest.mark.parametrize("bad, what", [
    (np.zeros((4, 4))[:, ::2], "not C-contiguous"),
    (np.zeros(4, dtype=np.complex64), "has no tide dtype"),
    (np.array(["a", "b"]), "has no tide dtype"),
    (np.float32(1.0), "0-d array"),
    (object(), "expected a numpy array"),
    ([np.zeros(2, np.int32), np.zeros(2, np.int64)], "another dtype"),
    ([np.zeros((2, 2), np.int32)], "not 1-D"),
])
def test_bad_columns_raise_invalid_argument(bad, what):
    with pytest.raises(tide.InvalidArgument, match=what) as e:
        tide.Batch.from_dict({"c": bad})
    assert isinstance(e.value, ValueError) and e.value.code == "invalid argument"


def test_bad_ragged_and_meta():
    with pytest.raises(tide.InvalidArgument, match="offsets must be a 1-D int64"):
        tide.Batch.from_dict({"r": tide.Ragged(np.zeros(3, np.int32), np.array([0, 3], np.int32))})
    with pytest.raises(tide.InvalidArgument):
        # Offsets past the values.
        tide.Batch.from_dict({"r": tide.Ragged(np.zeros(3, np.int32), np.array([0, 9], np.int64))})
    with pytest.raises(tide.InvalidArgument, match="not a JSON value"):
        tide.Batch.from_dict({"a": np.zeros(2)}, meta={"x": object()})
    with pytest.raises(tide.InvalidArgument):
        # Columns of different row counts.
        tide.Batch.from_dict({"a": np.zeros(2), "b": np.zeros(3)})
    with pytest.raises(tide.InvalidArgument, match="2-byte elements"):
        tide.Batch.from_dict({"a": np.zeros(2, np.float32)}, dtypes={"a": "bf16"})


def test_chunk_select_concat():
    b = tide.Batch.from_dict({"a": np.arange(10, dtype=np.int32), "t": [np.arange(i) for i in range(10)]})
    parts = b.chunk(3)
    assert [p.rows for p in parts] == [4, 3, 3]
    joined = tide.Batch.concat(parts)
    assert joined["a"].tolist() == list(range(10))
    assert joined.select(["t"]).fields == ["t"]
    with pytest.raises(KeyError):
        b["missing"]
