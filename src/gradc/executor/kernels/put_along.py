"""put_along_axis and its grad: each element of Value goes to the Input position its Index names, and the
Reduce mode says how the values sent to one position combine (with Input's own value, if Include_self):

    assign  the last value sent          add/mul  sum/product       mean  average (Input counts as one)
    amin/amax  the extreme; its grad is shared equally by every contributor that ties for it
"""

from __future__ import annotations

import numpy as np

from ...shapes import normalize_axis
from . import kernel
from .broadcast import unbroadcast
from .index import checked
from .select import along_coords


class Placement:
    """Where each value goes, as flat positions into Input, and how many values each position receives."""

    def __init__(self, k):
        x, index = k.x("Input"), k.x("Index")
        axis = normalize_axis(k.attr("Axis"), x.ndim)
        index = checked(index, x.shape[axis], "Index")
        self.x = x
        self.values = np.broadcast_to(k.x("Value"), index.shape).reshape(-1).astype(x.dtype)
        self.targets = np.ravel_multi_index(np.broadcast_arrays(*along_coords(index, axis)), x.shape).reshape(-1)
        self.counts = np.bincount(self.targets, minlength=x.size)
        self.hit = self.counts > 0
        self.mode = "mul" if k.attr("Reduce") == "multiply" else k.attr("Reduce")
        self.include_self = bool(k.attr("Include_self"))

    def last_writer(self) -> np.ndarray:
        """For assign: whether each value is the last one sent to its position (the one that stays)."""
        last = np.zeros(self.targets.size, bool)
        _, from_end = np.unique(self.targets[::-1], return_index=True)
        last[self.targets.size - 1 - from_end] = True
        return last

    def combined(self) -> np.ndarray:
        """The flat Result."""
        out = self.x.reshape(-1).copy()
        if self.mode == "assign":
            keep = self.last_writer()
            out[self.targets[keep]] = self.values[keep]
            return out
        reduce = {"add": np.add, "mean": np.add, "mul": np.multiply, "amin": np.minimum, "amax": np.maximum}[self.mode]
        if not self.include_self:
            out[self.hit] = {"add": 0, "mean": 0, "mul": 1, "amin": _extreme(out.dtype, 1),
                             "amax": _extreme(out.dtype, -1)}[self.mode]
        reduce.at(out, self.targets, self.values)
        if self.mode == "mean":
            out[self.hit] = out[self.hit] / (self.counts[self.hit] + self.include_self)
        return out


def _extreme(dtype: np.dtype, sign: int):
    """The value any other beats in a min (sign 1) or max (sign -1)."""
    if dtype.kind == "f":
        return sign * np.inf
    return np.iinfo(dtype).max if sign > 0 else np.iinfo(dtype).min


@kernel("put_along_axis")
def put_along_axis(k):
    place = Placement(k)
    return {"Result": place.combined().reshape(place.x.shape)}


def _product_of_others(factors: np.ndarray, groups: np.ndarray, size: int) -> np.ndarray:
    """For each factor, the product of the other factors of its group, without dividing by zero."""
    zero = factors == 0
    nonzero_product = np.ones(size, factors.dtype)
    np.multiply.at(nonzero_product, groups, np.where(zero, 1, factors))
    zeros = np.bincount(groups, weights=zero, minlength=size)[groups]
    others = nonzero_product[groups] / np.where(zero, 1, factors)
    return np.where(zeros - zero > 0, 0, others)


def _grads(place: Placement, result: np.ndarray, dout: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(flat Input@GRAD, Value@GRAD) for dout, the flat Result@GRAD."""
    x, targets, hit, mode = place.x.reshape(-1), place.targets, place.hit, place.mode
    own = dout.copy()
    if not place.include_self or mode == "assign":
        own[hit] = 0
    if mode == "assign":
        return own, np.where(place.last_writer(), dout[targets], 0)
    if mode == "add":
        return own, dout[targets]
    if mode == "mean":
        share = dout / (place.counts + place.include_self).clip(min=1)
        return np.where(hit, share, own) if place.include_self else own, share[targets]
    if mode == "mul":
        selves = np.flatnonzero(hit) if place.include_self else np.empty(0, np.int64)
        factors = np.concatenate([place.values, x[selves]])
        others = _product_of_others(factors, np.concatenate([targets, selves]), x.size)
        own[selves] = dout[selves] * others[place.values.size:]
        return own, dout[targets] * others[:place.values.size]
    # amin/amax: the result's grad is shared by the values (and Input, if included) equal to it
    value_ties = place.values == result[targets]
    self_ties = hit & (x == result) & place.include_self
    share = dout / (np.bincount(targets, weights=value_ties, minlength=x.size) + self_ties).clip(min=1)
    own[hit] = np.where(self_ties[hit], share[hit], 0)
    return own, np.where(value_ties, share[targets], 0)


@kernel("put_along_axis_grad")
def put_along_axis_grad(k):
    place = Placement(k)
    dx, dvalue = _grads(place, k.x("Result").reshape(-1), k.x("Result@GRAD").reshape(-1))
    value = k.x("Value")
    return k.grads({"Input@GRAD": lambda: dx.reshape(place.x.shape).astype(place.x.dtype, copy=False),
                    "Value@GRAD": lambda: unbroadcast(dvalue.reshape(k.x("Index").shape), value.shape)
                    .astype(value.dtype, copy=False)})
