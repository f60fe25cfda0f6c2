"""SelectedRows (sparse gradient) kernels: the sparse embedding gradient, and the ops Paddle's backward,
clipping and regularization put after it (sum, scale, elementwise_mul, clip_by_norm, merge_selected_rows,
get_tensor_from_selected_rows). Each op that also takes tensors keeps its dense kernel, wrapped here: the
wrapper takes over only when the input holds a SelectedRows (docs/optimizers.md, SelectedRows gradients)."""

from __future__ import annotations

import numpy as np

from ..selected_rows import SelectedRows, merge_add
from ..sparse_value import SparseCoo, SparseCsr, add_on_sites
from . import KERNELS, clip, kernel, math, nn  # noqa: F401 - the dense kernels wrapped below, registered first


class Reading:
    """An op's kernel context in which some input slots read other values (a sparse input's dense stand-in)."""

    def __init__(self, k, values: dict):
        self._k, self._values = k, values

    def x(self, slot: str, i: int = 0):
        return self._values[slot] if slot in self._values else self._k.x(slot, i)

    def optional(self, slot: str):
        return self._values[slot] if slot in self._values else self._k.optional(slot)

    def __getattr__(self, name: str):
        return getattr(self._k, name)


def on_values(op_type: str, slot: str = "X", merge: bool = False) -> None:
    """When input ``slot`` holds a SelectedRows, the op's dense kernel applied to its values (rows and height
    kept; merged first if ``merge``), as Paddle's SelectedRows kernels of scale, elementwise_mul and clip_by_norm
    do; otherwise the dense kernel."""
    dense = KERNELS[op_type]

    @kernel(op_type, replace=True)
    def run(k):
        x = k.x(slot)
        if not isinstance(x, SelectedRows):
            return dense(k)
        x = x.merged() if merge else x
        return {"Out": x.with_values(dense(Reading(k, {slot: x.values}))["Out"])}


# scale checks for a SelectedRows itself (math.py): it is hot in dense programs
on_values("elementwise_mul")
on_values("clip_by_norm", merge=True)


@kernel("sum", replace=True)
def sum_(k):
    """All addends sparse: Paddle's MergeAdd of them (a SelectedRows); some: the tensor of their sum. (Addends that
    are SparseCoo or SparseCsr, the gradients of one paddle.sparse var, add on their sites.)"""
    addends = k.xs("X")
    if isinstance(addends[0], (SparseCoo, SparseCsr)):
        return {"Out": add_on_sites(addends)}
    sparse = [a for a in addends if isinstance(a, SelectedRows)]
    if not sparse:
        return {"Out": math.add_up(addends)}
    if len(sparse) == len(addends):
        return {"Out": merge_add(addends)}
    out = np.zeros(sparse[0].shape, sparse[0].dtype)
    for addend in addends:
        if isinstance(addend, SelectedRows):
            np.add.at(out, addend.rows, addend.values)
        else:
            out += addend
    return {"Out": out}


DENSE_LOOKUP_GRAD = KERNELS["lookup_table_v2_grad"]


@kernel("lookup_table_v2_grad", "lookup_table_grad", replace=True)
def lookup_table_grad(k):
    """is_sparse: a SelectedRows with one row per id, in the order of Ids, padding ids included (Paddle's sparse
    kernel does not drop them: the padding row is trained), each the output grad of that position."""
    if not k.attr("is_sparse"):
        return DENSE_LOOKUP_GRAD(k)
    w, dout = k.x("W"), k.x("Out@GRAD")
    ids = nn._ids(k, w.shape[0]).reshape(-1)
    return {"W@GRAD": SelectedRows(ids, dout.reshape(ids.size, *w.shape[1:]).copy(), w.shape[0])}


def _sparse_input(k) -> SelectedRows:
    x = k.x("X")
    if not isinstance(x, SelectedRows):
        raise ValueError("X holds a dense tensor, not a SelectedRows (the sparse gradient of an embedding table)")
    return x


@kernel("merge_selected_rows")
def merge_selected_rows(k):
    """Repeated rows added (Paddle's MergeAdd: unsorted when no row repeats)."""
    return {"Out": _sparse_input(k).merged()}


@kernel("get_tensor_from_selected_rows")
def get_tensor_from_selected_rows(k):
    """The values tensor [rows, ...] (not the [height, ...] tensor it stands for)."""
    return {"Out": _sparse_input(k).values.copy()}
