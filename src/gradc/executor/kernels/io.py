"""Kernels of feed / fetch: read and write positions of a holder list; data passes its fed var through."""

from __future__ import annotations

import numpy as np

from ...errors import FeedError
from ..feeding import shape_fits
from ..scope import MISSING
from . import kernel


def _fed(k, names: list[str], complaint) -> list:
    """The fed values of ``names``; a FeedError saying complaint(the names not fed) where any is not."""
    values = [k.scope.find(name, MISSING) for name in names]
    if unfed := [name for name, value in zip(names, values) if value is MISSING]:
        raise FeedError(complaint(unfed))
    return values


@kernel("data")
def data(k):
    value = _fed(k, k.out_names("out")[:1],
                 lambda unfed: f"{k.where} stands for the program's input '{unfed[0]}', which is not fed")[0]
    if k.has("ShapeTensorList"):   # the shape as tensors, in place of the attribute (-1: any size)
        declared = [int(np.asarray(dim).reshape(())) for dim in k.xs("ShapeTensorList")]
    elif k.has("ShapeTensor"):
        declared = [int(dim) for dim in np.asarray(k.x("ShapeTensor")).reshape(-1)]
    else:
        return {"out": value}
    shape = np.shape(getattr(value, "array", value))
    if not shape_fits(shape, declared):
        raise FeedError(f"{k.where}: the input '{k.out_names('out')[0]}' is fed with shape {list(shape)}; its shape "
                        f"tensor gives {declared}")
    return {"out": value}


@kernel("feed")
def feed(k):
    return {"Out": k.x("X")[k.attr("col")]}


@kernel("fetch")
def fetch(k):
    holder_name = k.out_names("Out")[0]
    holder = k.scope.find(holder_name)
    if holder is None:
        holder = []
        k.scope.assign(holder_name, holder)
    col = k.attr("col")
    if not 0 <= col < len(k.block.ops):   # a column per fetch op at most
        raise ValueError(f"column {col} is outside the program's fetch columns")
    holder.extend([None] * (col + 1 - len(holder)))
    holder[col] = k.x("X")
    return {}
