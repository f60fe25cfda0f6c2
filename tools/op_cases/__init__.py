"""Cases for tools/paddle_op_fixtures.py, one module per op family (interp, vision, pool, norm, pad, dropout,
broadcast_put). Needs paddlepaddle (legacy static mode). A case builds Paddle layers or functional calls on
data vars inside the fixture's program and returns the outputs the loss weights: the tool adds
loss = sum(out_i * w_i) with random fed weights w_i, so the gradients are vector-Jacobian products of the ops.

    Case("upsample_bilinear", lambda: [nn.Upsample(scale_factor=2, mode="bilinear")(data("x", 1, 2, 3, 4))])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import paddle

FEED: dict[str, np.ndarray] = {}   # the data vars the current case created, with their values
RNG = np.random.default_rng(0)


@dataclass
class Case:
    name: str
    build: Callable[[], list]            # -> the outputs the loss weights (inside the program guard)
    dtype: str = "float64"               # float32 where Paddle has no float64 kernel
    note: str = ""
    random: dict | None = None           # a random layer: {"scale": kept units' factor, "shared_axes": axes one
                                         # draw covers}; its values are checked for that structure, not compared


def data(name: str, *shape: int, kind: str = "normal", grad: bool = True, dtype: str | None = None, value=None):
    """A data var with a value for the feed: standard normal, ``positive`` in [0.5, 2), ``distinct``
    (a permutation: max pooling without ties), or ``value``."""
    dtype = dtype or paddle.get_default_dtype()
    if value is None:
        size = int(np.prod(shape))
        value = {"normal": lambda: RNG.standard_normal(shape),
                 "positive": lambda: RNG.uniform(0.5, 2.0, shape),
                 "distinct": lambda: RNG.permutation(size).reshape(shape) / size * 4 - 2}[kind]()
    FEED[name] = np.asarray(value).astype(dtype)
    var = paddle.static.data(name, list(FEED[name].shape), dtype)
    var.stop_gradient = not grad
    return var


def ints(name: str, values, dtype: str = "int32"):
    """A data var holding integers (sizes, indices): never differentiated."""
    return data(name, grad=False, dtype=dtype, value=np.asarray(values))


def begin_case(seed: int) -> None:
    global RNG
    FEED.clear()
    RNG = np.random.default_rng(seed)
    paddle.seed(seed)
