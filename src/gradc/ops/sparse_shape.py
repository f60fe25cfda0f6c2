"""paddle.sparse's reshape, slice, sum and nn.Softmax on a COO tensor, as Paddle 3.3.1's legacy mode writes them
(sparse_reshape, sparse_slice, sparse_sum, sparse_softmax; docs/sparse.md). Sites keep their order where they stay
(reshape renumbers them, slice keeps those in the window, shifted); sum merges the sites it reduces over into new ones,
sorted. Softmax along a dense last axis is the values' softmax; along the last of all-sparse dims it is each row's
softmax over the entries it holds. Reshape, slice and sum take a CSR tensor too (Paddle's *_csr kernels; sum over
every axis or the last only: csr_summed_dims). Their gradients:

    reshape: dx = dout's values on x's sites          slice: dx = dout's values at the kept sites, zeros elsewhere
    sum:     dx = dout at the site each entry summed into, spread over the reduced dense dims
    softmax: dx = out * (dout - the row's (or values' last axis') sum of out * dout)

The shape, axes, starts and ends come from a tensor, else a list of 1-value tensors, else the attribute (Paddle's
IntArray order); given as tensors, the dims they set are known at run time only.
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import defop, grad_op, typed
from .infer import check_float
from .shape import tensor_length

LONGS = AttrType.LONGS


def _from_tensor(ctx, name: str) -> bool:
    """Whether the int list ``name`` (Shape, Axes, ...) is given by its tensor or list of tensors."""
    return ctx.has(f"{name}Tensor") or ctx.has(f"{name}TensorList")


def resolve_shape(x: list[int], shape: list[int], fail) -> list[int]:
    """Paddle's reshape target: 0 copies x's dim, one -1 takes the rest."""
    out = [x[i] if d == 0 and i < len(x) else d for i, d in enumerate(shape)]
    if out.count(-1) > 1 or any(d < -1 for d in out):
        fail(f"sparse_reshape needs dims >= 0 and at most one -1, got {shape}")
    total, known = 1, 1
    for d in x:
        total *= d
    for d in out:
        known *= d if d != -1 else 1
    if -1 in out and min(x) >= 0:
        if known == 0 or total % known:
            fail(f"sparse_reshape cannot make {shape} of {x}")
        out[out.index(-1)] = total // known
    elif min(x) >= 0 and known != total:
        fail(f"sparse_reshape cannot make {shape} ({known} elements) of {x} ({total})")
    return out


def _reshape_infer(ctx):
    x = ctx.shape("x")
    if _from_tensor(ctx, "Shape"):
        count = tensor_length(ctx, "ShapeTensor") if ctx.has("ShapeTensor") else len(ctx.op.input("ShapeTensorList"))
        return {"out": (None if count is None else [-1] * count, ctx.dtype("x"))}
    return {"out": (None if x is None else resolve_shape(x, list(ctx.attr("shape")), ctx.fail), ctx.dtype("x"))}


def slice_dims(x: list[int], axes, starts, ends, fail) -> tuple[list[int], list[tuple[int, int, int]]]:
    """The sliced dims and each axis' (axis, start, end), Paddle's negative and too large bounds clamped."""
    if not len(axes) == len(starts) == len(ends):
        fail(f"sparse_slice needs one start and end per axis, got axes {axes}, starts {starts}, ends {ends}")
    out, windows = list(x), []
    for axis, start, end in zip(axes, starts, ends):
        if not -len(x) <= axis < len(x):
            fail(f"sparse_slice axis {axis} is out of range for {len(x)} dims")
        axis, dim = axis % len(x), x[axis % len(x)]
        start, end = (min(max(b + dim if b < 0 else b, 0), dim) for b in (start, end))
        windows.append((axis, start, max(end, start)))
        out[axis] = max(end - start, 0)
    return out, windows


def _slice_infer(ctx):
    x = ctx.shape("x")
    if x is not None and _from_tensor(ctx, "Axes"):
        return {"out": ([-1] * len(x), ctx.dtype("x"))}
    if x is not None and (_from_tensor(ctx, "Starts") or _from_tensor(ctx, "Ends")):   # the axes sliced are known
        sliced = {a % len(x) for a in ctx.attr("axes") if -len(x) <= a < len(x)}
        return {"out": ([-1 if i in sliced else d for i, d in enumerate(x)], ctx.dtype("x"))}
    if x is None or min(x) < 0:
        return {"out": (None, ctx.dtype("x"))}
    return {"out": (slice_dims(x, list(ctx.attr("axes")), list(ctx.attr("starts")), list(ctx.attr("ends")),
                               ctx.fail)[0], ctx.dtype("x"))}


def summed_dims(x: list[int], axis: list[int], keepdim: bool, fail) -> tuple[list[int], list[int]]:
    """(the output dims, the reduced axes >= 0); no axis: all of them, to [1] as Paddle's."""
    if any(not -len(x) <= a < len(x) for a in axis):
        fail(f"sparse_sum axis {axis} is out of range for {len(x)} dims")
    reduced = sorted({a % len(x) for a in axis}) if axis else list(range(len(x)))
    if not axis:
        return [1] * (len(x) if keepdim else 1), reduced
    return [1 if i in reduced else d for i, d in enumerate(x) if keepdim or i not in reduced], reduced


def csr_summed_dims(x: list[int], axis: list[int], keepdim: bool, fail) -> list[int]:
    """Paddle's sum_csr: over every axis [1, 1] ([1, 1, 1] for a 3-D x with keepdim), over the last (-1) only the
    rows' sums: [rows, 1] ([batch, rows, 1] with keepdim, [batch, rows] without)."""
    if not axis:
        return [1, 1, 1] if keepdim and len(x) == 3 else [1, 1]
    if list(axis) not in ([-1], [len(x) - 1]):
        fail(f"sparse_sum of a CSR tensor sums over every axis or the last (-1) only, as Paddle's sum_csr; got axis "
             f"{list(axis)}")
    return [*x[:-1], 1] if keepdim or len(x) == 2 else x[:-1]


def _sum_infer(ctx):
    check_float(ctx, "x")
    x, dtype = ctx.shape("x"), ctx.attr("dtype")
    out_dtype = ctx.dtype("x") if dtype == -1 else dtype
    if x is not None and ctx.var_type("x") == VarType.SPARSE_CSR and not _from_tensor(ctx, "Axis"):
        return {"out": (csr_summed_dims(x, list(ctx.attr("axis")), ctx.attr("keepdim"), ctx.fail), out_dtype)}
    if x is None or _from_tensor(ctx, "Axis"):   # the axes at run time: the rank too, unless keepdim
        return {"out": ([-1] * len(x) if x is not None and ctx.attr("keepdim") else None, out_dtype)}
    return {"out": (summed_dims(x, list(ctx.attr("axis")), ctx.attr("keepdim"), ctx.fail)[0], out_dtype)}


def _softmax_infer(ctx):
    check_float(ctx, "x")
    x = ctx.shape("x")
    if ctx.attr("axis") != -1 and (x is None or ctx.attr("axis") != len(x) - 1):
        ctx.fail(f"sparse_softmax takes the last axis only (Paddle's kernel), got axis {ctx.attr('axis')}")
    return {"out": (x, ctx.dtype("x"))}


SHAPE_SLOTS = ["ShapeTensor?", "ShapeTensorList[]?"]
# reshape's grad op takes the shape only for its own gradient (a reshape of ddx)
defop("sparse_reshape", ["x", *SHAPE_SLOTS], ["out"], attrs={"shape": typed([], LONGS)}, infer=_reshape_infer,
      no_grad_inputs=["ShapeTensor", "ShapeTensorList"], grad=grad_op("x", *SHAPE_SLOTS))
WINDOW_SLOTS = [f"{name}{kind}" for name in ("Axes", "Starts", "Ends") for kind in ("Tensor?", "TensorList[]?")]
defop("sparse_slice", ["x", *WINDOW_SLOTS], ["out"],
      attrs={"axes": typed([], LONGS), "starts": typed([], LONGS), "ends": typed([], LONGS)}, infer=_slice_infer,
      no_grad_inputs=[slot.rstrip("[]?") for slot in WINDOW_SLOTS], grad=grad_op("x", *WINDOW_SLOTS))
AXIS_SLOTS = ["AxisTensor?", "AxisTensorList[]?"]
defop("sparse_sum", ["x", *AXIS_SLOTS], ["out"], attrs={"axis": typed([], LONGS), "dtype": -1, "keepdim": False},
      infer=_sum_infer, no_grad_inputs=["AxisTensor", "AxisTensorList"], grad=grad_op("x", *AXIS_SLOTS))
defop("sparse_softmax", ["x"], ["out"], attrs={"axis": -1}, infer=_softmax_infer, grad=grad_op("out"))
