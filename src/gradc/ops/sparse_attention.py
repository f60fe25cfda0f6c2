"""sparse_attention (paddle.nn.functional.sparse_attention; a CUDA kernel only): attention over the entries of a CSR
layout, per batch b and head h of Q, K, V [b, h, s, d]: row i attends to the keys Columns[b, h, Offset[b, h, i] ..
Offset[b, h, i + 1]] (Offset [b, h, s + 1], Columns [b, h, nnz], int32). SparseDotSdd [b, h, nnz] holds each entry's
q_i . k_j, Softmax [b, h, nnz] its probability over the row's entries of SparseDotSdd / sqrt(d) (1 / sqrt(d) in q's
dtype, as the kernel's T), Out [b, h, s, d] = Softmax . V. An entry is masked (probability 0) where
KeyPaddingMask [b, s] at its key or AttnMask [s, s] at (row, key) is 0 (|value| < the dtype's epsilon, as the
kernel tests it); other mask values are not added. A row whose every entry is masked is 0 (the kernel's softmax of
all -inf gives NaN). The grad op reads Softmax (not the masks), as Paddle's; its second derivative is gradc's
(gradc.ops.sparse_attention_double: the layout read at run time by one-hot matrices)."""

from __future__ import annotations

from ..ir import VarType, dtype_name
from ..registry import defop, grad_op
from .infer import check_float, one_dtype


def _infer(ctx):
    check_float(ctx, "Q")
    one_dtype(ctx, "Q", "K", "V", *(slot for slot in ("KeyPaddingMask", "AttnMask") if ctx.has(slot)))
    for slot in ("Offset", "Columns"):
        if ctx.dtype(slot) not in (None, VarType.INT32):
            ctx.fail(f"{slot} must be int32 (the kernel reads ints), got {dtype_name(ctx.dtype(slot))}")
    q, k, v, offset, columns = (ctx.shape(slot) for slot in ("Q", "K", "V", "Offset", "Columns"))
    if q is None:
        return {"Out": (None, ctx.dtype("Q"))}
    if len(q) != 4 or any(x is not None and x != q for x in (k, v)):
        ctx.fail(f"Q, K and V must be one shape [batch, heads, seq_len, head_dim], got {q}, {k}, {v}")
    if offset is not None and (len(offset) != 3 or offset[:2] != q[:2] or offset[2] not in (q[2] + 1, -1)):
        ctx.fail(f"Offset must be [batch, heads, seq_len + 1] = {[*q[:2], q[2] + 1]}, got {offset}")
    if columns is not None and (len(columns) != 3 or columns[:2] != q[:2]):
        ctx.fail(f"Columns must be [batch, heads, nnz] with Q's batch and heads {q[:2]}, got {columns}")
    for slot, want in (("KeyPaddingMask", [q[0], q[2]]), ("AttnMask", [q[2], q[2]])):
        mask = ctx.shape(slot) if ctx.has(slot) else None
        if mask is not None and mask != want:
            ctx.fail(f"{slot} must be {want}, got {mask}")
    nnz = [*q[:2], columns[2] if columns is not None else -1]
    return {"Out": (q, ctx.dtype("Q")), "SparseDotSdd": (nnz, ctx.dtype("Q")), "Softmax": (nnz, ctx.dtype("Q"))}


defop("sparse_attention", ["Q", "K", "V", "Offset", "Columns", "KeyPaddingMask?", "AttnMask?"],
      ["Out", "SparseDotSdd", "Softmax"], infer=_infer,
      no_grad_inputs=["Offset", "Columns", "KeyPaddingMask", "AttnMask"], no_grad_outputs=["SparseDotSdd", "Softmax"],
      grad=grad_op("Q", "K", "V", "Offset", "Columns", "SparseDotSdd", "Softmax"))
