"""Ops that pick elements by position: slice, strided_slice, crop_tensor, gather, gather_nd, scatter,
top_k_v2, arg_max, arg_min."""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..opdef import slot_names
from ..registry import NO_GRAD, defop, grad_op, typed
from ..shapes import dims_match, normalize_axis, value_error

SLICE_TENSORS = ["StartsTensor?", "EndsTensor?", "StartsTensorList[]?", "EndsTensorList[]?"]
STRIDED_TENSORS = SLICE_TENSORS + ["StridesTensor?", "StridesTensorList[]?"]


def paddle_slice(start: int, end: int, stride: int, size: int, decrease: bool = False) -> slice:
    """Paddle's (start, end, stride) on a dim of ``size`` as a Python slice: Paddle 3.3.1 bounds them as Python
    does (negative ones count from the end, out-of-range ones clamp; checked on every start, end and stride in
    [-5, 5] and the int32 extremes). A decreased axis keeps one element: the first the slice visits."""
    if decrease and (start, end) == (-1, 0):  # Paddle's marker for "the last element"
        return slice(size - 1, size)
    cut = slice(start, end, stride)
    if decrease:
        visited = range(size)[cut]
        if not visited:
            raise ValueError(f"a decreased axis of size {size} selects no element with start {start}, end {end}")
        return slice(visited[0], visited[0] + 1)
    return cut


def slicing(x: list[int], axes, starts, ends, strides, decrease_axis, fail=value_error):
    """The index (a tuple of slices) and the output dims of slice/strided_slice on a tensor of dims ``x``;
    decreased axes are dropped from the dims. A dim of x that is unknown (-1) stays unknown."""
    if axes and not x:
        fail("cannot slice a 0-d tensor")
    decrease = {normalize_axis(a, len(x), fail) for a in decrease_axis}
    index, out = [slice(None)] * len(x), list(x)
    for axis, start, end, stride in zip(axes, starts, ends, strides):
        axis = normalize_axis(axis, len(x), fail)
        if stride == 0:
            fail(f"the stride along axis {axis} is 0")
        if x[axis] >= 0:
            index[axis] = paddle_slice(start, end, stride, x[axis], axis in decrease)
            out[axis] = len(range(x[axis])[index[axis]])
    return tuple(index), [d for i, d in enumerate(out) if i not in decrease]


def _slice_infer(strided: bool):
    def infer(ctx):
        x = ctx.shape("Input")
        tensors = STRIDED_TENSORS if strided else SLICE_TENSORS
        axes = list(ctx.attr("axes"))
        strides = list(ctx.attr("strides")) if strided else [1] * len(axes)
        # bounds known at run time only: a tensor gives them, or Paddle's infer_flags say so
        if any(ctx.has(s) for s in slot_names(tensors)) or -1 in list(ctx.attr("infer_flags") or []):
            sliced = {ctx.axis(a, len(x)) for a in axes}
            x = [-1 if i in sliced else d for i, d in enumerate(x)]
        _, out = slicing(x, axes, ctx.attr("starts"), ctx.attr("ends"), strides, list(ctx.attr("decrease_axis")),
                         ctx.fail)
        return {"Out": (out, ctx.dtype("Input"))}
    return infer


SLICE_ATTRS = {"axes": [], "starts": [], "ends": [], "infer_flags": [], "decrease_axis": []}
defop("slice", ["Input"] + SLICE_TENSORS, attrs=SLICE_ATTRS, no_grad_inputs=SLICE_TENSORS,
      infer=_slice_infer(False), grad=grad_op("Input", *SLICE_TENSORS))
defop("strided_slice", ["Input"] + STRIDED_TENSORS, attrs={**SLICE_ATTRS, "strides": []},
      no_grad_inputs=STRIDED_TENSORS, infer=_slice_infer(True), grad=grad_op("Input", *STRIDED_TENSORS))


def _gather_infer(ctx):
    x, index = ctx.shape("X"), ctx.shape("Index")
    if len(index) > 1 and not (len(index) == 2 and index[1] == 1):
        ctx.fail(f"gather needs a 1-D Index, got {index}")
    if not x:
        ctx.fail("gather needs X of rank >= 1, got a 0-d tensor")
    if ctx.has("Axis"):  # the axis is known at run time only: so is every dim
        return {"Out": ([-1] * (len(x) - (not index)), ctx.dtype("X"))}
    axis = ctx.axis(ctx.attr("axis"), len(x))
    return {"Out": (x[:axis] + index[:1] + x[axis + 1:], ctx.dtype("X"))}


def _gather_nd_infer(ctx):
    x, index = ctx.shape("X"), ctx.shape("Index")
    if index[-1] > len(x):
        ctx.fail(f"gather_nd Index {index} addresses {index[-1]} dims of the rank {len(x)} X {x}")
    return {"Out": (index[:-1] + x[max(index[-1], 0):], ctx.dtype("X"))}


def _scatter_infer(ctx):
    x, ids, updates = ctx.shape("X"), ctx.shape("Ids"), ctx.shape("Updates")
    if len(updates) != len(x) or not all(map(dims_match, updates[1:] + ids[:1], x[1:] + updates[:1])):
        ctx.fail(f"scatter needs Updates shaped [len(Ids)] + X.shape[1:]: X {x}, Ids {ids}, Updates {updates}")
    return {"Out": (x, ctx.dtype("X"))}


defop("gather", ["X", "Index", "Axis?"], attrs={"axis": 0}, no_grad_inputs=["Index", "Axis"],
      infer=_gather_infer, grad=grad_op("X", "Index", "Axis"))
defop("gather_nd", ["X", "Index"], no_grad_inputs=["Index"], infer=_gather_nd_infer,
      grad=grad_op("X", "Index"))
defop("scatter", ["X", "Ids", "Updates"], attrs={"overwrite": True}, no_grad_inputs=["Ids"],
      infer=_scatter_infer, grad=grad_op("Ids", "Updates"))

INDEX_DTYPES = {-1: VarType.INT64, 2: VarType.INT32, 3: VarType.INT64}


def _arg_infer(ctx):
    x = ctx.shape("X")
    axis = ctx.axis(ctx.attr("axis"), len(x))
    if ctx.attr("flatten") or not x:  # a 0-d X gives a 0-d index
        out = [1] * len(x) if ctx.attr("keepdims") else []
    else:
        out = x[:axis] + ([1] if ctx.attr("keepdims") else []) + x[axis + 1:]
    return {"Out": (out, INDEX_DTYPES.get(ctx.attr("dtype"), VarType.INT64))}


for _name in ("arg_max", "arg_min"):
    defop(_name, ["X"], attrs={"axis": typed(0, AttrType.LONG), "keepdims": False, "flatten": False, "dtype": 3},
          infer=_arg_infer, grad=NO_GRAD, tensor_attrs=["axis"])


def _top_k_infer(ctx):
    x = list(ctx.shape("X"))
    axis = ctx.axis(ctx.attr("axis"), len(x))
    k = ctx.attr("k")
    if not ctx.has("K") and (k < 1 or (x and k > x[axis] >= 0) or (not x and k > 1)):
        ctx.fail(f"top_k_v2 k {k} must be in [1, {x[axis] if x else 1}] (axis {axis} of {x})")
    if x:  # a 0-d X gives 0-d outputs
        x[axis] = -1 if ctx.has("K") else ctx.attr("k")
    return {"Out": (x, ctx.dtype("X")), "Indices": (x, VarType.INT64)}


defop("top_k_v2", ["X", "K?"], ["Out", "Indices"], attrs={"k": 1, "axis": -1, "largest": True, "sorted": True},
      no_grad_inputs=["K"], no_grad_outputs=["Indices"], infer=_top_k_infer, grad=grad_op("X", "Indices", "K"))


CROP_TENSORS = ["Shape?", "ShapeTensor[]?", "Offsets?", "OffsetsTensor[]?"]


def _crop_infer(ctx):
    x, shape, offsets = ctx.shape("X"), list(ctx.attr("shape")), list(ctx.attr("offsets"))
    if ctx.has("Shape") or ctx.has("ShapeTensor"):   # the dims are known at run time only
        return {"Out": ([-1] * len(x), ctx.dtype("X"))}
    if len(shape) != len(x):
        ctx.fail(f"crop_tensor shape {shape} must give every dim of {x}")
    if ctx.has("Offsets") or ctx.has("OffsetsTensor"):
        offsets = [0] * len(x)   # only the sizes can be checked before run time
    elif len(offsets) != len(x):
        ctx.fail(f"crop_tensor offsets {offsets} must give every dim of {x}")
    out = [d - o if s == -1 and d >= 0 else s for d, s, o in zip(x, shape, offsets)]
    if any(s < -1 or s == 0 or o < 0 or (d >= 0 and o + s > d) for d, s, o in zip(x, out, offsets)):
        ctx.fail(f"crop_tensor of {x} with shape {shape} at offsets {offsets} leaves X")
    return {"Out": (out, ctx.dtype("X"))}


defop("crop_tensor", ["X"] + CROP_TENSORS, attrs={"shape": [], "offsets": []}, no_grad_inputs=CROP_TENSORS,
      infer=_crop_infer, grad=grad_op("X", "Offsets", "OffsetsTensor"))
