"""Paddle's point-to-point ops, as the stages of a pipeline-parallel job hold them (PipelineOptimizer: one ring a
pair of stages and a direction). ``peer`` is the other rank's place in the ring's group:

    send_v2 / p_send: X goes to the peer            recv_v2 / p_recv: Out is what the peer sent (out_shape, dtype)
    partial_send: the id-th of num equal parts of X, flattened, goes to the peer
    partial_recv: Out (out_shape) holds the part the peer sent at the id-th of num parts, zeros elsewhere
    partial_allgather: Out = X with part r of nranks (flattened) taken from rank r of the group
    nop: Out = X (a marker the pipeline pass leaves where a stage's backward starts)

None has a gradient, as in Paddle (its pipeline pass writes the backward's sends and receives itself).
"""

from __future__ import annotations

from ..ir import AttrType
from ..opdef import typed
from ..registry import NO_GRAD, defop

PEER = {"ring_id": 0, "peer": 0}
SHAPED = {"dtype": 5, "out_shape": typed([], AttrType.INTS)}   # FP32, and out_shape [] when dynamic_shape says so
PARTS = {"num": 1, "id": 0}


def _nothing(ctx):
    return {}


def _parts(ctx):
    if not 0 <= ctx.attr("id") < ctx.attr("num"):
        ctx.fail(f"{ctx.op.type} needs 0 <= id < num, got id {ctx.attr('id')} of num {ctx.attr('num')}")
    return {}


def _received(slot: str):
    def infer(ctx):
        if "num" in ctx.op.attrs or ctx.op.type == "partial_recv":
            _parts(ctx)
        shape = list(ctx.attr("out_shape"))
        dynamic = ctx.op.attrs.get("dynamic_shape", False)
        return {slot: (None if dynamic or not shape else shape, ctx.attr("dtype"))}
    return infer


def _gathered(ctx):
    rank, nranks = ctx.attr("rank"), ctx.attr("nranks")
    if nranks < 1 or not 0 <= rank < nranks:
        ctx.fail(f"partial_allgather needs 0 <= rank < nranks, got rank {rank} of nranks {nranks}")
    return {"Out": (ctx.shape("X"), ctx.dtype("X"))}


defop("send_v2", ["X"], [], attrs={**PEER, "use_calc_stream": False, "dynamic_shape": False}, infer=_nothing,
      grad=NO_GRAD)
defop("recv_v2", [], ["Out"], attrs={**PEER, **SHAPED, "use_calc_stream": False, "dynamic_shape": False},
      infer=_received("Out"), grad=NO_GRAD)
defop("p_send", ["x"], [], attrs={**PEER, "dynamic_shape": False}, infer=_nothing, grad=NO_GRAD)
defop("p_recv", [], ["out"], attrs={**PEER, **SHAPED, "dynamic_shape": False}, infer=_received("out"), grad=NO_GRAD)
defop("partial_send", ["X"], [], attrs={**PEER, **PARTS}, infer=_parts, grad=NO_GRAD)
defop("partial_recv", [], ["Out"], attrs={**PEER, **SHAPED, **PARTS}, infer=_received("Out"), grad=NO_GRAD)
defop("partial_allgather", ["X"], attrs={"ring_id": 0, "rank": 0, "nranks": 1}, infer=_gathered, grad=NO_GRAD)
defop("nop", ["X[]"], ["Out[]"],
      infer=lambda ctx: {"Out": [(ctx.shape("X", i), ctx.dtype("X", i)) for i in range(len(ctx.op.input("X")))]},
      grad=NO_GRAD)
