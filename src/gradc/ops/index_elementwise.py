"""index_elementwise_get / _put / _put_with_tensor: Tensor.__getitem__ and __setitem__ with tensor indices as
Paddle's C++ eager indexer writes them (PIR ops paddle._pir_ops builds; docs/pir-sweep.md). Their attributes
describe a strided view of x: ``input_dims`` with ``input_strides`` (elements; 0 on the dims the indices
replace) from ``slice_offset`` (bytes), and per index tensor i its dim's size (``index_dims``) and stride
(``index_stride(s)``, bytes). Element m of the view is x's element
    slice_offset/itemsize + sum_k m_k*input_strides[k] + sum_i index_i[m]*index_stride[i]/itemsize,
each index broadcast to input_dims from the right and counted from the end when negative.
index_dims holds the sizes, -1, then the indices' shape, which they are read in (without the -1 Paddle's kernels
ignore the indices; gradc refuses it).
get: the view, shaped input_dims; its grad adds dOut back where get read (``accumulate``; else the last write stays).
put / put_with_tensor: x with the view's elements set to ``value`` (a float attribute, or the ValueTensor) / to
the value tensor broadcast to input_dims; x's grad is dOut zeroed there, value's grad dOut read there, summed to
value's shape. An index outside [-size, size) or a view reaching outside x is refused (Paddle reads or writes
outside x's storage)."""

from __future__ import annotations

from ..ir import AttrType, VarType, dtype_name
from ..registry import defop, grad_op, typed
from ..shapes import numel
from .creation import DTYPE_BYTES

VIEW_ATTRS = {"input_dims": typed([], AttrType.LONGS), "input_strides": typed([], AttrType.LONGS),
              "index_dims": typed([], AttrType.LONGS), "slice_offset": typed(0, AttrType.LONG)}
GET_ATTRS = {**VIEW_ATTRS, "index_stride": typed([], AttrType.LONGS), "accumulate": True, "is_combined": False}
PUT_ATTRS = {**VIEW_ATTRS, "index_strides": typed([], AttrType.LONGS)}


def split_index_dims(index_dims: list[int]) -> tuple[list[int], list[int]]:
    """index_dims: the indexed dims' sizes, -1, then the shape the indices are read in."""
    cut = index_dims.index(-1) if -1 in index_dims else len(index_dims)
    return index_dims[:cut], index_dims[cut + 1:]


def _broadcasts_to(shape: list[int], dims: list[int]) -> bool:
    return len(shape) <= len(dims) and all(s in (1, d) or -1 in (s, d) for s, d in zip(shape[::-1], dims[::-1]))


def _check_view(ctx, strides: list[int]) -> list[int]:
    """The checks the three ops share; returns input_dims."""
    op, dims, count = ctx.op.type, list(ctx.attr("input_dims")), len(ctx.op.input("index"))
    if -1 not in ctx.attr("index_dims"):
        ctx.fail(f"{op} index_dims {list(ctx.attr('index_dims'))} needs the sizes, -1, then the index shape")
    sizes, shape = split_index_dims(list(ctx.attr("index_dims")))
    if len(ctx.attr("input_strides")) != len(dims) or any(d < 0 for d in dims):
        ctx.fail(f"{op} needs input_dims {dims} and input_strides {list(ctx.attr('input_strides'))} of one "
                 "length, no dim negative")
    if count == 0 or not len(sizes) == len(strides) == count:
        ctx.fail(f"{op} needs one index size and stride per index tensor: {count} tensors, sizes {sizes}, "
                 f"strides {strides}")
    if any(ctx.dtype("index", i) != VarType.INT64 for i in range(count)):
        ctx.fail(f"{op} needs int64 index tensors")
    size = DTYPE_BYTES.get(ctx.dtype("x"))
    if size is None:
        ctx.fail(f"{op} of {dtype_name(ctx.dtype('x'))}: gradc knows no byte size of it")
    if any(b % size for b in [ctx.attr("slice_offset"), *strides]):
        ctx.fail(f"{op} slice_offset {ctx.attr('slice_offset')} and index strides {strides} must be whole "
                 f"{dtype_name(ctx.dtype('x'))} elements (they count bytes)")
    if not _broadcasts_to(shape, dims):
        ctx.fail(f"{op} index shape {shape} does not broadcast to input_dims {dims}")
    for i, index in enumerate(ctx.shapes("index")):
        if -1 not in index and numel(index) != numel(shape):
            ctx.fail(f"{op} index {i} {index} does not hold the {numel(shape)} elements of {shape}")
    return dims


def _get_infer(ctx):
    return {"Out": (_check_view(ctx, list(ctx.attr("index_stride"))), ctx.dtype("x"))}


def _put_infer(ctx, value: str, out: str):
    dims = _check_view(ctx, list(ctx.attr("index_strides")))
    if ctx.op.input(value) and not _broadcasts_to(ctx.shape(value), dims):
        ctx.fail(f"{ctx.op.type} {value} {ctx.shape(value)} does not broadcast to input_dims {dims}")
    if ctx.op.input(value) and ctx.dtype(value) != ctx.dtype("x"):
        ctx.fail(f"{ctx.op.type} needs {value} of x's dtype")
    return {out: (ctx.shape("x"), ctx.dtype("x"))}


defop("index_elementwise_get", ["x", "index[]"], ["Out"], attrs=GET_ATTRS, infer=_get_infer,
      no_grad_inputs=["index"], grad=grad_op("x", "index"))
defop("index_elementwise_put", ["x", "index[]", "ValueTensor?"], ["out"], attrs={**PUT_ATTRS, "value": 0.0},
      infer=lambda ctx: _put_infer(ctx, "ValueTensor", "out"), no_grad_inputs=["index", "ValueTensor"],
      grad=grad_op("x", "index"))
defop("index_elementwise_put_with_tensor", ["x", "index[]", "value"], ["Out"], attrs=PUT_ATTRS,
      infer=lambda ctx: _put_infer(ctx, "value", "Out"), no_grad_inputs=["index"], grad=grad_op("x", "index", "value"))
