"""Second derivatives of gradc.ops.fused_ffn: fused_feedforward_grad written again as the layer in plain
differentiable ops (layer_norm, matmul_v2, gelu or relu, scale, elementwise_add) and their grad ops
(gradc.ops.composite.differentiate), so its own grad and the third derivatives follow. The saved intermediates get
no gradient: the expansion recomputes them from the inputs."""

from __future__ import annotations

from ..errors import GradError
from ..registry import defgrad
from .composite import differentiate, expansion, first
from .fused_ffn import FFN_STATE, FFN_WEIGHTS, dropout_factor


def layer_norm_op(f, g, h: str, scale: str | None, bias: str | None, epsilon: float, axis: int | None = None) -> str:
    """layer_norm over h's last dim (``axis``: its index, where h's rank is not declared)."""
    axis = len(g.shape(h)) - 1 if axis is None else axis
    stats = [g.tmp(h, lambda s: s[:axis]) for _ in range(2)]
    out = g.tmp(h)
    f.emit("layer_norm", {"X": h, "Scale": scale, "Bias": bias}, {"Y": out, "Mean": stats[0], "Variance": stats[1]},
           {"epsilon": epsilon, "begin_norm_axis": axis, "is_test": False})
    return out


def _linear(f, x: str, weight: str, bias: str | None, like: str) -> str:
    out = f.op("matmul_v2", {"X": x, "Y": weight}, like, {"trans_x": False, "trans_y": False},
               dims=lambda s: [*s[:-1], f.g.shape(weight)[1]])
    return out if bias is None else f.add(out, bias, out)


def feedforward_ops(f, g) -> str:
    """The layer of fused_feedforward (its grad op's forward inputs) as plain ops; returns Out's var."""
    x, slot = first(g.I("X")), lambda name: first(g.I(name))
    if g.shape(x) is None:   # the layer norms need X's rank, not its sizes (a batch of -1 is fine)
        raise GradError(f"{g.fwd.type}: X {x} must have a known rank, got an unknown shape")
    pre = g.attr("pre_layer_norm")
    h = layer_norm_op(f, g, x, slot("Ln1Scale"), slot("Ln1Bias"), g.attr("ln1_epsilon")) if pre else x
    z = _linear(f, h, slot("Linear1Weight"), slot("Linear1Bias"), h)
    act = f.unary("gelu", z, {"approximate": False}) if g.attr("act_method") == "gelu" else f.unary("relu", z)
    m = _linear(f, f.scale(act, dropout_factor(g.attr, "dropout1")), slot("Linear2Weight"), slot("Linear2Bias"), x)
    s = f.scale(m, dropout_factor(g.attr, "dropout2"))
    s = f.add(s, x, x) if g.attr("add_residual") else s
    return s if pre else layer_norm_op(f, g, s, slot("Ln2Scale"), slot("Ln2Bias"), g.attr("ln2_epsilon"))


@expansion
def _ffn_again(f, g):
    out = feedforward_ops(f, g)
    wanted = [slot for slot in ("X", *FFN_WEIGHTS) if first(g.I(slot))]
    targets = {first(g.I(slot)): g.tmp(first(g.I(slot))) for slot in wanted}
    f.ops += differentiate(g, f.ops, {out: first(g.I("Out@GRAD"))}, targets)
    return {f"{slot}@GRAD": targets[first(g.I(slot))] for slot in wanted}


defgrad("fused_feedforward_grad", grad=_ffn_again, no_grad_inputs=[slot.rstrip("?") for slot in FFN_STATE])
