"""Tensor arrays: vars of type DENSE_TENSOR_ARRAY (Paddle's LoDTensorArray), whose VarDesc holds the
element's dtype and dims. An array comes to exist at its first write; ``create_array`` only declares it.
Indices ``I`` are integer tensors of one element. Semantics (docs/rnn.md section 4):

- write_to_array: Out[I] = X, growing Out to I + 1 slots (the slots between stay unwritten); the other
  slots keep their values (a partial write).
- read_from_array: Out = X[I]. A slot never written is an error, except in the grad case, where X_W (the
  forward value the slot's grad belongs to) is given: then zeros shaped like X_W.
- lod_array_length: the number of slots, int64 [1].
- array_pop (PIR only: dy2static's list.pop): removes slot ``index`` (Python's negative indices) from the array in
  place (array_out is the array) and gives its value.
- slice_array (PIR only: dy2static's list[a:b]): a new array of the slots starts[0]:ends[0] (Python slicing).
- tensor_array_to_tensor: the slots stacked (use_stack) or concatenated on ``axis``; OutIndex holds each
  slot's size along ``axis`` (1 when stacking). A negative axis counts from the end of Out's rank.

Gradients, as Paddle's makers emit them: a write's is a read of the array's grad at the same index (zeros
where nothing reached that slot); a read's is a write of Out@GRAD into a fresh grad array. When one array
is read twice, each read writes its own grad array and the backward pass adds them up slot by slot (sum),
so a slot read twice gets both grads (Paddle overwrites: docs/rnn.md section 6). array_pop and slice_array have
none, as Paddle's (forward-only ops).
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import NO_GRAD, defop, grad_op


def _element(ctx):
    return {"Out": (ctx.shape("X"), ctx.dtype("X"))}


def _write_grad(g):
    """X@GRAD = (Out@GRAD)[I]: the array's grad at the slot X went to."""
    return [g.op("read_from_array", {"X": g.OG("Out"), "I": g.I("I"), "X_W": g.I("X")}, {"Out": g.IG("X")})]


def _read_grad(g):
    """X@GRAD = an array holding Out@GRAD at slot I; reads of one array add up through the backward's sum."""
    return [g.op("write_to_array", {"X": g.OG("Out"), "I": g.I("I")}, {"Out": g.IG("X")})]


def stack_axis(axis: int, rank: int, use_stack: bool, fail) -> int:
    """tensor_array_to_tensor's axis as an index of Out's dims (stacking adds one); ``fail`` if out of range."""
    out_rank = rank + 1 if use_stack else rank
    if not -out_rank <= axis < max(out_rank, 1):
        fail(f"axis {axis} is out of range for {'stacking' if use_stack else 'concatenating'} "
             f"slots of rank {rank}")
    return axis % max(out_rank, 1)


def _to_tensor_infer(ctx):
    dims = ctx.shape("X")
    use_stack = ctx.attr("use_stack")
    axis = stack_axis(ctx.attr("axis"), len(dims), use_stack, ctx.fail)
    out = dims[:axis] + [-1] + dims[axis:] if use_stack else dims[:axis] + [-1] + dims[axis + 1:]
    return {"Out": (out, ctx.dtype("X")), "OutIndex": (None, VarType.INT32)}   # Paddle declares [], fills it never


defop("write_to_array", ["X", "I"], no_grad_inputs=["I"], infer=_element, grad=_write_grad, partial_write=True)
defop("read_from_array", ["X", "I", "X_W?"], no_grad_inputs=["I", "X_W"], infer=_element, grad=_read_grad)
defop("lod_array_length", ["X"], no_grad_inputs=["X"], infer=lambda ctx: {"Out": ([1], VarType.INT64)},
      grad=NO_GRAD)
defop("tensor_array_to_tensor", ["X"], ["Out", "OutIndex"], attrs={"axis": 0, "use_stack": False},
      no_grad_outputs=["OutIndex"], infer=_to_tensor_infer, grad=grad_op("X"))


def _pop_infer(ctx):
    return {"array_out": (ctx.shape("array"), ctx.dtype("array")), "out": (ctx.shape("array"), ctx.dtype("array"))}


defop("array_pop", ["array"], ["array_out", "out"], attrs={"index": -1}, infer=_pop_infer, grad=NO_GRAD)
defop("slice_array", ["input", "starts", "ends"], ["out"], infer=lambda ctx: {"out": (ctx.shape("input"),
                                                                                   ctx.dtype("input"))},
      grad=NO_GRAD)
