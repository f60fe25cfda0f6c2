"""Kernels of paddle.sparse's elementwise ops (gradc.ops.sparse_unary): the dense op's kernel on the values; cast
and isnan as numpy does them."""

from __future__ import annotations

import numpy as np

from ... import registry
from ...ops.sparse_unary import ON_VALUES
from ..sparse_value import SparseCoo, SparseCsr
from . import KERNELS, kernel
from .sparse import sparse
from .tensor import numpy_dtype


class _Values:
    """The sparse op's kernel context as the dense op's: X reads the values, no other input slot holds a var."""

    def __init__(self, k, values):
        self._k, self._values, self.ins = k, values, {"X": ["values"]}

    def x(self, slot: str, i: int = 0):
        return self._values

    def optional(self, slot: str):
        return self._values if slot == "X" else None

    def has(self, slot: str) -> bool:
        return slot == "X"

    def attr(self, name: str):
        """The sparse op's attribute, or the dense op's default for one the sparse op lacks (relu6's threshold)."""
        return self._k.attr(name) if name in self._k.attrs else registry.get(ON_VALUES[self._k.op.type][0]).attrs[name]

    def __getattr__(self, name: str):
        return getattr(self._k, name)


def _run(k):
    x = sparse(k, "x")
    return {"out": x.with_values(KERNELS[ON_VALUES[k.op.type][0]](_Values(k, x.values))["Out"])}


kernel(*ON_VALUES)(_run)


@kernel("sparse_cast")
def cast(k):
    x = sparse(k, "x")
    index_dtype, value_dtype = k.attr("index_dtype"), k.attr("value_dtype")
    index = (lambda i: i) if index_dtype == -1 else (lambda i: i.astype(numpy_dtype(index_dtype)))
    values = x.values if value_dtype == -1 else x.values.astype(numpy_dtype(value_dtype))
    if isinstance(x, SparseCsr):
        return {"out": SparseCsr(index(x.crows), index(x.cols), values, x.shape)}
    return {"out": SparseCoo(index(x.indices), values, x.shape)}


@kernel("sparse_isnan")
def isnan(k):
    x = sparse(k, "x")
    return {"out": x.with_values(np.isnan(x.values))}
