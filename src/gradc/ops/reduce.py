"""Reductions over dims (or all of them)."""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..ir.types import TENSOR_DTYPES
from ..registry import NO_GRAD, defop, grad_op, typed
from ..shapes import normalize_axis, value_error

REDUCE_ATTRS = {"dim": [0], "keep_dim": False, "reduce_all": False, "in_dtype": -1, "out_dtype": -1}


def reduced_axes(attrs_of, rank: int, fail=value_error) -> tuple[int, ...]:
    """The axes a reduce op folds: all of them with reduce_all, an empty dim list, or every dim listed.
    ``fail(message)`` reports a dim out of range (see normalize_axis)."""
    dims = list(attrs_of("dim") or [])
    if attrs_of("reduce_all") or not dims:
        return tuple(range(rank))
    axes = {normalize_axis(d, rank, fail) for d in dims}
    return tuple(sorted(axes)) if rank else ()  # dim 0 or -1 of a 0-d X: nothing to fold


def reduce_infer(ctx, dtype=None, attr=None):
    """Out's shape and dtype; ``attr`` reads the attributes by the reduce ops' names (default: the op's own)."""
    attr = attr or ctx.attr
    shape = ctx.shape("X")
    axes = reduced_axes(attr, len(shape), ctx.fail)
    if attr("keep_dim"):
        out = [1 if i in axes else d for i, d in enumerate(shape)]
    else:
        out = [d for i, d in enumerate(shape) if i not in axes]
    return {"Out": (out, dtype or ctx.dtype("X"))}


def _tensor_axes_infer(bool_out: bool):
    """Out of X's dtype or bool; axes in AxisTensor(List) are known at run time only (then keep_dim keeps the
    rank)."""
    def infer(ctx):
        dtype = VarType.BOOL if bool_out else ctx.dtype("X")
        if ctx.has("AxisTensor") or ctx.has("AxisTensorList"):
            return {"Out": ([-1] * len(ctx.shape("X")) if ctx.attr("keep_dim") else None, dtype)}
        return reduce_infer(ctx, dtype)
    return infer


def sum_dtype(x_dtype, out_dtype: int, fail=value_error):
    """reduce_sum's Out dtype: out_dtype when given; without one (-1), X's, but int64 for a bool or int32 X, as
    Paddle 3.3.1's (a count of a mask: paddle.nanmean's); int8, int16 and uint8 keep their dtype (and wrap)."""
    if out_dtype == -1:
        return VarType.INT64 if x_dtype in (VarType.BOOL, VarType.INT32) else x_dtype
    if out_dtype not in TENSOR_DTYPES:
        fail(f"reduce_sum out_dtype {out_dtype} is neither -1 (X's dtype) nor a tensor data type gradc knows")
    return VarType(out_dtype)


def _sum_infer(ctx):
    return reduce_infer(ctx, sum_dtype(ctx.dtype("X"), ctx.attr("out_dtype"), ctx.fail))


defop("reduce_sum", ["X"], attrs=REDUCE_ATTRS, infer=_sum_infer, grad=grad_op("X"), tensor_attrs=["dim"])
defop("reduce_mean", ["X"], attrs=REDUCE_ATTRS, infer=reduce_infer, grad=grad_op("X"), tensor_attrs=["dim"])
for _name in ("reduce_max", "reduce_min", "reduce_prod"):  # their grads compare with Out or take products
    defop(_name, ["X"], attrs=REDUCE_ATTRS, infer=reduce_infer, grad=grad_op("X", "Out"), tensor_attrs=["dim"])

# AxisTensor (the axes) or AxisTensorList (one axis per tensor) overrides dim, as the slots say; Paddle 3.3.1's
# kernels ignore them (docs/ops-activation-math.md). reduce_all / reduce_any: whether every / any element along the
# axes is nonzero. reduce_amax / reduce_amin: Paddle 2's max and min that share a tie's grad (3.3.1's max and min
# share it too).
_TENSOR_AXES = ["X", "AxisTensor?", "AxisTensorList[]?"]
_LONG_DIMS = {**REDUCE_ATTRS, "dim": typed([0], AttrType.LONGS)}
for _name in ("reduce_all", "reduce_any"):
    defop(_name, _TENSOR_AXES, attrs=_LONG_DIMS, infer=_tensor_axes_infer(bool_out=True), grad=NO_GRAD)
for _name in ("reduce_amax", "reduce_amin"):
    defop(_name, _TENSOR_AXES, attrs=_LONG_DIMS, infer=_tensor_axes_infer(bool_out=False),
          grad=grad_op(*_TENSOR_AXES, "Out"), no_grad_inputs=_TENSOR_AXES[1:])

defop("mean", ["X"], infer=lambda ctx: {"Out": ([], ctx.dtype("X"))}, grad=grad_op("X"))


def as_reduce_attrs(attrs_of):
    """logsumexp's attributes (axis, keepdim, reduce_all) read by the reduce ops' names."""
    return lambda name: attrs_of({"dim": "axis", "keep_dim": "keepdim"}.get(name, name))


def logsumexp_axes(attrs_of, rank: int, fail=value_error) -> tuple[int, ...]:
    """logsumexp's axes: reduce_all or no axis folds every dim."""
    return reduced_axes(as_reduce_attrs(attrs_of), rank, fail)


# log(sum(exp(X))) over the axes; its grad is dOut exp(X - Out) (softmax over the axes)
defop("logsumexp", ["X"], attrs={"axis": typed([], AttrType.INTS), "keepdim": False, "reduce_all": False},
      infer=lambda ctx: reduce_infer(ctx, attr=as_reduce_attrs(ctx.attr)), grad=grad_op("X", "Out"))


def _p_norm_infer(ctx):
    shape = ctx.shape("X")
    keep = ctx.attr("keepdim")
    if ctx.attr("asvector"):  # the norm of all elements: 0-d unless keepdim
        return {"Out": ([1] * len(shape) if keep else [], ctx.dtype("X"))}
    axis = ctx.axis(ctx.attr("axis"), len(shape))
    if not shape:  # axis 0 or -1 of a 0-d X: the norm of its one element
        return {"Out": ([], ctx.dtype("X"))}
    out = [1 if i == axis else d for i, d in enumerate(shape)] if keep else shape[:axis] + shape[axis + 1:]
    return {"Out": (out, ctx.dtype("X"))}


defop("p_norm", ["X"], attrs={"porder": 2.0, "axis": -1, "epsilon": 1e-12, "keepdim": False, "asvector": False},
      infer=_p_norm_infer, grad=grad_op("X", "Out"))


def _renorm_infer(ctx):
    shape, p, max_norm = ctx.shape("X"), ctx.attr("p"), ctx.attr("max_norm")
    if not shape:
        ctx.fail("renorm needs X of rank >= 1 (it norms the slices along axis), got a 0-d tensor")
    ctx.axis(ctx.attr("axis"), len(shape))
    if not 0 < p < float("inf"):
        ctx.fail(f"renorm p must be a finite power > 0, got {p}")
    if max_norm < 0:
        ctx.fail(f"renorm max_norm must be >= 0, got {max_norm}")
    return {"Out": (shape, ctx.dtype("X"))}


# each slice X[..., i, ...] along axis whose p-norm (over all its elements) exceeds max_norm is scaled down to it;
# p <= 0 (no norm) and max_norm < 0 (a sign flip) are refused, where Paddle computes without a check
defop("renorm", ["X"], attrs={"p": 2.0, "axis": 0, "max_norm": 1.0}, infer=_renorm_infer, grad=grad_op("X"))
