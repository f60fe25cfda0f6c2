"""Paddle 1.x/2.x shape ops that Paddle 3.3.1 still runs but its API no longer writes: expand (tile semantics),
flatten2, top_k, reshape, transpose, crop (v1) and fill_constant_batch_size_like. Older saved programs hold them.
Each is defined with Paddle's v1 slots and attributes and infers its output with the v2 family's rules; the
kernels (gradc.executor.kernels.legacy_shape) call the v2 kernels with translated attributes. Second derivatives:
each grad op is the adjoint of a forward op linear in X, so its grad is that forward op applied to ddX
(gradc.ops.composite.linear), or a take_along_axis for top_k.

Where gradc and Paddle 3.3.1 part: Paddle declares expand's output dims with expand_v2's rule (the times read as
a target shape) while its kernel tiles; gradc infers the tiled dims (and runs programs that carry Paddle's).
Paddle's crop reads past X for a window outside it (garbage values) and crashes without offsets; gradc refuses
both. top_k orders tied values by lower index first, as gradc's top_k_v2; Paddle leaves ties in the order of
an unstable partial sort (same values, other Indices)."""

from __future__ import annotations

from ..ir import EMPTY_VAR, VarType
from ..ir.types import TENSOR_DTYPES
from ..registry import NO_GRAD, defgrad, defop, grad_op
from ..shapes import numel
from .composite import Formula, first, linear
from .shape import reshape_dims, runtime_dims, xshape


def _expand_infer(ctx):
    """expand_times repeats each dim of X (tile): at least one count per dim of X, none negative."""
    x = ctx.shape("X")
    if ctx.has("ExpandTimes") or ctx.has("expand_times_tensor"):
        times = runtime_dims(ctx, "ExpandTimes", "expand_times_tensor")
        return {"Out": (None if times is None else [-1] * max(len(x), len(times)), ctx.dtype("X"))}
    times = list(ctx.attr("expand_times"))
    if len(times) < len(x) or any(t < 0 for t in times):
        ctx.fail(f"expand_times {times} must give a count >= 0 for each of the {len(x)} dims of X {x}")
    x = [1] * (len(times) - len(x)) + x
    return {"Out": ([-1 if d < 0 else d * t for d, t in zip(x, times)], ctx.dtype("X"))}


def flatten2_dims(fail, x: list[int], axis: int) -> list[int]:
    """flatten2 folds X into 2-D: [prod(dims[:axis]), prod(dims[axis:])]; a 0-d X becomes [1]."""
    if not 0 <= axis <= len(x):
        fail(f"flatten2 axis {axis} must be in [0, {len(x)}] (the rank of X {x})")
    return [numel(x[axis:])] if not x else [numel(x[:axis]), numel(x[axis:])]


def _flatten2_infer(ctx):
    return {"Out": (flatten2_dims(ctx.fail, ctx.shape("X"), ctx.attr("axis")), ctx.dtype("X")), "XShape": xshape(ctx)}


def _top_k_infer(ctx):
    """top_k (v1) takes the k largest along the last axis, sorted; K (a tensor) wins over k."""
    x = list(ctx.shape("X"))
    k = ctx.attr("k")
    if not x:
        ctx.fail("top_k needs X of rank >= 1, got a 0-d tensor")
    if not ctx.has("K") and (k < 1 or k > x[-1] >= 0):
        ctx.fail(f"top_k k {k} must be in [1, {x[-1]}] (the last dim of X {x})")
    x[-1] = -1 if ctx.has("K") else k
    return {"Out": (x, ctx.dtype("X")), "Indices": (x, VarType.INT64)}


def _reshape_infer(ctx):
    if ctx.has("ShapeTensor"):  # one 1-value tensor per dim, and it wins over Shape
        return {"Out": ([-1] * len(ctx.op.input("ShapeTensor")), ctx.dtype("X"))}
    if ctx.has("Shape"):
        return {"Out": (runtime_dims(ctx, "Shape", "ShapeTensor"), ctx.dtype("X"))}
    return {"Out": (reshape_dims(ctx.fail, ctx.shape("X"), list(ctx.attr("shape") or [])), ctx.dtype("X"))}


def _transpose_infer(ctx):
    x = ctx.shape("X")
    axis = list(ctx.attr("axis"))
    if sorted(ctx.axis(a, len(x)) for a in axis) != list(range(len(x))):
        ctx.fail(f"transpose axis {axis} is not a permutation of the {len(x)} dims of X {x}")
    return {"Out": ([x[ctx.axis(a, len(x))] for a in axis], ctx.dtype("X"))}


def crop_window(fail, x: list[int], shape: list[int], offsets: list[int] | None) -> list[int]:
    """crop's output dims: ``shape`` (a -1 takes what is left of X's dim after the offset) at ``offsets``
    (None: given by a tensor at run time), inside X."""
    if len(shape) != len(x) or (offsets is not None and len(offsets) != len(x)):
        fail(f"crop needs a size and an offset per dim of X {x}, got shape {shape} and offsets {offsets}")
    offsets = offsets if offsets is not None else [0] * len(x)
    out = [d - o if s == -1 and d >= 0 else s for d, s, o in zip(x, shape, offsets)]
    if any(s < -1 or s == 0 or o < 0 or (d >= 0 and o + s > d) for d, s, o in zip(x, out, offsets)):
        fail(f"crop of X {x} with shape {shape} at offsets {offsets} leaves X")
    return out


def _crop_infer(ctx):
    """The output is shaped like Y when it is given (a dim Y knows only at run time stays unknown), else by the
    shape attribute."""
    offsets = None if ctx.has("Offsets") else list(ctx.attr("offsets"))
    if not ctx.has("Y"):
        return {"Out": (crop_window(ctx.fail, ctx.shape("X"), list(ctx.attr("shape")), offsets), ctx.dtype("X"))}
    like = ctx.shape("Y")
    if like is None:
        return {"Out": (None, ctx.dtype("X"))}
    crop_window(ctx.fail, ctx.shape("X"), [max(d, 1) for d in like], offsets)
    return {"Out": (like, ctx.dtype("X"))}


def batch_size_like_dims(fail, shape: list[int], like: list[int], input_idx: int, output_idx: int) -> list[int]:
    """``shape`` with its dim ``output_idx`` replaced by the input's dim ``input_idx`` (the batch size)."""
    if not 0 <= input_idx < len(like) or not 0 <= output_idx < len(shape):
        fail(f"input_dim_idx {input_idx} must index Input {like} and output_dim_idx {output_idx} the shape {shape}")
    out = list(shape)
    out[output_idx] = like[input_idx]
    if any(d < 0 for i, d in enumerate(out) if i != output_idx):
        fail(f"fill_constant_batch_size_like shape {shape} has a negative dim besides output_dim_idx {output_idx}")
    return out


def _fill_batch_size_like_infer(ctx):
    if ctx.attr("dtype") not in TENSOR_DTYPES:
        ctx.fail(f"dtype {ctx.attr('dtype')} is not a tensor data type gradc knows")
    dims = batch_size_like_dims(ctx.fail, list(ctx.attr("shape")), ctx.shape("Input"), ctx.attr("input_dim_idx"),
                                ctx.attr("output_dim_idx"))
    return {"Out": (dims, ctx.attr("dtype"))}


EXPAND_TENSORS = ["ExpandTimes?", "expand_times_tensor[]?"]
RESHAPE_TENSORS = ["Shape?", "ShapeTensor[]?"]

defop("expand", ["X"] + EXPAND_TENSORS, attrs={"expand_times": []}, no_grad_inputs=EXPAND_TENSORS,
      infer=_expand_infer, grad=grad_op("X", "ExpandTimes", "expand_times_tensor"))
defop("flatten2", ["X"], ["Out", "XShape"], attrs={"axis": 1}, no_grad_outputs=["XShape"], infer=_flatten2_infer,
      grad=grad_op("X", "XShape"))
defop("top_k", ["X", "K?"], ["Out", "Indices"], attrs={"k": 1}, no_grad_inputs=["K"], no_grad_outputs=["Indices"],
      infer=_top_k_infer, grad=grad_op("X", "Indices", "K"))
# Paddle's default maker also writes Shape@GRAD: the shape inputs are integer, so they never get one
defop("reshape", ["X"] + RESHAPE_TENSORS, attrs={"shape": [], "use_quantizer": False}, infer=_reshape_infer,
      grad=grad_op("X", "Shape", "ShapeTensor", "Out"))
defop("transpose", ["X"], attrs={"axis": [], "data_format": "AnyLayout"}, infer=_transpose_infer,
      grad=grad_op("X", "Out"))
defop("crop", ["X", "Y?", "Offsets?"], attrs={"shape": [], "offsets": []}, no_grad_inputs=["Y", "Offsets"],
      infer=_crop_infer, grad=grad_op("X", "Y", "Offsets"))
defop("fill_constant_batch_size_like", ["Input"],
      attrs={"shape": [], "input_dim_idx": 0, "output_dim_idx": 0, "value": 0.0, "str_value": "", "dtype": 5,
             "force_cpu": False}, infer=_fill_batch_size_like_infer, grad=NO_GRAD)


def _top_k_second(g):
    """top_k_grad puts dOut at Indices along the last axis: d/d(dOut) takes ddX there."""
    wanted = first(g.IG("Out@GRAD"))
    if wanted == EMPTY_VAR:
        return []
    f = Formula(g)
    axis = len(g.shape(first(g.O("X@GRAD")))) - 1
    f.into(wanted, "take_along_axis", {"Input": first(g.OG("X@GRAD")), "Index": first(g.I("Indices"))},
           {"Axis": axis}, slot="Result")
    return f.ops


defgrad("expand_grad", grad=linear("expand", passed=("ExpandTimes", "expand_times_tensor")),
        no_grad_inputs=["X", "ExpandTimes", "expand_times_tensor"])
defgrad("flatten2_grad", grad=linear("flatten2", extra=("XShape",)), no_grad_inputs=["X", "XShape"])
defgrad("top_k_grad", grad=_top_k_second, no_grad_inputs=["X", "Indices", "K"])
defgrad("reshape_grad", grad=linear("reshape", passed=("Shape", "ShapeTensor")),
        no_grad_inputs=["X", "Out", "Shape", "ShapeTensor"])
defgrad("transpose_grad", grad=linear("transpose"), no_grad_inputs=["X", "Out"])
defgrad("crop_grad", grad=linear("crop", passed=("Y", "Offsets")), no_grad_inputs=["X", "Y", "Offsets"])
