"""Kernels of gradc.ops.random_dist: draws from parametric distributions, as Paddle's CPU kernels draw them from its
engine (gradc.executor.paddle_random_dists), in the float the kernel computes in."""

from __future__ import annotations

import math

import numpy as np

from ...limits import check_shape
from .. import paddle_random, paddle_random_dists, randomness
from ..paddle_truncated_normal import truncated_normal
from . import kernel
from .tensor import numpy_dtype


@kernel("truncated_gaussian_random")
def truncated_gaussian_random(k):
    """Paddle's draws, from the op's seed or the global engine (gradc.executor.paddle_truncated_normal)."""
    dtype = numpy_dtype(k.attr("dtype"))
    shape = check_shape(k.attr("shape"), dtype, "truncated_gaussian_random")
    engine = randomness.engine(k.attr("seed") or None)   # Paddle's engine takes the int as a uint64: -1 is a seed too
    drawn = truncated_normal(engine, math.prod(shape), k.attr("mean"), k.attr("std"), k.attr("a"), k.attr("b"),
                             paddle_random.distribution_dtype(dtype))
    return {"Out": drawn.reshape(shape).astype(dtype)}


@kernel("binomial")
def binomial(k):
    wide = paddle_random.distribution_dtype(k.x("count").dtype)
    count, prob = k.x("count").astype(wide), k.x("prob").astype(wide)
    if count.shape != prob.shape:
        raise ValueError(f"binomial needs count and prob of one shape, got {count.shape} and {prob.shape}")
    if not ((prob >= 0) & (prob <= 1)).all():
        raise ValueError("binomial probabilities in prob must lie in [0, 1]")
    if not ((count >= 0) & (count == np.floor(count)) & (count < 2.0 ** 63)).all():   # NaN fails each
        raise ValueError("binomial counts in count must be whole numbers in [0, 2**63)")
    drawn = paddle_random_dists.binomial(randomness.engine(), count.ravel(), prob.ravel(), wide)
    return {"out": drawn.reshape(count.shape)}


def _gamma(shapes):
    """Gamma(shape, 1) draws in the kernel's float; like Paddle's, never below its smallest normal number."""
    if not (shapes > 0).all():
        raise ValueError("gamma shape parameters must be > 0")
    wide = paddle_random.distribution_dtype(shapes.dtype)
    return paddle_random_dists.gamma(randomness.engine(), shapes.astype(wide).ravel(), wide).reshape(shapes.shape)


kernel("standard_gamma")(lambda k: {"out": _gamma(k.x("x")).astype(k.x("x").dtype)})


@kernel("dirichlet")
def dirichlet(k):
    """Independent Gamma(alpha_i, 1) draws along the last axis, divided by their sum."""
    alpha = k.x("Alpha")
    if alpha.ndim < 1:
        raise ValueError("dirichlet needs Alpha with a last axis of categories")
    drawn = _gamma(alpha)
    return {"Out": (drawn / drawn.sum(axis=-1, keepdims=True, dtype=drawn.dtype)).astype(alpha.dtype)}


@kernel("exponential")
def exponential(k):
    rate, x = k.attr("lambda"), k.x("X")
    if not rate > 0:
        raise ValueError(f"exponential needs lambda > 0, got {rate}")
    wide = paddle_random.distribution_dtype(x.dtype)
    drawn = paddle_random_dists.exponential(randomness.engine(), x.size, rate, wide)
    return {"Out": drawn.reshape(x.shape).astype(x.dtype)}
