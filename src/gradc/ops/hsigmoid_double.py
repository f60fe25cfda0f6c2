"""Second derivative of hierarchical_sigmoid: the loss written with differentiable ops, its backward emitted by
``differentiate`` (the grad op's outputs), and both differentiated again (``expansion``), so third derivatives
follow. The tree's nodes and branch bits come from integer ops on the labels (or PathTable and PathCode), as the
kernel computes them (gradc.executor.kernels.hsigmoid): per sample and step, z = x . W[node] + bias[node] on the
path (0 past it), clipped to [-40, 40], and Out = sum over steps of softplus(z) - bit z.
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import defgrad
from . import hsigmoid  # noqa: F401  (registers hierarchical_sigmoid_grad)
from .composite import differentiate, expansion, first
from .creation import scalars

CLIP = 40.0


def _constant(f, like: str, values: list[int]) -> str:
    """An int64 [1, len(values)] row."""
    return f.op("assign_value", {}, like, {"shape": [1, len(values)], "dtype": int(VarType.INT64),
                                           "values": scalars(values)},
                dims=lambda s: [1, len(values)], dtype=VarType.INT64)


def _paths(f, g, label: str) -> tuple[str, str, str]:
    """(node, bit, on the path) per sample and step, int64 [N, steps]."""
    table, code = first(g.I("PathTable")), first(g.I("PathCode"))
    if table is not None:   # a path ends at its first negative node
        negative = f.op("cast", {"X": f.op("less_than", {"X": table, "Y": f.fill_like(table, 0)}, table,
                                           dtype=VarType.BOOL)}, table,
                        {"in_dtype": int(VarType.BOOL), "out_dtype": int(VarType.INT64)})
        on_path = f.op("equal", {"X": f.op("cumsum", {"X": negative}, table, {"axis": 1}), "Y": f.fill_like(table, 0)},
                       table, dtype=VarType.BOOL)
        zeros = f.fill_like(table, 0)
        return (f.op("where", {"Condition": on_path, "X": table, "Y": zeros}, table),
                f.op("where", {"Condition": on_path, "X": code, "Y": zeros}, table), on_path)
    classes = g.attr("num_classes")
    steps = int(classes - 1).bit_length()
    column = f.op("reshape2", {"X": label}, label, {"shape": [-1, 1]}, more={"XShape": f.xshape(label)},
                  dims=lambda s: [-1, 1])
    code = f.op("elementwise_add", {"X": column, "Y": _constant(f, label, [classes])}, column)   # class c: c + C
    powers, nexts = (_constant(f, label, [2 ** (s + shift) for s in range(steps)]) for shift in (0, 1))

    def per_step(type, x, y):
        return f.op(type, {"X": x, "Y": y}, nexts, dims=lambda s: [-1, steps])

    on_path = f.op("greater_equal", {"X": code, "Y": nexts}, nexts, dims=lambda s: [-1, steps], dtype=VarType.BOOL)
    node = per_step("elementwise_sub", per_step("elementwise_floordiv", code, nexts), _constant(f, label, [1]))
    bit = per_step("elementwise_mod", per_step("elementwise_floordiv", code, powers), _constant(f, label, [2]))
    zeros = f.fill_like(node, 0)
    return (f.op("where", {"Condition": on_path, "X": node, "Y": zeros}, node),
            f.op("where", {"Condition": on_path, "X": bit, "Y": zeros}, node), on_path)


def _loss(f, g) -> str:
    """Out written with differentiable ops."""
    x, w, bias = first(g.I("X")), first(g.I("W")), first(g.I("Bias"))
    node, bit, on_path = _paths(f, g, first(g.I("Label")))
    steps, width = g.shape(node)[1], g.shape(w)[1]
    flat_nodes = f.op("reshape2", {"X": node}, node, {"shape": [-1]}, more={"XShape": f.xshape(node)},
                      dims=lambda s: [-1])
    rows = f.op("reshape2", {"X": f.op("gather", {"X": w, "Index": flat_nodes}, w, dims=lambda s: [-1, width])}, w,
                {"shape": [-1, steps, width]}, more={"XShape": f.xshape(w)}, dims=lambda s: [-1, steps, width])
    sample = f.op("unsqueeze2", {"X": x}, x, {"axes": [1]}, more={"XShape": f.xshape(x)},
                  dims=lambda s: [s[0], 1, s[1]])
    z = f.op("reduce_sum", {"X": f.mul(rows, sample, rows)}, node, {"dim": [2], "keep_dim": False, "reduce_all": False},
             dtype=g.block.var(x).dtype)
    if bias is not None:
        flat_bias = f.op("reshape2", {"X": bias}, bias, {"shape": [-1]}, more={"XShape": f.xshape(bias)},
                         dims=lambda s: [-1])
        picked = f.op("gather", {"X": flat_bias, "Index": flat_nodes}, flat_bias)
        z = f.add(z, f.op("reshape2", {"X": picked}, z, {"shape": [-1, steps]}, more={"XShape": f.xshape(picked)}), z)

    def as_float(value):
        return f.op("cast", {"X": value}, z, {"in_dtype": int(g.block.var(value).dtype),
                                               "out_dtype": int(g.block.var(x).dtype)})

    clipped = f.op("clip", {"X": f.mul(z, as_float(on_path), z)}, z, {"min": -CLIP, "max": CLIP})
    terms = f.sub(f.unary("softplus", clipped, {"beta": 1.0, "threshold": 20.0}), f.mul(as_float(bit), clipped, z), z)
    return f.op("reduce_sum", {"X": terms}, z, {"dim": [1], "keep_dim": True, "reduce_all": False},
                dims=lambda s: [s[0], 1])


@expansion
def _hsigmoid_grad(f, g):
    out = _loss(f, g)
    wanted = {first(g.I(slot)): g.tmp(first(g.I(slot))) for slot in ("X", "W", "Bias") if g.O(slot + "@GRAD")}
    f.ops.extend(differentiate(g, list(f.ops), {out: first(g.I("Out@GRAD"))}, wanted))
    names = {first(g.I(slot)): slot for slot in ("X", "W", "Bias")}
    return {names[var] + "@GRAD": grad for var, grad in wanted.items()}


defgrad("hierarchical_sigmoid_grad", grad=_hsigmoid_grad, no_grad_inputs=["Label", "PathTable", "PathCode", "PreOut"])
