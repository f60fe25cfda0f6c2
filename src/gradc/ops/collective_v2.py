"""Paddle 2.x's c_ collectives (static sharding and data-parallel programs of 2.x hold them) and their Paddle 3.3.1
successors with a root or an exchange (gradc.ops.collective has the rest). A group of nranks ranks (ring_id):

    c_allgather: the ranks' X stacked along axis 0 (0-d X: a vector)   c_reducescatter: rank r's rows of the sum
    c_allreduce_max / _min / _prod: the reduction over the ranks
    c_reduce_sum / _max / _min / _prod, reduce (reduce_type): the reduction at rank root_id, zeros elsewhere
    c_broadcast: root's X at every rank                 c_scatter: the r-th of nranks row chunks of root's X
    all_to_all: chunk j (axis 0) of every rank's x goes to rank j, joined in rank order

Gradients, with the replicated loss counting once (as gradc.ops.collective's): c_reduce_sum -> c_broadcast from
root_id, as Paddle 2.x's maker (which copies root_id to c_broadcast, whose attribute is root: it broadcasts from
rank 0), and reduce (sum) -> broadcast from root_id; c_broadcast -> c_reduce_sum to root (root's X gets the sum of
the ranks' dOut, the others zero, since their X reaches no output); c_allgather <-> c_reducescatter (Paddle 2.x's
c_reducescatter maker writes c_allgather, unregistered); all_to_all -> all_to_all (the exchange undone). A rank's
zero output where root holds the reduction makes reduce and broadcast each other's adjoint. The max, min and prod
reductions refuse to be differentiated, and c_scatter has no gradient: Paddle registers none for any of them.
"""

from __future__ import annotations

from ..errors import GradError
from ..registry import NO_GRAD, defop
from .collective import REDUCE_TYPES, SUM, nranks_of
from .infer import same_as

CALC = {"ring_id": 0, "use_calc_stream": False}


def _rows(divide: bool):
    """Inference of an op that splits (divide) or joins axis 0 of X by the group's nranks (a 0-d X: stacked)."""
    def infer(ctx):
        slot, nranks = ("X" if ctx.op.inputs.get("X") else "x"), nranks_of(ctx)
        x, out = ctx.shape(slot), "Out" if slot == "X" else "out"
        if x is None:
            return {out: (None, ctx.dtype(slot))}
        if not x:
            if divide:
                ctx.fail(f"{ctx.op.type} needs a tensor of rank >= 1, got a 0-d {slot}")
            return {out: ([nranks], ctx.dtype(slot))}
        shape = list(x)
        if divide and shape[0] >= 0 and shape[0] % nranks:
            ctx.fail(f"{ctx.op.type} splits dim 0 of {slot} {x} into nranks={nranks} equal parts")
        if shape[0] >= 0:
            shape[0] = shape[0] // nranks if divide else shape[0] * nranks
        return {out: (shape, ctx.dtype(slot))}
    return infer


def _refused(g):
    raise GradError(f"{g.fwd.type}: gradc differentiates the sum only (Paddle registers no gradient of it)")


def _pair(grad_type: str, attrs=("ring_id", "nranks", "use_calc_stream")):
    def maker(g):
        return [g.op(grad_type, {"X": g.OG("Out")}, {"Out": g.IG("X")}, {name: g.attr(name) for name in attrs})]
    return maker


def _rooted(grad_type: str, root: str, grad_root: str):
    """The grad op of a rooted collective: the adjoint, rooted where the forward op is (``root`` -> ``grad_root``)."""
    def maker(g):
        attrs = {"ring_id": g.attr("ring_id"), grad_root: g.attr(root), "use_calc_stream": g.attr("use_calc_stream")}
        return [g.op(grad_type, {"X": g.OG("Out")}, {"Out": g.IG("X")}, attrs)]
    return maker


def _reduce_grad(g):
    if g.attr("reduce_type") != SUM:
        raise GradError(f"reduce with reduce_type {g.attr('reduce_type')}: gradc differentiates the sum "
                        f"(reduce_type 0) only; Paddle writes no grad op for any")
    return [g.op("broadcast", {"x": g.OG("out")}, {"out": g.IG("x")},
                 {"ring_id": g.attr("ring_id"), "root": g.attr("root_id")})]


def _all_to_all_grad(g):
    return [g.op("all_to_all", {"x": g.OG("out")}, {"out": g.IG("x")}, {"ring_id": g.attr("ring_id")})]


def _reduce_infer(ctx):
    if ctx.attr("reduce_type") not in REDUCE_TYPES:
        ctx.fail(f"reduce_type {ctx.attr('reduce_type')} is none of {REDUCE_TYPES} (Paddle's ReduceType)")
    return {"out": (ctx.shape("x"), ctx.dtype("x"))}


def _all_to_all_infer(ctx):
    x = ctx.shape("x")
    if x is not None and not x:
        ctx.fail("all_to_all needs a tensor of rank >= 1 (chunks along axis 0), got a 0-d x")
    return {"out": (x, ctx.dtype("x"))}


defop("c_allgather", ["X"], attrs={**CALC, "nranks": 0}, infer=_rows(divide=False), grad=_pair("c_reducescatter"))
defop("c_reducescatter", ["X"], attrs={**CALC, "nranks": 1}, infer=_rows(divide=True), grad=_pair("c_allgather"))
for _how in ("max", "min", "prod"):
    defop(f"c_allreduce_{_how}", ["X"], attrs={**CALC, "use_model_parallel": False}, infer=same_as("X"),
          grad=_refused)
    defop(f"c_reduce_{_how}", ["X"], attrs={**CALC, "root_id": 0}, infer=same_as("X"), grad=_refused)
defop("c_reduce_sum", ["X"], attrs={**CALC, "root_id": 0}, infer=same_as("X"),
      grad=_rooted("c_broadcast", "root_id", "root"))
defop("c_broadcast", ["X"], attrs={**CALC, "root": 0}, infer=same_as("X"),
      grad=_rooted("c_reduce_sum", "root", "root_id"))
defop("c_scatter", ["X"], attrs={**CALC, "root": 0, "nranks": 0}, infer=_rows(divide=True), grad=NO_GRAD)
defop("reduce", ["x"], ["out"], attrs={"ring_id": 0, "reduce_type": SUM, "root_id": 0}, infer=_reduce_infer,
      grad=_reduce_grad)
defop("all_to_all", ["x"], ["out"], attrs={"ring_id": 0}, infer=_all_to_all_infer, grad=_all_to_all_grad)
