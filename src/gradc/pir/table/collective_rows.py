"""Rows: Paddle's collective ops (gradc.ops.collective), names as Paddle 3.3.1's translator writes them
(tools/paddle_tensor_parallel.py prints them), with the in-place variants Paddle's PIR API appends; and 3.3.1's
reduce, c_scatter and all_to_all (gradc.ops.collective_v2; tools/paddle_pipeline.py translates them); auto-parallel's
dist_op.reshard (gradc.ops.reshard)."""

from __future__ import annotations

from . import row

STREAM = "use_calc_stream:bool use_model_parallel:bool"
GROUP = "rank:i32 nranks:i32 ring_id:i32"


def _both(pir: str, legacy: str, attrs: str, operand: str = "x:X", result: str = "out:Out") -> list:
    """The op and its in-place form (``pir_``), whose result is its operand's var."""
    slot = result.split(":")[1]
    return [row(pir, legacy, operand, result, attrs),
            row(f"{pir}_", legacy, operand, f"{result.split(':')[0]}:{slot}&{operand.split(':')[0]}", attrs)]


ROWS = [
    *_both("pd_op.c_identity", "c_identity", f"ring_id:i32 {STREAM}"),
    *_both("pd_op.mp_allreduce_sum", "mp_allreduce_sum", "ring_id:i32"),
    *_both("pd_op.c_allreduce_sum", "c_allreduce_sum", f"ring_id:i32 {STREAM}"),
    *_both("pd_op.all_reduce", "all_reduce", "ring_id:i32 reduce_type:i32", "x:x", "out:out"),
    *_both("pd_op.broadcast", "broadcast", "ring_id:i32 root:i32", "x:x", "out:out"),
    row("pd_op.c_split", "c_split", "x:X", "out:Out", f"{GROUP} use_model_parallel:bool"),
    row("pd_op.c_concat", "c_concat", "x:X", "out:Out", f"{GROUP} {STREAM}"),
    row("pd_op.all_gather", "all_gather", "x:x", "out:out", "ring_id:i32 nranks:i32"),
    row("pd_op.reduce_scatter", "reduce_scatter", "x:x", "out:out", "ring_id:i32 nranks:i32"),
    *_both("pd_op.reduce", "reduce", "ring_id:i32 reduce_type:i32 root_id:i32", "x:x", "out:out"),
    row("pd_op.c_scatter", "c_scatter", "x:X", "out:Out", "ring_id:i32 root:i32 nranks:i32 use_calc_stream:bool"),
    row("pd_op.all_to_all", "all_to_all", "x:x", "out:out", "ring_id:i32"),
    row("pd_op.barrier", "barrier", "x:X", "out:Out", "ring_id:i32"),
    *_both("pd_op.sync_calc_stream", "c_sync_calc_stream", ""),
    row("pd_op.sync_comm_stream_", "c_sync_comm_stream", "x:X*", "out:Out*&x", "ring_id:i32"),
    row("pd_op.c_embedding", "c_embedding", "weight:W x:Ids", "out:Out", "start_index:i64 vocab_size:i64=-1"),
    row("pd_op.c_embedding_grad", "c_embedding_grad", "weight:W x:Ids out_grad:Out@GRAD", "weight_grad:W@GRAD",
        "start_index:i64"),
    row("pd_op.c_softmax_with_cross_entropy", "c_softmax_with_cross_entropy", "logits:Logits label:Label",
        "softmax:Softmax loss:Loss", f"ignore_index:i64=-100 {GROUP}"),
    # Paddle 3.3.1 builds no PIR program with its grad op (its PIR backward fails to type loss_grad)
    row("pd_op.c_softmax_with_multi_label_cross_entropy", "c_softmax_with_multi_label_cross_entropy",
        "logits:Logits label:Label smooth_weight:SmoothWeight", "softmax:Softmax loss:Loss",
        f"ignore_index:i64=-100 sum_multi_label_loss:bool=true {GROUP}"),
    *_both("pd_op.c_softmax_with_cross_entropy_grad", "c_softmax_with_cross_entropy_grad",
           f"ignore_index:i64=-100 {GROUP}", "softmax:Softmax label:Label loss_grad:Loss@GRAD",
           "logits_grad:Logits@GRAD"),
    row("dist_op.reshard", "reshard", "x:x", "out:out", ""),   # its placements: the op_dist_attr every dist op carries
]
