"""Rows: paddle.geometric's message passing and segment reductions (gradc.ops.graph)."""

from __future__ import annotations

from . import row

EDGES = "src_index:Src_index dst_index:Dst_index"
REDUCE = "reduce_op:str=SUM"
MESSAGE = "message_op:str=ADD"
# PIR's out_size is an operand: a constant becomes the legacy attribute, a computed value the Out_size tensor
OUT_SIZE = "out_size>out_size:ints@Out_size"

ROWS = [
    row("pd_op.send_u_recv", "graph_send_recv", f"x:X {EDGES} {OUT_SIZE}", "out:Out dst_count:Dst_count", REDUCE),
    row("pd_op.send_u_recv_grad", "graph_send_recv_grad",
        f"x:X {EDGES} out?:Out dst_count?:Dst_count out_grad:Out@GRAD", "x_grad:X@GRAD", REDUCE),
    row("pd_op.send_ue_recv", "graph_send_ue_recv", f"x:X y:Y {EDGES} {OUT_SIZE}", "out:Out dst_count:Dst_count",
        f"{MESSAGE} {REDUCE}"),
    row("pd_op.send_ue_recv_grad", "graph_send_ue_recv_grad",
        f"x:X y:Y {EDGES} out?:Out dst_count?:Dst_count out_grad:Out@GRAD", "x_grad:X@GRAD y_grad:Y@GRAD",
        f"{MESSAGE} {REDUCE}"),
    row("pd_op.send_uv", "graph_send_uv", "x:x y:y src_index:src_index dst_index:dst_index", "out:out", MESSAGE),
    row("pd_op.send_uv_grad", "graph_send_uv_grad", "x:x y:y src_index:src_index dst_index:dst_index out_grad:out@GRAD",
        "x_grad:x@GRAD y_grad:y@GRAD", MESSAGE),
    row("pd_op.segment_pool", "segment_pool", "x:X segment_ids:SegmentIds", "out:Out summed_ids:SummedIds",
        "pooltype:str=SUM"),
    row("pd_op.segment_pool_grad", "segment_pool_grad",
        "x:X segment_ids:SegmentIds out:Out summed_ids?:SummedIds out_grad:Out@GRAD", "x_grad:X@GRAD",
        "pooltype:str=SUM"),
]
