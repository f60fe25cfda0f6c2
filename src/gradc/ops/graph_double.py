"""Second derivatives of the graph ops, composite (gradc.ops.composite) so third derivatives follow.

Each grad op is linear in dOut. Its adjoint (d/d(dOut), given ddX, the grad of X@GRAD): for SUM and MEAN the
forward op applied to ddX, into Out's rows (its Out_size, read from Out); for graph_send_recv's MAX and MIN the
grad op itself with the edges reversed (ddX picked at each row's extreme, a repeated edge once); for
segment_pool's MAX and MIN ddX summed by segment where X is the extreme (the grad op's mask). MAX and MIN grads
are flat in X and Out (a mask). The MUL messages are bilinear: d/dX and d/dY are the grad op with the other
operand replaced by its ddY or ddX. gradc does not differentiate the grads of MAX or MIN messages of
graph_send_ue_recv, nor DIV messages (x / y is not bilinear): the maker says so.
"""

from __future__ import annotations

from ..errors import GradError
from ..ir import EMPTY_VAR, VarType
from ..registry import defgrad
from . import graph  # noqa: F401  (registers the grad ops)
from .composite import Formula, first, linear


def _rows_of(f: Formula, out: str) -> str:
    """Out's first dim as a 1-element int32 tensor (an Out_size input)."""
    shape = f.op("shape", {"Input": out}, out, dims=lambda s: [len(s)], dtype=VarType.INT32)
    return f.slice(shape, 0, 0, 1)


def _operands(f: Formula, g, slots: tuple[str, ...]) -> dict[str, tuple[str, str | None]]:
    """slot -> (its forward var, the grad of its grad: None when nobody computed that grad)."""
    return {slot: (first(g.I(slot)), first(g.OG(slot + "@GRAD"))) for slot in slots}


def _refused(g, reduces: bool) -> None:
    message_op, reduce_op = g.attr("message_op"), g.attr("reduce_op") if reduces else "SUM"
    if message_op == "DIV" or reduce_op in ("MAX", "MIN"):
        raise GradError(f"{g.fwd.type}: gradc differentiates it for ADD, SUB and MUL messages, reduced by SUM or "
                        f"MEAN, only (got message_op {message_op}, reduce_op {reduce_op})")


def _send_recv_grad(g):
    wanted = first(g.IG("Out@GRAD"))
    ddx = first(g.OG("X@GRAD"))
    if wanted in (None, EMPTY_VAR) or ddx is None:
        return []
    f = Formula(g)
    x, out = first(g.I("X")), first(g.I("Out"))
    if g.attr("reduce_op") in ("MAX", "MIN"):
        f.into(wanted, "graph_send_recv_grad", {"X": out, "Out": x, "Src_index": g.I("Dst_index"),
                                                "Dst_index": g.I("Src_index"), "Dst_count": g.I("Dst_count"),
                                                "Out@GRAD": ddx}, slot="X@GRAD", same=True)
        return f.ops
    f.emit("graph_send_recv", {"X": ddx, "Src_index": g.I("Src_index"), "Dst_index": g.I("Dst_index"),
                               "Out_size": _rows_of(f, out)},
           {"Out": wanted, "Dst_count": g.tmp(first(g.I("Dst_count")))}, same=True)
    return f.ops


def _messages_grad(forward: str, x: str, y: str, out: str, passed: tuple[str, ...], reduces: bool):
    """The maker of graph_send_ue_recv_grad / graph_send_uv_grad (SUM or MEAN of ADD, SUB or MUL messages):
    d/d(dOut) = F(ddX, ddY) for ADD and SUB (linear), F(ddX, Y) + F(X, ddY) for MUL; for MUL d/dX and d/dY are the
    grad op with Y := ddY and X := ddX. ``reduces``: F reduces into Out's rows (an Out_size, and a Dst_count)."""

    def maker(g):
        _refused(g, reduces)
        f = Formula(g)
        ops = _operands(f, g, (x, y))
        dout = first(g.I(out + "@GRAD"))
        index = {slot: g.I(slot) for slot in passed}
        extra = {"Dst_count": g.tmp(first(g.I("Dst_count")))} if reduces else {}
        size = {}

        def forward_of(xv, yv):
            if reduces and "Out_size" not in size:
                size["Out_size"] = _rows_of(f, first(g.I("Out")))
            return f.op(forward, {x: xv, y: yv, **index, **size}, dout, slot=out, more=extra, same=True)

        (xv, ddx), (yv, ddy) = ops[x], ops[y]
        wanted = first(g.IG(out + "@GRAD"))
        if wanted not in (None, EMPTY_VAR) and (ddx or ddy):
            if g.attr("message_op") == "MUL":
                terms = [forward_of(a, b) for a, b in ((ddx, yv), (xv, ddy)) if a and b]
            else:
                terms = [forward_of(ddx or f.fill_like(xv, 0.0), ddy or f.fill_like(yv, 0.0))]
            f.into(wanted, "sum", {"X": terms})
        if g.attr("message_op") == "MUL":
            reads = {name: g.I(name) for name in g.opdef.inputs}
            for slot, other, dd in ((x, y, ddy), (y, x, ddx)):
                if dd is not None:
                    f.into(first(g.IG(slot)), g.fwd.type, {**reads, other: dd}, slot=slot + "@GRAD", same=True)
        return f.ops

    return maker


def _segment_pool_grad(g):
    if g.attr("pooltype") in ("SUM", "MEAN"):
        return linear("segment_pool", passed=("SegmentIds",), extra=("SummedIds",))(g)
    wanted, ddx = first(g.IG("Out@GRAD")), first(g.OG("X@GRAD"))
    if wanted in (None, EMPTY_VAR) or ddx is None:
        return []
    f = Formula(g)
    x, dout = first(g.I("X")), first(g.I("Out@GRAD"))
    reads = {name: g.I(name) for name in g.opdef.inputs}
    mask = f.op("segment_pool_grad", {**reads, "Out@GRAD": f.fill_like(dout, 1.0)}, x, slot="X@GRAD", same=True)
    f.emit("segment_pool", {"X": f.mul(ddx, mask, x), "SegmentIds": g.I("SegmentIds")},
           {"Out": wanted, "SummedIds": g.tmp(first(g.I("SummedIds")))}, {"pooltype": "SUM"}, same=True)
    return f.ops


_EDGES = ("Src_index", "Dst_index")
defgrad("graph_send_recv_grad", grad=_send_recv_grad, no_grad_inputs=["X", "Out", *_EDGES, "Dst_count"])
defgrad("graph_send_ue_recv_grad", grad=_messages_grad("graph_send_ue_recv", "X", "Y", "Out", _EDGES, True),
        no_grad_inputs=["Out", *_EDGES, "Dst_count"])
defgrad("graph_send_uv_grad", grad=_messages_grad("graph_send_uv", "x", "y", "out", ("src_index", "dst_index"),
                                                  False), no_grad_inputs=["src_index", "dst_index"])
defgrad("segment_pool_grad", grad=_segment_pool_grad, no_grad_inputs=["X", "Out", "SegmentIds", "SummedIds"])
