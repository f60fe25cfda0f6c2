"""Message passing over graphs given as edge lists (paddle.geometric), and segment reductions.

graph_send_recv gathers X's rows along the edges (Src_index[e] -> Dst_index[e]) and reduces them into Out's rows
(reduce_op SUM, MEAN, MAX or MIN); graph_send_ue_recv first combines each gathered row with the edge's row of Y
(message_op ADD, SUB, MUL or DIV, X and Y broadcast past their first dim); graph_send_uv gives each edge
message_op(x[src], y[dst]), no reduction. Out's rows: out_size (or the Out_size tensor) when > 0, else X's rows;
rows no edge reaches are 0, also for MAX and MIN. Dst_count is the number of edges into each row.
segment_pool reduces X's rows by their sorted SegmentIds into last id + 1 rows (pooltype SUM, MEAN, MAX, MIN);
SummedIds is the number of rows in each segment.

MAX and MIN send dOut to every message equal to the extreme (ties each get the whole, as Paddle's kernels do).
A row of X reaching a row through edges repeating a (src, dst) pair is one variable: gradc counts it once (for
graph_send_ue_recv, X gets the mean of those edges' tied messages' grads), where Paddle 3.3.1's grads add dOut
once per repeated edge (central differences say once). Paddle's kernels compute only message_op ADD and MUL
(paddle.geometric rewrites sub into ADD of -y and div into MUL by 1 / (y + 1e-12)); its SUB and DIV write zeros:
gradc computes x - y and x / y.
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import defop, grad_op, typed
from ..shapes import broadcast_dims
from .infer import one_dtype

REDUCE_OPS = ("SUM", "MEAN", "MAX", "MIN")
MESSAGE_OPS = ("ADD", "SUB", "MUL", "DIV")
INDEX_TYPES = (VarType.INT32, VarType.INT64)


def _choice(ctx, name: str, allowed: tuple[str, ...]) -> str:
    value = ctx.attr(name)
    if value not in allowed:
        ctx.fail(f"{ctx.op.type} {name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _index_count(ctx, *slots: str) -> int:
    """The number of entries of the 1-D (or [n, 1]) int index tensors ``slots``, which must agree (-1: unknown)."""
    counts = []
    for slot in slots:
        shape, dtype = ctx.shape(slot), ctx.dtype(slot)
        if dtype is not None and dtype not in INDEX_TYPES:
            ctx.fail(f"{ctx.op.type} needs an int32 or int64 {slot}")
        if shape is not None and not (len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)):
            ctx.fail(f"{ctx.op.type} needs a 1-D {slot}, got {shape}")
        counts.append(-1 if shape is None else shape[0])
    known = {c for c in counts if c >= 0}
    if len(known) > 1:
        ctx.fail(f"{ctx.op.type} needs {' and '.join(slots)} of one length, got {counts}")
    return known.pop() if known else -1


def _rows(ctx, slot: str = "X") -> list[int]:
    shape = ctx.shape(slot)
    if not shape:
        ctx.fail(f"{ctx.op.type} needs {slot} of rank >= 1 (a row per node), got {shape}")
    return shape


def _out_rows(ctx, x_rows: int) -> int:
    """Out's rows: the Out_size tensor's value (known at run time), out_size when > 0, else X's rows."""
    if ctx.has("Out_size"):
        if ctx.dtype("Out_size") not in (None, *INDEX_TYPES):
            ctx.fail(f"{ctx.op.type} needs an int32 or int64 Out_size")
        return -1
    sizes = list(ctx.attr("out_size") or [0])
    if len(sizes) != 1:
        ctx.fail(f"{ctx.op.type} out_size must hold one value, got {sizes}")
    return sizes[0] if sizes[0] > 0 else x_rows


def feature_dims(ctx, x: list[int], y: list[int]) -> list[int]:
    """The broadcast of the dims after the first (aligned at the right, as Paddle's kernels do)."""
    return broadcast_dims(x[1:], y[1:], -1, ctx.fail)


# Dst_count and SummedIds are declared variously (legacy programs: [] int32 and []; PIR: [0] float32, or [-1]
# int32 where Paddle's kernel writes them, for MEAN only): gradc writes both always, in the declared dtype
COUNTS = (None, None)


def _send_recv_infer(ctx):
    _choice(ctx, "reduce_op", REDUCE_OPS)
    x = _rows(ctx)
    _index_count(ctx, "Src_index", "Dst_index")
    rows = _out_rows(ctx, x[0])
    return {"Out": ([rows, *x[1:]], ctx.dtype("X")), "Dst_count": COUNTS}


def _send_ue_recv_infer(ctx):
    _choice(ctx, "reduce_op", REDUCE_OPS)
    _choice(ctx, "message_op", MESSAGE_OPS)
    x, y = _rows(ctx), _rows(ctx, "Y")
    edges = _index_count(ctx, "Src_index", "Dst_index")
    if edges >= 0 and y[0] >= 0 and y[0] != edges:
        ctx.fail(f"graph_send_ue_recv needs a row of Y per edge: Y has {y[0]} rows for {edges} edges")
    rows = _out_rows(ctx, x[0])
    return {"Out": ([rows, *feature_dims(ctx, x, y)], one_dtype(ctx, "X", "Y")), "Dst_count": COUNTS}


def _send_uv_infer(ctx):
    _choice(ctx, "message_op", MESSAGE_OPS)
    x, y = _rows(ctx, "x"), _rows(ctx, "y")
    edges = _index_count(ctx, "src_index", "dst_index")
    return {"out": ([edges, *feature_dims(ctx, x, y)], one_dtype(ctx, "x", "y"))}


def _segment_pool_infer(ctx):
    _choice(ctx, "pooltype", REDUCE_OPS)
    x = _rows(ctx)
    ids = _index_count(ctx, "SegmentIds")
    if ids >= 0 and x[0] >= 0 and ids != x[0]:
        ctx.fail(f"segment_pool needs a segment id per row of X: {ids} ids for {x[0]} rows")
    return {"Out": ([-1, *x[1:]], ctx.dtype("X")), "SummedIds": (None, ctx.dtype("X"))}


_OUT_SIZE = {"out_size": typed([0], AttrType.LONGS)}
_EDGES = ["Src_index", "Dst_index"]

defop("graph_send_recv", ["X", *_EDGES, "Out_size?"], ["Out", "Dst_count"],
      attrs={"reduce_op": "SUM", **_OUT_SIZE}, infer=_send_recv_infer,
      no_grad_inputs=[*_EDGES, "Out_size"], no_grad_outputs=["Dst_count"],
      grad=grad_op("X", *_EDGES, "Out", "Dst_count"))
defop("graph_send_ue_recv", ["X", "Y", *_EDGES, "Out_size?"], ["Out", "Dst_count"],
      attrs={"message_op": "ADD", "reduce_op": "SUM", **_OUT_SIZE}, infer=_send_ue_recv_infer,
      no_grad_inputs=[*_EDGES, "Out_size"], no_grad_outputs=["Dst_count"],
      grad=grad_op("X", "Y", *_EDGES, "Out", "Dst_count"))
defop("graph_send_uv", ["x", "y", "src_index", "dst_index"], ["out"], attrs={"message_op": "ADD"},
      infer=_send_uv_infer, no_grad_inputs=["src_index", "dst_index"],
      grad=grad_op("x", "y", "src_index", "dst_index"))
defop("segment_pool", ["X", "SegmentIds"], ["Out", "SummedIds"], attrs={"pooltype": "SUM"},
      infer=_segment_pool_infer, no_grad_inputs=["SegmentIds"], no_grad_outputs=["SummedIds"],
      grad=grad_op("X", "SegmentIds", "Out", "SummedIds"))
