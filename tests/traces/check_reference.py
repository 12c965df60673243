#!/usr/bin/env python3
"""Reads a tide trace with h5py only, to prove the format is usable outside
tide. Exit 0: valid; 1: invalid; 77: h5py/numpy missing (skipped)."""
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)


def fail(msg):
    print(f"invalid trace: {msg}")
    sys.exit(1)


def main(path):
    with h5py.File(path, "r") as f:
        schema = f.attrs["schema"]
        schema = schema.decode() if isinstance(schema, bytes) else str(schema)
        if schema != "tide-trace":
            fail(f"schema {schema!r}")
        if int(f.attrs["schema_version"]) != 2:
            fail("schema_version")
        meta = f["meta"]
        steps = int(meta.attrs["steps"])
        names = meta["tensor_name"][:]
        numel = meta["tensor_numel"][:]
        if int(numel.sum()) != int(meta.attrs["total_params"]):
            fail("total_params")
        counts = f["routing/counts"][:]
        if counts.shape[0] != steps or counts.dtype.kind not in "ui":
            fail(f"routing shape {counts.shape} dtype {counts.dtype}")
        changed = f["delta/changed"][:]
        checked = f["delta/checked"][:]
        if changed.shape != (steps, len(names)):
            fail(f"delta shape {changed.shape}")
        if (changed > checked[None, :]).any():
            fail("changed > checked")
        exact = int(f["delta"].attrs["exact"])
        if exact and (checked != numel).any():
            fail("exact trace with checked != numel")
        if "index_offsets" in f["delta"]:
            off = f["delta/index_offsets"][:]
            if not exact or off.shape != (steps * len(names) + 1,) or off[0] != 0:
                fail("index_offsets shape")
            if (np.diff(off) != changed.reshape(-1)).any():
                fail("index_offsets disagree with changed")
            idx = f["delta/indices"][:] if off[-1] > 0 else np.zeros(0, np.uint32)
            tensor_of = np.repeat(np.tile(np.arange(len(names)), steps), np.diff(off).astype(np.int64))
            if idx.shape[0] != off[-1] or (idx >= numel[tensor_of]).any():
                fail("indices out of range")
        elif not exact:
            hw = float(f["delta"].attrs["halfwidth95_worst"])
            if not 0 < hw <= 1:
                fail("halfwidth95_worst")
        frac = changed.sum(axis=1) / checked.sum()
        resp = f["rollout/response_tokens"][:]
        end = f["rollout/end_s"][:]
        if resp.shape[0] != steps or not np.isfinite(end).all():
            fail("rollout")
        ev = f["events/t_start"].shape[0]
        print(f"{path}: {steps} steps, {len(names)} tensors, "
              f"{counts.shape[1]}x{counts.shape[2]} routing, "
              f"changed/step {100 * frac.mean():.3f} % (checked elements), {ev} events")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: check_reference.py TRACE.h5")
        sys.exit(2)
    main(sys.argv[1])
