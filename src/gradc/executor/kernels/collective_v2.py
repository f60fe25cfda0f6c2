"""Kernels of gradc.ops.collective_v2, meeting the group's other ranks through gradc.executor.ranks (run alone: a
group of one, or one error when the op or its program says the group has more ranks)."""

from __future__ import annotations

import numpy as np

from ...ops.collective import REDUCE_TYPES
from . import kernel
from .collective import chunk, peers, summed

REDUCTIONS = {"max": np.maximum, "min": np.minimum, "prod": np.multiply}


def _reduced(values: list, how: str):
    if how == "sum":
        return summed(values)
    if how == "avg":
        return (summed(values) / len(values)).astype(values[0].dtype)
    return REDUCTIONS[how].reduce(np.stack(values), axis=0)


def _root(k, name: str, count: int) -> int:
    root = k.attr(name)
    if not 0 <= root < count:
        raise ValueError(f"{name} {root} is not a rank of the group of {count}")
    return root


def _at_root(k, x, how: str) -> np.ndarray:
    """The reduction at rank root_id; zeros at the others."""
    values, place = peers(k, x)
    if place == _root(k, "root_id", len(values)):
        return _reduced(values, how)
    return np.zeros_like(x)


@kernel("c_allgather")
def c_allgather(k):
    x = k.x("X")
    values = peers(k, x, k.attr("nranks"))[0]
    return {"Out": np.stack(values) if x.ndim == 0 else np.concatenate(values, axis=0)}


@kernel("c_reducescatter")
def c_reducescatter(k):
    values, place = peers(k, k.x("X"), k.attr("nranks"))
    return {"Out": chunk(summed(values), 0, place, len(values))}


def _allreduce(how: str):
    def run(k):
        return {"Out": _reduced(peers(k, k.x("X"))[0], how)}
    return run


def _reduce(how: str):
    def run(k):
        return {"Out": _at_root(k, k.x("X"), how)}
    return run


for _how in REDUCTIONS:
    kernel(f"c_allreduce_{_how}")(_allreduce(_how))
    kernel(f"c_reduce_{_how}")(_reduce(_how))
kernel("c_reduce_sum")(_reduce("sum"))


@kernel("reduce")
def reduce(k):
    return {"out": _at_root(k, k.x("x"), REDUCE_TYPES[k.attr("reduce_type")])}   # inference checked reduce_type


@kernel("c_broadcast")
def c_broadcast(k):
    values = peers(k, k.x("X"))[0]
    return {"Out": values[_root(k, "root", len(values))].copy()}


@kernel("c_scatter")
def c_scatter(k):
    values, place = peers(k, k.x("X"), k.attr("nranks"))
    return {"Out": chunk(values[_root(k, "root", len(values))], 0, place, len(values))}


@kernel("all_to_all")
def all_to_all(k):
    values, place = peers(k, k.x("x"))
    return {"out": np.concatenate([chunk(value, 0, place, len(values)) for value in values], axis=0)}
