"""Kernels of gradc.ops.legacy_shape: most v1 ops run their v2 op's kernel, seen through a context that gives the
v2 slots and attributes their v1 values; reshape and transpose, whose v2 kernels also write XShape, reshape here."""

from __future__ import annotations

import numpy as np

from ...ops import legacy_shape as dims
from ...ops.shape import reshape_dims
from ...shapes import value_error as fail
from . import KERNELS, index, kernel, shape, tensor  # noqa: F401  (the v2 kernels, registered first)
from .index import ints


class Translated:
    """An op's kernel context as a v2 kernel expects it: ``slots`` maps a v2 input slot to the v1 one (None: the
    v1 op lacks it), ``attrs`` gives v2 attributes; the rest reads through."""

    def __init__(self, k, slots: dict[str, str | None], attrs: dict):
        self._k, self._slots, self._attrs = k, slots, attrs

    def _slot(self, slot: str) -> str | None:
        return self._slots.get(slot, slot)

    def has(self, slot: str) -> bool:
        return self._slot(slot) is not None and self._k.has(self._slot(slot))

    def x(self, slot: str, i: int = 0):
        return self._k.x(self._slot(slot), i)

    def xs(self, slot: str) -> list:
        return [] if self._slot(slot) is None else self._k.xs(self._slot(slot))

    def optional(self, slot: str):
        return None if self._slot(slot) is None else self._k.optional(self._slot(slot))

    def attr(self, name: str):
        return self._attrs[name] if name in self._attrs else self._k.attr(name)

    def __getattr__(self, name: str):
        return getattr(self._k, name)


def _v2(op_type: str, k, slots: dict | None = None, attrs: dict | None = None) -> dict:
    return KERNELS[op_type](Translated(k, slots or {}, attrs or {}))


NO_TILE_TENSORS = {"RepeatTimes": None, "repeat_times_tensor": None}


@kernel("expand")
def expand(k):
    times = ints(k, ["ExpandTimes", "expand_times_tensor"], "expand_times")
    if len(times) < k.x("X").ndim:
        raise ValueError(f"expand times {times} must give a count for each of the {k.x('X').ndim} dims of X")
    return _v2("tile", k, NO_TILE_TENSORS, {"repeat_times": times})


@kernel("expand_grad", shape_only=("X",))
def expand_grad(k):
    return _v2("tile_grad", k)


@kernel("flatten2")
def flatten2(k):
    x = k.x("X")
    out = x.reshape(dims.flatten2_dims(fail, list(x.shape), k.attr("axis")))
    return {"Out": out.copy(), "XShape": np.zeros((0,) + x.shape, x.dtype)}


@kernel("flatten2_grad", shape_only=("X",))
def flatten2_grad(k):
    return {"X@GRAD": k.x("Out@GRAD").reshape(k.x("XShape").shape[1:])}


@kernel("top_k")
def top_k(k):
    """top_k_v2 along the last axis, largest first, sorted (Paddle's v1 kernel is the same, ties included)."""
    count, x = int(np.ravel(k.x("K"))[0]) if k.has("K") else k.attr("k"), k.x("X")
    if x.ndim and not 1 <= count <= x.shape[-1]:
        raise ValueError(f"top_k k {count} must be in [1, {x.shape[-1]}] (the last dim of X {list(x.shape)})")
    return _v2("top_k_v2", k, attrs={"axis": -1, "largest": True, "sorted": True})


@kernel("top_k_grad", shape_only=("X",))
def top_k_grad(k):
    return _v2("top_k_v2_grad", k, attrs={"axis": -1})


@kernel("reshape")
def reshape(k):
    x = k.x("X")
    return {"Out": x.reshape(reshape_dims(fail, list(x.shape), ints(k, ["ShapeTensor", "Shape"], "shape"))).copy()}


@kernel("reshape_grad", shape_only=("X", "Out"))
def reshape_grad(k):
    return {"X@GRAD": k.x("Out@GRAD").reshape(k.x("X").shape)}


@kernel("transpose")
def transpose(k):
    return {"Out": k.x("X").transpose(k.attr("axis")).copy()}


@kernel("transpose_grad", shape_only=("X", "Out"))
def transpose_grad(k):
    return {"X@GRAD": k.x("Out@GRAD").transpose(np.argsort([a % k.x("X").ndim for a in k.attr("axis")]))}


def _crop_attrs(k) -> dict:
    """crop_tensor's shape (Y's when given) and offsets (the Offsets tensor's when given)."""
    return {"shape": list(k.x("Y").shape) if k.has("Y") else list(k.attr("shape")),
            "offsets": ints(k, ["Offsets"], "offsets")}


CROP_TENSORS = {"Shape": None, "ShapeTensor": None, "Offsets": None, "OffsetsTensor": None}


@kernel("crop")
def crop(k):
    x = k.x("X")
    attrs = _crop_attrs(k)
    dims.crop_window(fail, list(x.shape), attrs["shape"], attrs["offsets"])
    return _v2("crop_tensor", k, CROP_TENSORS, attrs)


@kernel("crop_grad", shape_only=("Y",))
def crop_grad(k):
    return _v2("crop_tensor_grad", k, CROP_TENSORS, _crop_attrs(k))


@kernel("fill_constant_batch_size_like", shape_only=("Input",))
def fill_constant_batch_size_like(k):
    out = dims.batch_size_like_dims(fail, list(k.attr("shape")), list(k.x("Input").shape), k.attr("input_dim_idx"),
                                    k.attr("output_dim_idx"))
    return _v2("fill_constant", k, {"ShapeTensor": None, "ShapeTensorList": None, "ValueTensor": None},
               {"shape": out})
