"""Views of a tensor's storage that Paddle's PIR dialect writes for paddle.view / view_as (view_shape: another
shape; view_dtype: the same bytes read as another dtype), paddle.as_strided (elements picked by strides from an
offset) and Tensor.set_ (set: x made a strided view of source). gradc has no aliasing storage: each result is a
copy, read from its input's row-major elements (a static program's values are contiguous), so a later in-place
write to the result does not reach the input, as it does in Paddle's dynamic graph (docs/pir-sweep.md).

index_select_strided (Tensor.__getitem__'s view of one index along an axis, a PIR op paddle._pir_ops builds): x's
slice at ``index`` along ``axis``, that axis dropped; a negative index counts from the end (Paddle 3.3.1's kernel
does not wrap it and reads before the slice: docs/pir-sweep.md).
view_shape, as_strided and index_select_strided are linear: their grads put dOut back (as_strided_grad adds where
elements overlap).
view_dtype has no gradient in gradc: reading a float's bits as another dtype is not a differentiable function
(Paddle's view_dtype_grad reads dOut's bits back as the input's dtype). set has none, as in Paddle."""

from __future__ import annotations

from ..ir import AttrType, VarType, dtype_name
from ..registry import NO_GRAD, defop, grad_op, typed
from ..shapes import numel
from .creation import DTYPE_BYTES

STRIDED_ATTRS = {"dims": typed([], AttrType.LONGS), "stride": typed([], AttrType.LONGS),
                 "offset": typed(0, AttrType.LONG)}


def _view_shape_infer(ctx):
    x, dims = ctx.shape("input"), list(ctx.attr("dims"))
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        ctx.fail(f"view_shape dims {dims} may hold one -1 and no other negative dim")
    if -1 not in dims and -1 not in x and numel(dims) != numel(x):
        ctx.fail(f"view_shape cannot view {x} ({numel(x)} elements) as {dims}")
    return {"out": (dims, ctx.dtype("input"))}


def _view_dtype_infer(ctx):
    x, source, target = ctx.shape("input"), ctx.dtype("input"), ctx.attr("dtype")
    if source not in DTYPE_BYTES or target not in DTYPE_BYTES or VarType.BF16 in (source, target):
        # gradc keeps bfloat16 values as float32 (gradc.bfloat16): their bytes are not Paddle's
        ctx.fail(f"view_dtype cannot read {dtype_name(source)} as {dtype_name(target)} in gradc")
    ratio_in, ratio_out = DTYPE_BYTES[source], DTYPE_BYTES[target]
    if not x:
        ctx.fail("view_dtype needs input of rank >= 1")
    last = x[-1]
    if ratio_in != ratio_out and last >= 0:
        if (last * ratio_in) % ratio_out:
            ctx.fail(f"view_dtype cannot read the last dim {last} of {dtype_name(source)} as whole "
                     f"{dtype_name(target)} values")
        last = last * ratio_in // ratio_out
    return {"out": (x[:-1] + [last], target)}


def strided_dims(ctx, source: str, out: str) -> dict:
    """A strided view of ``source``'s elements: ``dims`` picked with ``stride`` (elements) from ``offset`` (bytes,
    a whole number of elements), every picked position inside the source."""
    x, dims, stride, offset = ctx.shape(source), list(ctx.attr("dims")), list(ctx.attr("stride")), ctx.attr("offset")
    size = DTYPE_BYTES.get(ctx.dtype(source))
    if len(dims) != len(stride) or any(d < 0 for d in dims) or any(s < 0 for s in stride):
        ctx.fail(f"{ctx.op.type} needs dims {dims} and stride {stride} of one length, none negative")
    if size is None:
        ctx.fail(f"{ctx.op.type} of {dtype_name(ctx.dtype(source))}: gradc knows no byte size of it")
    if offset < 0 or offset % size:
        ctx.fail(f"{ctx.op.type} offset {offset} is not a whole number of {dtype_name(ctx.dtype(source))} "
                 "elements (it counts bytes)")
    last = offset // size + sum((d - 1) * s for d, s in zip(dims, stride))
    if numel(dims) and -1 not in x and last >= numel(x):
        ctx.fail(f"{ctx.op.type} reads element {last} of {source} {x}, which has {numel(x)}")
    return {out: (dims, ctx.dtype(source))}


def _select_infer(ctx):
    x, index, axis = ctx.shape("x"), ctx.attr("index"), ctx.attr("axis")
    if not x or not -len(x) <= axis < len(x):
        ctx.fail(f"index_select_strided axis {axis} is not an axis of x {x}")
    size = x[axis]
    if size >= 0 and not -size <= index < size:
        ctx.fail(f"index_select_strided index {index} is outside axis {axis} of size {size}")
    return {"out": (x[:axis % len(x)] + x[axis % len(x) + 1:], ctx.dtype("x"))}


def _set_infer(ctx):
    if ctx.dtype("x") != ctx.dtype("source"):
        ctx.fail(f"set needs x and source of one dtype, got {dtype_name(ctx.dtype('x'))} and "
                 f"{dtype_name(ctx.dtype('source'))}")
    return strided_dims(ctx, "source", "out")


defop("view_shape", ["input"], ["out"], attrs={"dims": typed([], AttrType.LONGS)}, infer=_view_shape_infer,
      grad=grad_op("input"))
defop("view_dtype", ["input"], ["out"], attrs={"dtype": VarType.FP32}, infer=_view_dtype_infer, grad=NO_GRAD)
defop("as_strided", ["input"], ["out"], attrs=STRIDED_ATTRS, infer=lambda ctx: strided_dims(ctx, "input", "out"),
      grad=grad_op("input"))
defop("index_select_strided", ["x"], ["out"], attrs={"index": typed(0, AttrType.LONG), "axis": 0},
      infer=_select_infer, grad=grad_op("x"))
defop("set", ["x", "source"], ["out"], attrs=STRIDED_ATTRS, infer=_set_infer, grad=NO_GRAD)
