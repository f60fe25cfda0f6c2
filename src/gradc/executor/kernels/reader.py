"""Kernels of the reader ops (gradc.ops.reader): the readers are names only; read passes the fed batch through."""

from __future__ import annotations

from . import kernel
from .io import _fed


@kernel("create_py_reader", "create_double_buffer_reader")
def create_reader(k):
    # Paddle's queue lives in its own process: the reader gradc makes only stands for the feed
    return {"Out": [f"reader of the feed ({k.op.type})"] * len(k.out_names("Out"))}


@kernel("read")
def read(k):
    names = k.out_names("Out")

    def complaint(unfed: list[str]) -> str:
        return (f"{k.where} takes a batch from a DataLoader's queue in Paddle's process; gradc takes it from the feed, "
                f"which lacks {', '.join(unfed)}: feed {', '.join(names)}")

    return {"Out": _fed(k, names, complaint)}
