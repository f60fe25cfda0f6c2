"""Paddle's collective ops, as one rank of a tensor-parallel job holds them (paddle.distributed.fleet.layers.mpu:
ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding, ParallelCrossEntropy). A group of nranks ranks
(ring_id selects it); rank r holds a shard of each split tensor:

    c_identity: Out = X                          mp_allreduce_sum / c_allreduce_sum / all_reduce: Out = sum over ranks
    c_split: Out = X's r-th of nranks chunks along the last axis   c_concat: the ranks' X side by side (last axis)
    all_gather: the ranks' x stacked along axis 0                  reduce_scatter: the r-th chunk (axis 0) of the sum
    c_embedding: W's row id - start_index, zeros for ids outside the rows W holds
    c_softmax_with_cross_entropy: softmax cross entropy over the class axis split across the ranks (Label global)
    c_softmax_with_multi_label_cross_entropy: the same for several labels a row, each loss weighted (SmoothWeight)
    broadcast (root's x), barrier, c_sync_calc_stream, c_sync_comm_stream: Out = X

Gradients, as Paddle's makers write them (legacy core.get_grad_op_desc, checked on 3.3.1), where the replicated
loss counts once: c_identity -> all_reduce (sum), mp_allreduce_sum -> c_identity, c_concat -> c_split, c_embedding
-> c_embedding_grad, c_softmax_with_cross_entropy -> its grad op. Where Paddle's is wrong or missing, gradc gives the
adjoint: c_split -> c_concat (Paddle's maker writes an all_gather with slots X/Out that its proto does not have:
append_backward fails), all_reduce / c_allreduce_sum (sum) -> c_identity (as mp_allreduce_sum), all_gather <->
reduce_scatter (the pair of paddle.distributed.fleet.utils.sequence_parallel_utils), broadcast -> reduce (sum) to
root (gradc.ops.collective_v2). barrier and the sync ops have no gradient, as in Paddle.
"""

from __future__ import annotations

from ..errors import GradError
from ..ir import EMPTY_VAR, FLOAT_DTYPES, AttrType, VarType
from ..opdef import typed
from ..registry import NO_GRAD, GradOp, defop, grad_op
from .composite import Formula
from .infer import same_as

STREAM = {"use_calc_stream": True, "use_model_parallel": True}
GROUP = {"rank": 0, "nranks": 1, "ring_id": 0}   # Paddle's defaults; c_softmax_with_cross_entropy's nranks is 0
REDUCE_TYPES = {0: "sum", 1: "max", 2: "min", 3: "prod", 4: "avg"}   # all_reduce's reduce_type: Paddle's ReduceType
SUM = 0


def _group(ctx) -> tuple[int, int]:
    rank, nranks = ctx.attr("rank"), ctx.attr("nranks")
    if nranks < 1 or not 0 <= rank < nranks:
        ctx.fail(f"{ctx.op.type} needs 0 <= rank < nranks, got rank {rank} of nranks {nranks}")
    return rank, nranks


def nranks_of(ctx) -> int:
    if ctx.attr("nranks") < 1:
        ctx.fail(f"{ctx.op.type} needs nranks >= 1, got {ctx.attr('nranks')}")
    return ctx.attr("nranks")


def _scaled_axis(axis: int, divide: bool):
    """Inference of an op that splits (divide) or joins ``axis`` of X by the group's nranks."""
    def infer(ctx):
        slot = "X" if ctx.op.inputs.get("X") else "x"
        x, nranks = ctx.shape(slot), _group(ctx)[1] if ctx.op.type.startswith("c_") else nranks_of(ctx)
        out = "Out" if slot == "X" else "out"
        if x is None:
            return {out: (None, ctx.dtype(slot))}
        if not x:
            ctx.fail(f"{ctx.op.type} needs a tensor of rank >= 1, got a 0-d {slot}")
        shape, dim = list(x), axis % len(x)
        if divide and shape[dim] >= 0 and shape[dim] % nranks:
            ctx.fail(f"{ctx.op.type} splits dim {dim} of {slot} {x} into nranks={nranks} equal parts")
        if shape[dim] >= 0:
            shape[dim] = shape[dim] // nranks if divide else shape[dim] * nranks
        return {out: (shape, ctx.dtype(slot))}
    return infer


def _c_split_grad(g):
    return [g.op("c_concat", {"X": g.OG("Out")}, {"Out": g.IG("X")},
                 {**{name: g.attr(name) for name in GROUP}, "use_calc_stream": True, "use_model_parallel": True})]


def _c_concat_grad(g):
    return [g.op("c_split", {"X": g.OG("Out")}, {"Out": g.IG("X")},
                 {**{name: g.attr(name) for name in GROUP}, "use_calc_stream": True, "use_model_parallel": True})]


def _c_identity_grad(g):
    return [g.op("all_reduce", {"x": g.OG("Out")}, {"out": g.IG("X")},
                 {"ring_id": g.attr("ring_id"), "reduce_type": SUM})]


def _allreduce_grad(g):
    """The grad of a sum over the ranks of a replicated loss's partial terms: each rank's X gets dOut."""
    x, out = ("X", "Out") if g.fwd.inputs.get("X") else ("x", "out")
    if g.fwd.type == "all_reduce" and g.attr("reduce_type") != SUM:
        raise GradError(f"all_reduce with reduce_type {g.attr('reduce_type')}: gradc differentiates the sum "
                        f"(reduce_type 0) only; Paddle writes no grad op for any")
    return [g.op("c_identity", {"X": g.OG(out)}, {"Out": g.IG(x)},
                 {"ring_id": g.attr("ring_id"), "use_calc_stream": True, "use_model_parallel": True})]


def _gather_pair(grad_type: str):
    def maker(g):
        return [g.op(grad_type, {"x": g.OG("out")}, {"out": g.IG("x")},
                     {"ring_id": g.attr("ring_id"), "nranks": g.attr("nranks")})]
    return maker


defop("c_identity", ["X"], attrs={"ring_id": 0, **STREAM}, infer=same_as("X"), grad=_c_identity_grad)
defop("mp_allreduce_sum", ["X"], attrs={"ring_id": 0}, infer=same_as("X"), grad=_allreduce_grad)
defop("c_allreduce_sum", ["X"], attrs={"ring_id": 0, **STREAM}, infer=same_as("X"), grad=_allreduce_grad)
def _all_reduce_infer(ctx):
    if ctx.attr("reduce_type") not in REDUCE_TYPES:
        ctx.fail(f"reduce_type {ctx.attr('reduce_type')} is none of {REDUCE_TYPES} (Paddle's ReduceType)")
    return {"out": (ctx.shape("x"), ctx.dtype("x"))}


defop("all_reduce", ["x"], ["out"], attrs={"ring_id": 0, "reduce_type": SUM}, infer=_all_reduce_infer,
      grad=_allreduce_grad)
defop("c_split", ["X"], attrs={**GROUP, "use_model_parallel": True}, infer=_scaled_axis(-1, divide=True),
      grad=_c_split_grad)
defop("c_concat", ["X"], attrs={**GROUP, **STREAM}, infer=_scaled_axis(-1, divide=False), grad=_c_concat_grad)
defop("all_gather", ["x"], ["out"], attrs={"ring_id": 0, "nranks": 0}, infer=_scaled_axis(0, divide=False),
      grad=_gather_pair("reduce_scatter"))
defop("reduce_scatter", ["x"], ["out"], attrs={"ring_id": 0, "nranks": 1}, infer=_scaled_axis(0, divide=True),
      grad=_gather_pair("all_gather"))
def _broadcast_grad(g):
    """root's x gets the sum of every rank's dout (reduce to root, in gradc.ops.collective_v2), the others zero."""
    return [g.op("reduce", {"x": g.OG("out")}, {"out": g.IG("x")},
                 {"ring_id": g.attr("ring_id"), "reduce_type": SUM, "root_id": g.attr("root")})]


defop("broadcast", ["x"], ["out"], attrs={"ring_id": 0, "root": 0}, infer=same_as("x", "out"), grad=_broadcast_grad)
defop("barrier", ["X"], attrs={"ring_id": 0}, infer=same_as("X"), grad=NO_GRAD)
defop("c_sync_calc_stream", ["X"], infer=same_as("X"), grad=NO_GRAD)
defop("c_sync_comm_stream", ["X[]"], ["Out[]"], attrs={"ring_id": 0},
      infer=lambda ctx: {"Out": [(ctx.shape("X", i), ctx.dtype("X", i)) for i in range(len(ctx.op.input("X")))]},
      grad=NO_GRAD)


def _check_ids(ctx, slot: str) -> None:
    if ctx.dtype(slot) not in (None, VarType.INT32, VarType.INT64):
        ctx.fail(f"{ctx.op.type} needs int32 or int64 {slot}")


def _c_embedding_infer(ctx):
    _check_ids(ctx, "Ids")
    w, ids = ctx.shape("W"), ctx.shape("Ids")
    if w is not None and len(w) != 2:
        ctx.fail(f"c_embedding needs a 2-D W [rows, width], got {w}")
    if ctx.attr("start_index") < 0:
        ctx.fail(f"c_embedding needs start_index >= 0, got {ctx.attr('start_index')}")
    return {"Out": (None if w is None or ids is None else [*ids, w[1]], ctx.dtype("W"))}


VOCAB = {"start_index": typed(0, AttrType.LONG), "vocab_size": typed(-1, AttrType.LONG)}
defop("c_embedding", ["W", "Ids"], attrs=VOCAB, infer=_c_embedding_infer, no_grad_inputs=["Ids"],
      grad=grad_op("W", "Ids"))


def _c_softmax_ce_infer(ctx):
    _check_ids(ctx, "Label")
    _group(ctx)
    logits, label = ctx.shape("Logits"), ctx.shape("Label")
    if ctx.dtype("Logits") not in (None, *FLOAT_DTYPES):
        ctx.fail(f"{ctx.op.type} needs float Logits")
    if logits is None:
        return {"Softmax": (None, ctx.dtype("Logits")), "Loss": (None, ctx.dtype("Logits"))}
    if not logits:
        ctx.fail(f"{ctx.op.type} needs Logits [..., classes of this rank], got a 0-d tensor")
    loss = [*logits[:-1], 1]
    if label is not None and label not in (loss, logits[:-1]) and not (
            len(label) == len(loss) and all(a < 0 or b < 0 or a == b for a, b in zip(label, loss))):
        ctx.fail(f"{ctx.op.type} needs Label {loss} (a class id per row), got {label}")
    return {"Softmax": (logits, ctx.dtype("Logits")), "Loss": (loss, ctx.dtype("Logits"))}


class _SoftmaxCrossEntropyGrad(GradOp):
    """Paddle's grad op, which reads Loss@GRAD only; a gradient of Softmax (a second derivative reaching it through
    that grad op) flows back to Logits through the softmax: dS S - S sum(dS S), the sum over every rank's classes."""

    def __call__(self, g):
        ops = super().__call__(g)
        softmax, wanted = g.O("Softmax")[0], g.IG("Logits")
        if g.wants(softmax) and wanted != [EMPTY_VAR]:
            f = Formula(g)
            weighted = f.mul(g.grad_of(softmax), softmax, softmax)
            total = f.op("all_reduce", {"x": f.sum_along(weighted, -1)}, softmax, {"ring_id": g.attr("ring_id")},
                         slot="out", dims=lambda shape: [*shape[:-1], 1])
            f.into(wanted[0], "elementwise_sub", {"X": weighted, "Y": f.mul(softmax, total, softmax)})
            ops += f.ops
        return ops


defop("c_softmax_with_cross_entropy", ["Logits", "Label"], ["Softmax", "Loss"],
      attrs={"ignore_index": typed(-100, AttrType.LONG), **GROUP, "nranks": 0}, infer=_c_softmax_ce_infer,
      no_grad_inputs=["Label"], no_grad_outputs=["Softmax"], grad=_SoftmaxCrossEntropyGrad(("Softmax", "Label")))


def _multi_label_infer(ctx):
    _check_ids(ctx, "Label")
    _group(ctx)
    logits, label, weight = ctx.shape("Logits"), ctx.shape("Label"), ctx.shape("SmoothWeight")
    if logits is None or label is None:
        return {"Softmax": (logits, ctx.dtype("Logits")), "Loss": (None, ctx.dtype("Logits"))}
    if not logits or len(label) != len(logits) or any(a >= 0 and b >= 0 and a != b
                                                      for a, b in zip(label[:-1], logits[:-1])):
        ctx.fail(f"{ctx.op.type} needs Label [{', '.join(map(str, logits[:-1]))}, labels], got {label}")
    if weight is not None and weight != label:
        ctx.fail(f"{ctx.op.type} needs SmoothWeight of Label's shape {label}, got {weight}")
    loss = [*logits[:-1], 1 if ctx.attr("sum_multi_label_loss") else label[-1]]
    return {"Softmax": (logits, ctx.dtype("Logits")), "Loss": (loss, ctx.dtype("Logits"))}


# SmoothWeight gets no gradient, as in Paddle (its grad op writes Logits' only)
defop("c_softmax_with_multi_label_cross_entropy", ["Logits", "Label", "SmoothWeight"], ["Softmax", "Loss"],
      attrs={"ignore_index": typed(-100, AttrType.LONG), **GROUP, "nranks": 0, "sum_multi_label_loss": True},
      infer=_multi_label_infer, no_grad_inputs=["Label", "SmoothWeight"], no_grad_outputs=["Softmax"],
      grad=_SoftmaxCrossEntropyGrad(("Softmax", "Label", "SmoothWeight")))
