"""The temporaries of the graph and index-placing kernels for the memory estimate (gradc.memory): gradc's numpy
kernels for graph_send_recv, graph_send_ue_recv, graph_send_uv and segment_pool gather a row per edge (per
segment id) and scatter back, and put_along_axis works on flat positions of its Index, so what they allocate grows
with the edges or the index, not with what they write (Out has a row per node)."""

from __future__ import annotations

# op type -> reduce op -> (bytes per edge, multiples of an edge's message row): a kernel's peak above its inputs
# and outputs, measured with tracemalloc at 200,000 edges and message rows of 4 and 16 float32 (docs/tools.md, a
# graph-learning researcher's week); the bytes per edge are the index copies, counts and the extremes' masks.
_SUM_MEAN_EXTREME = ("SUM", "MEAN", "MAX")
GRAPH_SCRATCH = {op_type: dict(zip(_SUM_MEAN_EXTREME, costs)) for op_type, costs in {
    "graph_send_recv": ((17, 1.0), (16, 1.3), (25, 1.0)),
    "graph_send_recv_grad": ((16, 1.2), (28, 1.9), (33, 2.9)),
    "graph_send_ue_recv": ((17, 2.0), (16, 2.3), (25, 2.0)),
    "graph_send_ue_recv_grad": ((16, 3.0), (16, 3.0), (40, 6.9)),
    "graph_send_uv": ((16, 2.0),) * 3,
    "graph_send_uv_grad": ((16, 3.2),) * 3,
    "segment_pool": ((15, 0.0), (11, 0.3), (17, 0.0)),
    "segment_pool_grad": ((8, 1.0), (20, 1.0), (8, 1.3)),
}.items()}
# op type -> its temporaries in units of its Index's bytes (flat positions and their copies), measured likewise
INDEX_SCRATCH = {"put_along_axis": 3.1, "put_along_axis_grad": 3.1}
EDGE_SLOTS = ("Src_index", "src_index", "SegmentIds")
ROW_SLOTS = ("X", "Y", "x", "y")


def graph_workspace(op, dims, var_bytes) -> int | None:
    """The temporaries of a graph or index-placing op (None for another op): edges x (bytes per edge + factor x
    the widest message row's bytes), or INDEX_SCRATCH times the Index's bytes. ``dims(name)`` gives a var's dims
    and ``var_bytes(name)`` its size, unknown dims resolved as the estimate resolves them."""
    if op.type in INDEX_SCRATCH:
        return int(INDEX_SCRATCH[op.type] * sum(var_bytes(name) or 0 for name in op.input("Index")))
    if op.type not in GRAPH_SCRATCH:
        return None
    reduce_op = str(op.attrs.get("reduce_op", op.attrs.get("pooltype", "SUM"))).upper()
    per_edge, per_row = GRAPH_SCRATCH[op.type]["MAX" if reduce_op == "MIN" else reduce_op]
    index = next((op.input(slot)[0] for slot in EDGE_SLOTS if op.input(slot)), None)
    edges = (dims(index) or [0])[0] if index else 0
    row = max([(var_bytes(name) or 0) // max(shape[0], 1)
               for slot in ROW_SLOTS for name in op.input(slot) if (shape := dims(name))] or [0])
    return int(edges * (per_edge + per_row * row)) if edges > 0 else 0
