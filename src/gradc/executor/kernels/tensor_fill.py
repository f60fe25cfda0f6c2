"""Kernels of gradc.ops.tensor_fill: refills of x, and uniform draws shaped like a batch (Paddle's CPU draws, from
its mt19937_64 engine: gradc.executor.paddle_random)."""

from __future__ import annotations

import math

import numpy as np

from .. import paddle_random, randomness
from . import kernel
from .tensor import numpy_dtype

kernel("fill_any")(lambda k: {"Out": np.full_like(k.x("X"), k.attr("value"))})
kernel("fill_any_grad")(lambda k: {"X@GRAD": np.zeros_like(k.x("Out@GRAD"))})
kernel("gaussian_inplace_grad")(lambda k: {"x@GRAD": np.zeros_like(k.x("out@GRAD"))})
kernel("uniform_random_inplace_grad")(lambda k: {"X@GRAD": np.zeros_like(k.x("Out@GRAD"))})


def diagonal_positions(shape: tuple[int, ...], offset: int, wrap: bool) -> np.ndarray:
    """The flat positions Paddle's fill_diagonal writes: every (sum of the row-major strides)-th one, shifted by
    offset where that stays in its row of shape[1]; without wrap, only those before shape[1]^2 (for rank > 2
    that is the first alone: paddle.Tensor.fill_diagonal_ passes wrap for those)."""
    size = math.prod(shape)
    step = sum(math.prod(shape[i + 1:]) for i in range(len(shape)))
    starts = np.arange(0, size if wrap else min(size, shape[1] * shape[1]), step)
    column = starts % shape[1] + offset
    return starts[(column >= 0) & (column < shape[1])] + offset


@kernel("fill_diagonal")
def fill_diagonal(k):
    out = np.array(k.x("X"), copy=True)
    out.reshape(-1)[diagonal_positions(out.shape, k.attr("offset"), k.attr("wrap"))] = k.attr("value")
    return {"Out": out}


@kernel("fill_diagonal_grad")
def fill_diagonal_grad(k):
    grad = np.array(k.x("Out@GRAD"), copy=True)
    grad.reshape(-1)[diagonal_positions(grad.shape, k.attr("offset"), k.attr("wrap"))] = 0
    return {"X@GRAD": grad}


@kernel("gaussian_inplace")
def gaussian_inplace(k):
    x, seed = k.x("x"), k.attr("seed")
    draws = paddle_random.normal(randomness.engine(seed or None), x.size, k.attr("mean"), k.attr("std"),
                                 paddle_random.distribution_dtype(x.dtype))
    return {"out": draws.reshape(x.shape).astype(x.dtype)}


def _uniform(k, shape, dtype) -> np.ndarray:
    """Uniform draws in [min, max) from the op's seed (0: the global engine), in Paddle's order."""
    engine = randomness.engine(k.attr("seed") or None)
    draws = paddle_random.uniform(engine, math.prod(shape), k.attr("min"), k.attr("max"),
                                  paddle_random.distribution_dtype(dtype))
    return draws.reshape(shape).astype(dtype)


# Paddle's CPU kernel ignores diag_num, diag_step and diag_val here
kernel("uniform_random_inplace")(lambda k: {"Out": _uniform(k, k.x("X").shape, k.x("X").dtype)})


@kernel("uniform_random_batch_size_like")
def uniform_random_batch_size_like(k):
    shape = list(k.attr("shape"))
    shape[k.attr("output_dim_idx")] = k.x("Input").shape[k.attr("input_dim_idx")]
    out = _uniform(k, tuple(shape), numpy_dtype(k.attr("dtype")))
    count, step = k.attr("diag_num"), k.attr("diag_step")
    if count > 0:   # diag_val at flat positions i * (diag_step + 1), as uniform_random
        if (count - 1) * (step + 1) >= out.size:
            raise ValueError(f"diag_num {count} with diag_step {step} does not fit {out.size} elements")
        out.reshape(-1)[np.arange(count) * (step + 1)] = k.attr("diag_val")
    return {"Out": out}
