"""Second derivatives of the static_nn layers. row_conv is linear in X and in Filter (``bilinear``). cvm_grad is
linear in Y@GRAD and flat in all else. nce_grad's maker writes the cost with differentiable ops on the samples its
forward drew (SampleLabels, held fixed), then differentiates it twice (``expansion``):
    cost = SampleWeight * (sum over samples of log(o + b) - sum over the true ones of log(o)) + terms without o,
with o = sigmoid(Input . Weight[c] + Bias[c]) and b = num_neg_samples P(c) of each sample c.
"""

from __future__ import annotations

import math

from ..ir import EMPTY_VAR, VarType
from ..registry import defgrad
from . import static_nn  # noqa: F401  (registers cvm_grad, nce_grad and row_conv_grad)
from .composite import Formula, bilinear, differentiate, expansion, first

BIG = 2 ** 31 - 1


def _cvm_double_grad(g):
    """X@GRAD holds Y@GRAD past the show and click columns: d(Y@GRAD) is ddX there, and ddX's first two columns
    are dropped (without use_cvm) or zeroed (use_cvm: Y keeps them)."""
    f, ddx, out = Formula(g), first(g.OG("X@GRAD")), first(g.IG("Y@GRAD"))
    if ddx is None or out in (None, EMPTY_VAR):
        return []
    kept = {"axes": [1], "starts": [2], "ends": [BIG], "infer_flags": [1], "decrease_axis": []}
    if not g.attr("use_cvm"):
        f.into(out, "slice", {"Input": ddx}, kept)
        return f.ops
    columns = f.op("slice", {"Input": ddx}, first(g.I("X")), kept,
                   dims=lambda s: [s[0], -1 if s[1] == -1 else s[1] - 2])
    f.into(out, "pad", {"X": columns}, {"paddings": [0, 0, 2, 0], "pad_value": 0.0})
    return f.ops


defgrad("cvm_grad", grad=_cvm_double_grad, no_grad_inputs=["CVM", "X"])
defgrad("row_conv_grad", grad=bilinear("row_conv", "X", "Filter", "Out"))


def _reshaped(f, x: str, dims: list[int]) -> str:
    return f.op("reshape2", {"X": x}, x, {"shape": dims}, more={"XShape": f.xshape(x)}, dims=lambda s: dims)


def _probabilities(f, g, samples: str, flat: str, like: str, count: int) -> str:
    """b = num_neg_samples P(c) of each sample c, [batch, samples], like the sampler's Probability."""
    negatives, classes, kind = g.attr("num_neg_samples"), g.attr("num_total_classes"), g.attr("sampler")
    if kind == 0:
        return f.fill_like(like, negatives / classes)
    if kind == 2:
        probs = f.op("gather", {"X": first(g.I("CustomDistProbs")), "Index": flat}, flat,
                     dims=lambda s: s, dtype=g.block.var(like).dtype)
        return f.scale(_reshaped(f, probs, [-1, count]), float(negatives))
    c = f.op("cast", {"X": samples}, like, {"in_dtype": int(VarType.INT64),
                                            "out_dtype": int(g.block.var(like).dtype)})
    ratio = f.div(f.scale(c, 1.0, 2.0), f.scale(c, 1.0, 1.0), like)
    return f.scale(f.unary("log", ratio), negatives / math.log(classes))


def _nce_cost(f, g) -> str:
    x, weight, bias, samples = (first(g.I(s)) for s in ("Input", "Weight", "Bias", "SampleLabels"))
    count = g.shape(samples)[1]
    width, trues = g.shape(weight)[1], (g.shape(first(g.I("Label"))) + [1])[1]
    flat = _reshaped(f, samples, [-1])
    rows = _reshaped(f, f.op("gather", {"X": weight, "Index": flat}, weight, dims=lambda s: [-1, width]),
                     [-1, count, width])
    across = f.op("unsqueeze2", {"X": x}, x, {"axes": [1]}, more={"XShape": f.xshape(x)},
                  dims=lambda s: [s[0], 1, s[1]])
    logits = f.op("reduce_sum", {"X": f.mul(rows, across, rows)}, samples,
                  {"dim": [2], "keep_dim": False, "reduce_all": False}, dtype=g.block.var(x).dtype)
    if bias is not None:
        picked = f.op("gather", {"X": _reshaped(f, bias, [-1]), "Index": flat}, flat, dtype=g.block.var(x).dtype)
        logits = f.add(logits, _reshaped(f, picked, [-1, count]), logits)
    odds = f.unary("sigmoid", logits)
    b = _probabilities(f, g, samples, flat, odds, count)
    both = f.sum_along(f.unary("log", f.add(odds, b, odds)), 1)
    cost = f.sub(both, f.sum_along(f.unary("log", f.slice(odds, 1, 0, trues)), 1), both)
    weights = first(g.I("SampleWeight"))
    return cost if weights is None else f.mul(cost, _reshaped(f, weights, [-1, 1]), cost)


@expansion
def _nce_double_grad(f, g):
    cost = _nce_cost(f, g)
    wanted = {first(g.I(slot)): g.tmp(first(g.I(slot))) for slot in ("Input", "Weight", "Bias")
              if g.O(slot + "@GRAD")}
    f.ops.extend(differentiate(g, list(f.ops), {cost: first(g.I("Cost@GRAD"))}, wanted))
    names = {first(g.I(slot)): slot for slot in ("Input", "Weight", "Bias")}
    return {names[var] + "@GRAD": grad for var, grad in wanted.items()}


defgrad("nce_grad", grad=_nce_double_grad, no_grad_inputs=["Label", "SampleWeight", "CustomDistProbs",
                                                            "CustomDistAlias", "CustomDistAliasProbs",
                                                            "SampleLogits", "SampleLabels"])
