"""Rows: Paddle's point-to-point ops (gradc.ops.pipeline), names as Paddle 3.3.1's translator writes them
(tools/paddle_pipeline.py: the stages' train.json and p2p_translated.json; p_send and p_recv have no PIR op), and
the in-place sum Paddle's pipeline pass accumulates gradients with."""

from __future__ import annotations

from . import row

PEER = "ring_id:i32 peer:i32"
RECEIVED = "dtype:dtype out_shape:i32s"


def first_of_inputs(legacy, op, ctx) -> None:
    """pd_op.add_n_ writes its sum into its first operand's buffer: the legacy sum's Out is that var alone."""
    first = legacy.outputs["Out"][0]
    legacy.outputs["Out"] = [first]
    ctx.bind(op.results[0], first)


ROWS = [
    row("pd_op.send_v2", "send_v2", "x:X", "", f"{PEER} use_calc_stream:bool dynamic_shape:bool"),
    row("pd_op.recv_v2", "recv_v2", "", "out:Out", f"{PEER} {RECEIVED} use_calc_stream:bool dynamic_shape:bool"),
    row("pd_op.partial_send", "partial_send", "x:X", "", f"{PEER} num:i32=1 id:i32"),
    row("pd_op.partial_recv", "partial_recv", "", "out:Out", f"{PEER} {RECEIVED} num:i32=1 id:i32"),
    row("pd_op.partial_allgather_", "partial_allgather", "x:X", "out:Out&x", "ring_id:i32 nranks:i32 rank:i32"),
    row("pd_op.nop_", "nop", "x:X", "out:Out&x"),
    row("pd_op.add_n_", "sum", "inputs:X*", "out:Out&inputs", hook=first_of_inputs),
]
