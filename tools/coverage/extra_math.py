"""Rows: special functions and small tensor ops (gammaln, gammaincc, nextafter, multiplex, reduce_as, is_empty,
equal_all, swiglu, norm, margin_cross_entropy, fused_rms_norm_quant, fused_bias_residual_layernorm).

Paddle 3.3.1's gammaincc / gammainc check their operands with paddle.all (PIR only) and its swiglu appends no op
in legacy mode: there the rows append the legacy op itself, as Paddle 2.x's layers did. margin_cross_entropy has
no CPU kernel in Paddle 3.3.1: its fixtures record Paddle's error."""

import paddle
import paddle.nn.functional as F
from paddle.base.framework import in_dynamic_or_pir_mode
from paddle.incubate.nn.functional import fused_layer_norm, fused_rms_norm, swiglu
from paddle.nn.utils.weight_norm_hook import l2_norm, norm_except_dim

from .legacy_shim import _outputs, append
from .spec import const, f, given, pos, table, unit, weights


def _gammaincc(x, y):
    if in_dynamic_or_pir_mode():
        return paddle.gammaincc(x, y)
    return append("gammaincc", {"x": x, "y": y}, out_slot="out")


def _gammainc(x, y):
    """paddle.gammainc = 1 - gammaincc."""
    if in_dynamic_or_pir_mode():
        return paddle.gammainc(x, y)
    return 1 - _gammaincc(x, y)


def _swiglu(x, y=None):
    if in_dynamic_or_pir_mode():
        return swiglu(x, y)
    return append("swiglu", {"x": x} if y is None else {"x": x, "y": y}, out_slot="out")


def _l2_normalize(x, axis, epsilon=1e-10):
    """The legacy l2_normalize layer (Paddle 1.x), whose Out is the normalised x (l2_norm keeps only Norm)."""
    if in_dynamic_or_pir_mode():
        return paddle._C_ops.norm(x, axis, epsilon, False)[0]
    return _outputs("norm", {"X": x}, {"Out": x.dtype, "Norm": x.dtype}, {"axis": axis, "epsilon": epsilon})[0]


ROWS = table(
    "extra_math",
    ("gammaln", lambda x: paddle.gammaln(x * 3.0), f(2, 3)),
    ("gammaincc", lambda x, y: _gammaincc(x, y), weights(2, 3), pos(2, 3)),
    ("gammaincc_far", lambda x, y: _gammaincc(x * 4.0, y * 5.0), weights(2, 3), pos(2, 3)),
    ("gammainc", lambda x, y: _gammainc(x, y), weights(2, 3), pos(2, 3)),
    ("nextafter", lambda x, y: paddle.nextafter(x, y) * 2.0, const(2, 3), const(2, 3)),
    ("multiplex", lambda a, b, c, index: paddle.multiplex([a, b, c], index), f(4, 3), f(4, 3), f(4, 3),
     given([[2], [0], [1], [2]], "int32")),
    ("multiplex_ids64", lambda a, b, index: paddle.multiplex([a, b], index), f(3, 2), f(3, 2),
     given([[1], [1], [0]], "int64")),
    ("reduce_as", lambda x, target: paddle.reduce_as(x, target), f(2, 3, 4), const(3, 1)),
    ("reduce_as_leading", lambda x, target: paddle.reduce_as(x, target), f(2, 3), const(3)),
    ("is_empty", lambda x: x + paddle.is_empty(x).astype(x.dtype), f(2, 3)),
    ("equal_all", lambda x, y: x * paddle.equal_all(x, x).astype(x.dtype) + paddle.equal_all(x, y).astype(x.dtype),
     f(2, 3), const(2, 3)),
    ("swiglu", lambda x: _swiglu(x), f(2, 3, 4)),
    ("swiglu_xy", lambda x, y: _swiglu(x, y), f(2, 3), f(2, 3)),
    ("l2_normalize", lambda x: _l2_normalize(x, 1), f(2, 3, 4)),
    ("l2_normalize_axis0", lambda x: _l2_normalize(x, 0, 1e-6), f(3, 4)),
    ("l2_normalize_last", lambda x: _l2_normalize(x, -1), f(2, 5)),
    ("l2_norm", lambda x: l2_norm(x, 1), f(3, 4)),
    ("norm_except_dim", lambda x: norm_except_dim(x, 1), f(2, 3, 4)),
    # Paddle 3.3.1 has no CPU grad kernel of fused_rms_norm_quant: these rows differentiate no input
    ("fused_rms_norm", lambda x, w: fused_rms_norm(x, w, None, 1e-5, 2)[0], const(2, 3, 4), weights(4)),
    ("fused_rms_norm_residual", lambda x, w, norm_bias, bias, residual: sum(fused_rms_norm(
        x, w, norm_bias, 1e-6, 1, bias=bias, residual=residual)[:2]), const(2, 6), weights(6), const(6), const(6),
     const(2, 6)),
    # Paddle 3.3.1 registers no grad op of fused_bias_residual_layernorm: these rows differentiate no input. With
    # norm_weight or norm_bias, bias counts only along with a residual; with neither, out = x + alpha residual + bias
    # and Paddle leaves residual_out, mean and variance unwritten (the rows weight out alone there)
    ("fused_layer_norm", lambda x, w, b: fused_layer_norm(x, w, b, 1e-5)[0], const(3, 8), weights(8), const(8)),
    ("fused_layer_norm_all_outputs", lambda x, w, b, bias, residual: fused_layer_norm(
        x, w, b, 1e-6, residual_alpha=0.5, bias=bias, residual=residual), const(3, 8), weights(8), const(8), const(8),
     const(3, 8)),
    ("fused_layer_norm_axis2", lambda x, w, residual: fused_layer_norm(x, w, None, 1e-5, 1.0, 2, residual=residual)[
        :2], const(2, 3, 4), weights(4), const(2, 3, 4)),
    ("fused_layer_norm_axis1_3d", lambda x, b, bias, residual: fused_layer_norm(
        x, None, b, 1e-5, 2.0, 1, bias=bias, residual=residual)[:2], const(2, 3, 4), const(12), const(3, 4),
     const(2, 3, 4)),
    ("fused_layer_norm_bias_ignored", lambda x, w, bias: fused_layer_norm(x, w, None, 1e-5, bias=bias)[0],
     const(2, 6), weights(6), const(6)),
    ("fused_layer_norm_no_norm", lambda x, bias, residual: fused_layer_norm(
        x, None, None, 1e-5, 0.7, bias=bias, residual=residual)[0], const(2, 6), const(6), const(2, 6)),
    ("fused_layer_norm_no_norm_bias", lambda x, bias: fused_layer_norm(x, None, None, 1e-5, bias=bias)[0],
     const(2, 6), const(6)),
    ("margin_cross_entropy_arcface", lambda x, label: F.margin_cross_entropy(x, label, scale=4.0), unit(3, 5),
     given([1, 0, 4], "int64")),
    ("margin_cross_entropy_cosface", lambda x, label: F.margin_cross_entropy(
        x, label, margin1=1.0, margin2=0.0, margin3=0.35, scale=3.0, reduction="sum"), unit(3, 5),
     given([[2], [0], [3]], "int64")),
    ("margin_cross_entropy_softmax", lambda x, label: F.margin_cross_entropy(
        x, label, margin1=1.35, margin2=0.2, margin3=0.1, scale=2.0, return_softmax=True, reduction=None), unit(3, 4),
     given([3, 1, 0], "int64")),
)
