"""Adjustments a row's notation cannot say: where PIR and the legacy op mean different things by the
same attribute."""

from __future__ import annotations


def reduce_all(legacy, op, ctx) -> None:
    """PIR reduces over every axis when the axis list is empty; the legacy op says so with reduce_all."""
    x = ctx.block.find_var(legacy.input("X")[0])
    rank = len(x.shape) if x is not None and x.shape is not None else None
    dims = legacy.attrs.get("dim", [])
    covers_all = bool(rank) and len({d % rank for d in dims}) == rank
    legacy.set_attr("dim", list(dims))
    legacy.set_attr("reduce_all", bool(not dims or covers_all or legacy.attrs.get("reduce_all", False)))


def cast_dtypes(legacy, op, ctx) -> None:
    """Legacy cast also names the input dtype."""
    x = ctx.block.find_var(legacy.input("X")[0])
    if x is not None and x.dtype is not None:
        legacy.set_attr("in_dtype", int(x.dtype))
