"""The shapes `gradc show --memory` sizes values by where declarations fall short: the dims a batch's feed gives,
carried through the ops by their shape inference (a sequence model's T is not its batch size), and the fused rnn op's
Reserve and DropoutState, which Paddle declares UINT8 with dims [] while the kernels store an LSTM's gates and states
in them, the largest value such a model keeps for its backward."""

from __future__ import annotations

import math

import numpy as np

from .ir import Block, OpDesc, VarType
from .ir.types import NUMPY_DTYPE_NAMES
from .ops.rnn import rnn_shape_of
from .rnn_shape import GATES
from .verify_shapes import op_inference

# an input holding sizes at run time, and the attribute it stands for: the values of a shape op of a fed value (the
# STN's affine_grid of paddle.shape(x)) are known from the feed, and the op's inference reads them as that attribute
SIZE_INPUTS = {("affine_grid", "OutputShape"): "output_shape"}


def fed_shapes(block: Block, feed: dict[str, tuple[int, ...]]) -> dict[str, list[int]]:
    """The shape of every var of ``block`` whose dims ``feed`` (var name -> shape) fixes, through each op's
    inference (and a shape op's values, where SIZE_INPUTS read them); an op its inference cannot follow (a dim read
    from another value at run time) leaves its outputs as declared."""
    shapes = {name: list(shape) for name, shape in feed.items()}
    values = {}   # the shape ops' outputs: the shapes they read
    for idx, op in enumerate(block.ops):
        if shapes.keys().isdisjoint(op.input_names()):
            continue
        if op.type in ("shape", "shape64") and op.input("Input")[0] in shapes:
            values[op.output("Out")[0]] = shapes[op.input("Input")[0]]
        try:
            inferred = op_inference(block, idx, _sizes_as_attributes(op, values), shapes)
        except Exception:  # noqa: BLE001 - inputs its rule cannot read: the declarations stand
            continue
        if inferred is None:
            continue
        for slot, result in inferred[1].items():
            for name, (shape, _) in zip(op.outputs.get(slot, ()), result if isinstance(result, list) else [result]):
                if shape is not None and all(dim >= 0 for dim in shape):
                    shapes[name] = list(shape)
    return shapes


def _sizes_as_attributes(op: OpDesc, values: dict[str, list[int]]) -> OpDesc:
    """``op`` with a sizes input whose values are known given as its attribute instead."""
    for (kind, slot), attr in SIZE_INPUTS.items():
        if op.type == kind and len(op.input(slot)) == 1 and op.input(slot)[0] in values:
            inputs = {name: args for name, args in op.inputs.items() if name != slot}
            return OpDesc(kind, inputs, op.outputs, {**op.attrs, attr: values[op.input(slot)[0]]}, op.attr_types)
    return op


def rnn_buffer_shapes(block: Block, shapes: dict[str, list[int]], batch_size: int) -> dict[str, list[int]]:
    """Each rnn op's Reserve as the bytes it holds ([L, D, T, B, W] of Input's dtype) and DropoutState as its uint8
    mask (Out's shape, written only when dropout applies); unknown dims of Input take ``batch_size``."""
    buffers = {}
    for op in block.ops:
        if op.type != "rnn" or not op.input("Input"):
            continue
        source = block.find_var(op.input("Input")[0])
        dims = shapes.get(source.name, source.shape) if source is not None else None
        if dims is None or len(dims) != 3 or source.dtype not in NUMPY_DTYPE_NAMES or op.attrs.get("mode") not in GATES:
            continue
        steps, batch = (batch_size if dim < 0 else dim for dim in dims[:2])
        shape = rnn_shape_of(op.attrs.get)
        itemsize = np.dtype(NUMPY_DTYPE_NAMES[source.dtype]).itemsize
        for name in op.output("Reserve"):
            buffers[name] = [math.prod(shape.reserve_shape(steps, batch)) * itemsize]
        if op.attrs.get("dropout_prob", 0.0) > 0 and not op.attrs.get("is_test", False):
            for name in op.output("DropoutState"):
                buffers[name] = [steps, batch, shape.directions * shape.hidden_size]
    return {name: dims for name, dims in buffers.items() if _is_bytes(block, name)}


def _is_bytes(block: Block, name: str) -> bool:
    var = block.find_var(name)
    return var is not None and var.dtype == VarType.UINT8
