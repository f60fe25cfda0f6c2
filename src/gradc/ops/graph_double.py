"""Second derivatives of the graph ops, composite (gradc.ops.composite) so third derivatives follow.

Each grad op is linear in dOut. graph_send_recv_grad's adjoint (d/d(dOut), given ddX, the grad of X@GRAD): for
SUM and MEAN the forward op applied to ddX, into Out's rows (its Out_size, read from Out); for MAX and MIN the
grad op itself with the edges reversed (ddX picked at each row's extreme, a repeated edge once); it is flat in X
and Out (a mask). segment_pool_grad's: segment_pool of ddX, for MAX and MIN of ddX where X is the extreme (the
grad op's mask). graph_send_uv_grad's MUL messages are bilinear (d/dx, d/dy: the grad op with the other operand
replaced by its ddy, ddx); DIV ones are MUL by 1 / y. graph_send_ue_recv_grad is written again with those two
grad ops (expansion) over an index giving each edge a row of its own.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR, VarType
from ..registry import defgrad
from . import graph  # noqa: F401  (registers the grad ops)
from .composite import Formula, expansion, first, linear


def _rows_of(f: Formula, out: str) -> str:
    """Out's first dim as a 1-element int32 tensor (an Out_size input)."""
    shape = f.op("shape", {"Input": out}, out, dims=lambda s: [len(s)], dtype=VarType.INT32)
    return f.slice(shape, 0, 0, 1)


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


def _edge_ids(f: Formula, src: str) -> str:
    """0, 1, ..., E - 1 for the E edges of ``src`` (int32): an index giving each edge a row of its own."""
    count = _rows_of(f, src)
    start, step = (f.op("fill_constant", {}, count, {"shape": [1], "dtype": int(VarType.INT32), "value": value})
                   for value in (0.0, 1.0))
    return f.op("range", {"Start": start, "End": count, "Step": step}, src, dims=lambda s: s[:1],
                dtype=VarType.INT32)


def _uv_grad_bilinear(g):
    """graph_send_uv_grad of ADD, SUB or MUL messages: d/d(dOut) = uv(ddx, ddy) for ADD and SUB (linear),
    uv(ddx, y) + uv(x, ddy) for MUL; for MUL d/dx and d/dy are the grad op with y := ddy and x := ddx."""
    f = Formula(g)
    (x, ddx), (y, ddy) = ((first(g.I(slot)), first(g.OG(slot + "@GRAD"))) for slot in ("x", "y"))
    edges = {slot: g.I(slot) for slot in ("src_index", "dst_index")}
    dout, wanted = first(g.I("out@GRAD")), first(g.IG("out@GRAD"))

    def uv(a, b):
        return f.op("graph_send_uv", {"x": a, "y": b, **edges}, dout, slot="out", same=True)

    multiplies = g.attr("message_op") == "MUL"
    if wanted not in (None, EMPTY_VAR) and (ddx or ddy):
        terms = ([uv(a, b) for a, b in ((ddx, y), (x, ddy)) if a and b] if multiplies else
                 [uv(ddx or f.fill_like(x, 0.0), ddy or f.fill_like(y, 0.0))])
        f.into(wanted, "sum", {"X": terms})
    if multiplies:
        for slot, other, dd in (("x", "y", ddy), ("y", "x", ddx)):
            if dd is not None:
                f.into(first(g.IG(slot)), "graph_send_uv_grad", {"x": x, "y": y, **edges, "out@GRAD": dout, other: dd},
                       slot=slot + "@GRAD", same=True)
    return f.ops


@expansion
def _uv_grad_of_div(f, g):
    """x / y as x * R, R = 1 / y: x@GRAD is MUL's with R, y@GRAD MUL's times dR/dy = -R^2 (R is constant along
    the sum MUL's y@GRAD takes over each y row's edges and broadcast dims)."""
    x, y = first(g.I("x")), first(g.I("y"))
    r = f.unary("reciprocal", y)
    grads = {slot: g.tmp(v) for slot, v in (("x@GRAD", x), ("y@GRAD", y))}
    f.emit("graph_send_uv_grad", {"x": x, "y": r, **{s: g.I(s) for s in ("src_index", "dst_index", "out@GRAD")}},
           grads, {"message_op": "MUL"}, same=True)
    return {"x@GRAD": grads["x@GRAD"],
            "y@GRAD": f.mul(grads["y@GRAD"], f.scale(f.unary("square", r), -1.0), y)}


def _uv_grad(g):
    return _uv_grad_of_div(g) if g.attr("message_op") == "DIV" else _uv_grad_bilinear(g)


@expansion
def _ue_recv_grad(f, g):
    """The grad op again as graph_send_uv_grad over edges with a row each (E_ids): x[src] and y[e] combine as in
    graph_send_uv with dst := e, and each edge's share of dOut (dOut[dst], / count for MEAN, where the message is
    Out's extreme for MAX, MIN) is graph_send_recv_grad's X@GRAD for X := the messages, src := e."""
    x, y, src = first(g.I("X")), first(g.I("Y")), first(g.I("Src_index"))
    ids, dout = _edge_ids(f, src), first(g.I("Out@GRAD"))
    message_op = g.attr("message_op")
    messages = f.op("graph_send_uv", {"x": x, "y": y, "src_index": src, "dst_index": ids}, dout,
                    {"message_op": message_op}, slot="out", dims=lambda s: [-1, *s[1:]])
    shares = f.op("graph_send_recv_grad", {"X": messages, "Src_index": ids, "Dst_index": g.I("Dst_index"),
                                           "Out": g.I("Out"), "Dst_count": g.I("Dst_count"), "Out@GRAD": dout},
                  messages, {"reduce_op": g.attr("reduce_op")}, slot="X@GRAD")
    grads = {slot: g.tmp(v) for slot, v in (("x@GRAD", x), ("y@GRAD", y))}
    f.emit("graph_send_uv_grad", {"x": x, "y": y, "src_index": src, "dst_index": ids, "out@GRAD": shares}, grads,
           {"message_op": message_op})
    return {"X@GRAD": grads["x@GRAD"], "Y@GRAD": grads["y@GRAD"]}


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
defgrad("graph_send_ue_recv_grad", grad=_ue_recv_grad, no_grad_inputs=["Out", *_EDGES, "Dst_count"])
defgrad("graph_send_uv_grad", grad=_uv_grad, no_grad_inputs=["src_index", "dst_index"])
defgrad("segment_pool_grad", grad=_segment_pool_grad, no_grad_inputs=["X", "Out", "SegmentIds", "SummedIds"])
