"""Kernels of gradc.ops.products_einsum: the equation read by its parser, the arithmetic by numpy.einsum."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...ir import EMPTY_VAR
from ...ops.products_einsum import Subscripts, parse_equation
from ...shapes import value_error
from . import kernel


def _subscripts(k, operands):
    return _parsed(k.attr("equation"), tuple(x.shape for x in operands))


@lru_cache(maxsize=256)
def _parsed(equation: str, shapes: tuple[tuple[int, ...], ...]) -> Subscripts:
    """An equation read once per operand shapes (a training loop runs the same ones every step); read only."""
    return parse_equation(equation, [list(shape) for shape in shapes], value_error)


def _interleaved(operands, labels) -> list:
    return [item for pair in zip(operands, labels) for item in pair]


@kernel("einsum")
def einsum(k):
    operands = k.xs("Operands")
    subscripts = _subscripts(k, operands)
    # optimize: contracted a pair at a time (BLAS), so a chain of three n x n costs n^3, not n^4
    out = np.einsum(*_interleaved(operands, subscripts.operands), subscripts.output, optimize=True)
    # an empty cache in float32 (or narrower): Paddle declares it float32 whatever the operands are (PIR's t_f32 [])
    cache = np.zeros(0, out.dtype if out.dtype.kind == "f" and out.dtype.itemsize < 4 else np.float32)
    return {"Out": out, "InnerCache": [cache for _ in operands], "XShape": list(operands)}


def _operand_grad(i, operands, subscripts, dout):
    """dOut contracted with the other operands onto operand i's distinct labels, broadcast over those only it
    sums over, and written onto its diagonal where a label repeats in it."""
    labels = subscripts.operands[i]
    others = [(dout, subscripts.output)] + [(x, sub) for j, (x, sub) in enumerate(zip(operands, subscripts.operands))
                                            if j != i]
    reached = {label for _, sub in others for label in sub}
    distinct = list(dict.fromkeys(labels))
    kept = [label for label in distinct if label in reached]
    grad = np.einsum(*_interleaved(*zip(*others)), kept, optimize=True)
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
