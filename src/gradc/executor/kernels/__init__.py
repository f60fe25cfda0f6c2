"""Numpy kernels: op type -> function(ctx) -> {output slot: array or list of arrays}.

    @kernel("relu")
    def relu(k): return {"Out": np.maximum(k.x("X"), 0)}

Kernel modules mirror the op families in gradc.ops; importing this package registers them all.
"""

from __future__ import annotations

from collections.abc import Callable

KERNELS: dict[str, Callable] = {}


def kernel(*types: str, replace: bool = False):
    """Register ``fn`` as the kernel of each op type in ``types``."""

    def register(fn: Callable) -> Callable:
        for op_type in types:
            if op_type in KERNELS and not replace:
                raise ValueError(f"op '{op_type}' already has a kernel")
            KERNELS[op_type] = fn
        return fn

    return register


def load_all() -> None:
    from . import (  # noqa: F401
        activation,
        clip,
        control_flow,
        conv,
        creation,
        hsigmoid,
        index,
        interp,
        io,
        logic,
        loss,
        math,
        metric,
        nn,
        nn_activation,
        norm,
        optimizer,
        optimizer_adam,
        pad,
        pool,
        put_along,
        rearrange,
        reduce,
        select,
        sequence_loss,
        set_value,
        shape,
        sort,
        tensor,
        vision,
    )
