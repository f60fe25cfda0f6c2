"""Kernels of the reader ops (gradc.ops.reader): the readers are names only; read passes the fed batch through."""

from __future__ import annotations

from ...errors import FeedError
from ..scope import MISSING
from . import kernel


@kernel("create_py_reader", "create_double_buffer_reader")
def create_reader(k):
    # Paddle's queue lives in its own process: the reader gradc makes only stands for the feed
    return {"Out": [f"reader of the feed ({k.op.type})"] * len(k.out_names("Out"))}


@kernel("read")
def read(k):
    names = k.out_names("Out")
    batch = [k.scope.find(name, MISSING) for name in names]
    if unfed := [name for name, value in zip(names, batch) if value is MISSING]:
        raise FeedError(f"{k.where} takes a batch from a DataLoader's queue in Paddle's process; gradc takes it from "
                        f"the feed, which lacks {', '.join(unfed)}: feed {', '.join(names)}")
    return {"Out": batch}
