"""Neighbour sampling on a graph in CSC form (paddle.geometric): node v's in-neighbours are
Row[ColPtr[v]:ColPtr[v + 1]].
graph_sample_neighbors draws up to sample_size of each input node's neighbours uniformly without replacement (all
of them, in order, when it has no more), weighted_sample_neighbors draws them with probabilities proportional to
edge_weight (successively, without replacement), and graph_reindex renumbers a sampled subgraph: the input nodes
first, then each new neighbour in order of first appearance. graph_khop_sampler (paddle.incubate) samples hop after
hop (each hop from the nodes the last one reached anew) and renumbers the edges it sampled. None is differentiable
(node ids).

Perm_Buffer / flag_perm_buffer and graph_reindex's HashTable_* inputs are buffers of Paddle's GPU kernels, which its
CPU kernels ignore too. sample_size -1 takes every neighbour (Paddle 3.3.1 documents it; its CPU kernel aborts).
"""

from __future__ import annotations

from ..ir import VarType, dtype_name
from ..ir.types import INTEGER_DTYPES
from ..registry import NO_GRAD, defop
from .infer import check_float, one_dtype


def _check_ids(ctx, *slots: str) -> None:
    """Node ids and offsets: vectors of one integer dtype."""
    for slot in slots:
        shape, dtype = ctx.shape(slot), ctx.dtype(slot)
        if dtype is not None and dtype not in (VarType.INT32, VarType.INT64):
            ctx.fail(f"{ctx.op.type} needs int32 or int64 {slot}, got {dtype_name(dtype)}")
        if shape is not None and len(shape) != 1:
            ctx.fail(f"{ctx.op.type} needs {slot} of rank 1, got {shape}")
    one_dtype(ctx, *slots)


def _sampled(ctx, row: str, colptr: str, nodes: str, eids: str, outs: tuple[str, str, str], weight: str = ""):
    _check_ids(ctx, row, colptr, nodes, *[eids] * ctx.has(eids))
    if weight:
        check_float(ctx, weight)
    if ctx.attr("sample_size") < -1 or ctx.attr("sample_size") == 0:
        ctx.fail(f"{ctx.op.type} needs sample_size >= 1 (or -1: every neighbour), got {ctx.attr('sample_size')}")
    if ctx.attr("return_eids") and not ctx.has(eids):
        ctx.fail(f"{ctx.op.type} with return_eids needs the edge ids {eids}")
    ids = ctx.dtype(row)
    # the edge ids are written only with return_eids; otherwise Paddle declares them anyhow (PIR: float32 [])
    unwritten = (None, None)
    return {outs[0]: ([-1], ids), outs[1]: (ctx.shape(nodes), VarType.INT32),
            outs[2]: ([-1], ctx.dtype(eids) if ctx.has(eids) else ids) if ctx.attr("return_eids") else unwritten}


defop("graph_sample_neighbors", ["Row", "Col_Ptr", "X", "Eids?", "Perm_Buffer?"], ["Out", "Out_Count", "Out_Eids"],
      attrs={"sample_size": -1, "return_eids": False, "flag_perm_buffer": False},
      infer=lambda ctx: _sampled(ctx, "Row", "Col_Ptr", "X", "Eids", ("Out", "Out_Count", "Out_Eids")),
      grad=NO_GRAD)
defop("weighted_sample_neighbors", ["row", "colptr", "edge_weight", "input_nodes", "eids?"],
      ["out_neighbors", "out_count", "out_eids"], attrs={"sample_size": -1, "return_eids": False},
      infer=lambda ctx: _sampled(ctx, "row", "colptr", "input_nodes", "eids",
                                 ("out_neighbors", "out_count", "out_eids"), weight="edge_weight"),
      grad=NO_GRAD)


def _reindex_infer(ctx):
    _check_ids(ctx, "X", "Neighbors")
    count = ctx.dtype("Count")
    if count is not None and count not in INTEGER_DTYPES:
        ctx.fail(f"graph_reindex needs integer Count, got {dtype_name(count)}")
    ids = ctx.dtype("X")
    return {"Reindex_Src": (ctx.shape("Neighbors"), ids), "Reindex_Dst": (ctx.shape("Neighbors"), ids),
            "Out_Nodes": ([-1], ids)}


defop("graph_reindex", ["X", "Neighbors", "Count", "HashTable_Value?", "HashTable_Index?"],
      ["Reindex_Src", "Reindex_Dst", "Out_Nodes"], infer=_reindex_infer, grad=NO_GRAD)


def _khop_infer(ctx):
    _check_ids(ctx, "Row", "Col_Ptr", "X", *["Eids"] * ctx.has("Eids"))
    sizes = list(ctx.attr("sample_sizes"))
    if not sizes or any(size < 1 for size in sizes):
        ctx.fail(f"graph_khop_sampler needs a sample size >= 1 per hop, got {sizes}")
    if ctx.attr("return_eids") and not ctx.has("Eids"):
        ctx.fail("graph_khop_sampler with return_eids needs the edge ids Eids")
    ids = ctx.dtype("Row")
    # Sample_Index holds Row's ids, whatever the program declares (Paddle declares it int32)
    return {"Out_Src": ([-1, 1], ids), "Out_Dst": ([-1, 1], ids), "Sample_Index": ([-1], None),
            "Reindex_X": (ctx.shape("X"), ids), "Out_Eids": ([-1], ids) if ctx.attr("return_eids") else (None, None)}


defop("graph_khop_sampler", ["Row", "Col_Ptr", "X", "Eids?"],
      ["Out_Src", "Out_Dst", "Sample_Index", "Reindex_X", "Out_Eids"],
      attrs={"sample_sizes": [], "return_eids": False}, infer=_khop_infer, grad=NO_GRAD,
      kernel_dtype_outputs=["Sample_Index"])
