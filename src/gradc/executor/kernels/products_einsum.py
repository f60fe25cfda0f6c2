"""Kernels of gradc.ops.products_einsum: the equation read by its parser, the arithmetic by numpy.einsum."""

from __future__ import annotations

import numpy as np

from ...ir import EMPTY_VAR
from ...ops.products_einsum import parse_equation
from ...shapes import value_error
from . import kernel


def _subscripts(k, operands):
    return parse_equation(k.attr("equation"), [list(x.shape) for x in operands], value_error)


def _interleaved(operands, labels) -> list:
    return [item for pair in zip(operands, labels) for item in pair]


@kernel("einsum")
def einsum(k):
    operands = k.xs("Operands")
    subscripts = _subscripts(k, operands)
    out = np.einsum(*_interleaved(operands, subscripts.operands), subscripts.output)
    return {"Out": out, "InnerCache": [np.zeros(0, out.dtype) for _ in operands], "XShape": list(operands)}


def _operand_grad(i, operands, subscripts, dout):
    """dOut contracted with the other operands onto operand i's distinct labels, broadcast over those only it
    sums over, and written onto its diagonal where a label repeats in it."""
    labels = subscripts.operands[i]
    others = [(dout, subscripts.output)] + [(x, sub) for j, (x, sub) in enumerate(zip(operands, subscripts.operands))
                                            if j != i]
    reached = {label for _, sub in others for label in sub}
    distinct = list(dict.fromkeys(labels))
    kept = [label for label in distinct if label in reached]
    grad = np.einsum(*_interleaved(*zip(*others)), kept)
    size = dict(zip(labels, operands[i].shape))
    grad = grad.reshape([size[label] if label in reached else 1 for label in distinct])
    full = np.zeros(operands[i].shape, dout.dtype)
    np.einsum(full, labels, distinct)[...] = grad   # a view of full: its diagonal where labels repeat
    return full


@kernel("einsum_grad")
def einsum_grad(k):
    operands, dout = k.xs("x_shape"), k.x("Out@GRAD")
    subscripts = _subscripts(k, operands)
    return {"Operands@GRAD": [None if name == EMPTY_VAR else _operand_grad(i, operands, subscripts, dout)
                              for i, name in enumerate(k.out_names("Operands@GRAD"))]}
