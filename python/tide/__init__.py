"""tide from Python: the rollout data plane, the rendezvous store, and the
weight-sync planner and simulator of the tide testbed.

    import tide
    store = tide.Store.memory()                 # or Store.host() / Store.connect()
    node = tide.Node(store, backend="shm")      # one rank of the data plane
    sync = tide.weight_sync(store, model, rank=0, engines=2)   # trainer -> 2 engines
    batch = tide.Batch.from_dict({"reward": rewards, "tokens": tide.Ragged(vals, offs)})

Arrays go into a batch and come out of one without a copy (docs/python.md
says where a copy happens). Every failure is a tide.Error carrying tide's
status text.
"""

from ._tide import (  # noqa: F401
    Batch,
    BusConfig,
    DataLoss,
    Error,
    InvalidArgument,
    Node,
    Ragged,
    RolloutConsumer,
    RolloutProducer,
    Store,
    Timeout,
    Unavailable,
    WeightSync,
    backends,
    compare,
    plan,
    scenario,
    simulate,
    strategies,
    why_cannot_run,
)

__all__ = [
    "Batch", "BusConfig", "DataLoss", "Error", "InvalidArgument", "Node", "Ragged",
    "RolloutConsumer", "RolloutProducer", "Store", "Timeout", "Unavailable", "backends",
    "compare", "plan", "scenario", "simulate", "strategies", "why_cannot_run",
    "WeightSync", "from_torch", "to_torch", "weight_sync",
]


def _torch_column(t):
    """A torch CPU tensor as (numpy view, tide dtype name or None), no copy."""
    import torch

    if t.device.type != "cpu":
        raise InvalidArgument("invalid argument: tensors must be on the CPU (got %s)" % t.device)
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy(), "bf16"
    return t.numpy(), None


def from_torch(tensors, meta=None):
    """A Batch over a dict of torch CPU tensors (each [rows, ...]), without a
    copy: bf16 travels as its 16-bit pattern, named 'bf16'. A non-contiguous
    tensor is refused (call .contiguous(), one copy)."""
    columns, dtypes = {}, {}
    for name, t in tensors.items():
        columns[name], dt = _torch_column(t)
        if dt is not None:
            dtypes[name] = dt
    return Batch.from_dict(columns, meta=meta, dtypes=dtypes)


def to_torch(batch):
    """The dense columns of a batch as torch tensors over its bytes (no copy;
    read-only memory: clone() before writing). Ragged columns are returned as
    (values, offsets) tensor pairs."""
    import warnings

    import torch

    out = {}
    with warnings.catch_warnings():
        # torch warns that the arrays are read-only; the tensors share them.
        warnings.simplefilter("ignore", UserWarning)
        for name in batch.fields:
            col = batch[name]
            if isinstance(col, Ragged):
                v = torch.from_numpy(col.values)
                if col.dtype == "bf16":
                    v = v.view(torch.bfloat16)
                out[name] = (v, torch.from_numpy(col.offsets))
            else:
                t = torch.from_numpy(col)
                if batch.dtype(name) == "bf16":
                    t = t.view(torch.bfloat16)
                out[name] = t
    return out


def weight_sync(store, tensors, *, rank, engines, **options):
    """A WeightSync over torch CPU tensors, a torch module's parameters and
    buffers (module.state_dict(keep_vars=True)), or numpy arrays, without a
    copy: the sync reads and writes the tensors' own memory. bf16 tensors
    travel as their 16-bit pattern. Options as WeightSync's."""
    if hasattr(tensors, "state_dict"):
        tensors = tensors.state_dict(keep_vars=True)
    arrays, bf16 = {}, []
    for name, t in tensors.items():
        if hasattr(t, "detach"):  # a torch tensor (or parameter)
            if not t.is_contiguous():
                raise InvalidArgument(
                    "invalid argument: weight '%s' is not contiguous (call .contiguous())" % name)
            arrays[name], dt = _torch_column(t)
            if dt == "bf16":
                bf16.append(name)
        else:
            arrays[name] = t
    return WeightSync(store, arrays, rank=rank, engines=engines, bf16=bf16, **options)
