"""Paddle's fixture programs declare their small batch in every shape. ``rebatch`` makes the batch dim
unknown (-1) again, as a program built for any batch declares it: the data vars' first dim, then every
output by shape inference in op order, each grad var like its forward var, and a reshape's explicit batch
dim (``shape`` attribute) as 0, "copy the input's"."""

from __future__ import annotations

import numpy as np

from gradc import registry
from gradc.ir import Program
from gradc.ops.infer import InferContext
from gradc.pairing import grad_base


def rebatch(program: Program, batch: int) -> Program:
    program = program.clone()
    block = program.global_block
    for var in block.vars.values():
        if var.need_check_feed and var.shape and var.shape[0] == batch:
            var.shape[0] = -1
    for idx, op in enumerate(block.ops):
        shape = op.attrs.get("shape")
        if op.type.startswith("reshape") and isinstance(shape, list) and shape and shape[0] == batch:
            op.attrs["shape"] = [0, *shape[1:]]
        opdef = registry.get(op.type)
        if opdef is None or opdef.infer is None or opdef.grad_op_of:
            continue
        for slot, result in opdef.infer(InferContext(op, block, idx)).items():
            for name, (shape, _) in zip(op.output(slot), result if isinstance(result, list) else [result]):
                var = block.find_var(name)
                if var is not None and not var.persistable and shape is not None:
                    var.shape = list(shape)
    for name, var in block.vars.items():
        forward = block.vars.get(grad_base(name))
        if "@GRAD" in name and forward is not None and forward.shape is not None:
            var.shape = list(forward.shape)
    program.mark_changed()
    return program


def tile_feed(feed: dict[str, np.ndarray], factor: int) -> dict[str, np.ndarray]:
    """The fixture's batch repeated ``factor`` times along the first dim."""
    return {name: np.concatenate([value] * factor) for name, value in feed.items()}
