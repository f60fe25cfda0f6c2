"""Cases for gradc.ops.extra_math and the second derivatives of its grad ops: gammaln away from its poles, gammaincc
on both sides of its split (y < a: the series; y >= a: the continued fraction), multiplex picking from 3 tensors,
reduce_as over leading and size-1 dims, swiglu with and without y, norm along each axis, margin_cross_entropy with
ArcFace, CosFace, SphereFace and the combined margins (cosines inside (-1, 1), where acos is smooth)."""

from __future__ import annotations

import numpy as np

from . import Case, rng
from .second_order import second_order
from .special_math import between_poles

r = rng(41)

SHAPES = r.uniform(0.3, 6.0, (3, 4))
POINTS = np.concatenate([SHAPES[:, :2] * r.uniform(0.2, 0.9, (3, 2)), SHAPES[:, 2:] * r.uniform(1.1, 3.0, (3, 2))],
                        axis=1)
LARGE = np.array([2e6, 1e9, 1e12])   # Temme's expansion, around y = x within 2 standard deviations
IDS = np.array([[2], [0], [1], [2]])
LABELS = np.array([[1], [0], [4]])
MARGINS = [{"margin1": 1.0, "margin2": 0.5, "margin3": 0.0, "scale": 4.0},    # ArcFace
           {"margin1": 1.0, "margin2": 0.0, "margin3": 0.35, "scale": 3.0},   # CosFace
           {"margin1": 1.35, "margin2": 0.2, "margin3": 0.1, "scale": 2.0},   # combined
           {"margin1": 1.35, "margin2": 0.0, "margin3": 0.0, "scale": 2.5, "return_softmax": True}]   # SphereFace


def rms_inputs(bias: bool = False, residual: bool = False, norm_bias: bool = False, rows: tuple = (2, 3),
               width: int = 4) -> dict:
    inputs = {"x": r.standard_normal((*rows, width)), "norm_weight": r.uniform(0.5, 1.5, width)}
    if bias:
        inputs["bias"] = r.standard_normal(width)
    if residual:
        inputs["residual"] = r.standard_normal((*rows, width))
    if norm_bias:
        inputs["norm_bias"] = r.standard_normal(width)
    return inputs


RMS = {"begin_norm_axis": 2, "epsilon": 1e-5}


def cosines(*shape):
    return r.uniform(-0.85, 0.85, shape)


CASES = [
    Case("gammaln", {"x": between_poles(3, 4)}),
    Case("gammaln", {"x": r.uniform(5.0, 40.0, (2, 3))}),
    Case("gammaincc", {"x": SHAPES, "y": POINTS}, wrt=["y"]),
    Case("gammaincc", {"x": np.array([40.0, 80.0, 0.5]), "y": np.array([35.0, 90.0, 3.0])}, wrt=["y"]),
    Case("multiplex", {"X": [r.standard_normal((4, 3)) for _ in range(3)], "Ids": IDS}),
    Case("reduce_as", {"x": r.standard_normal((2, 3, 4)), "target": np.zeros((3, 1))}),
    Case("reduce_as", {"x": r.standard_normal((2, 3)), "target": np.zeros((2, 3))}),
    Case("swiglu", {"x": r.standard_normal((2, 3, 4))}),
    Case("swiglu", {"x": r.standard_normal((2, 3)), "y": r.standard_normal((2, 3))}),
    *[Case("norm", {"X": r.standard_normal((2, 3, 4))}, {"axis": axis, "epsilon": 1e-10}) for axis in (0, 1, -1)],
    *[Case("margin_cross_entropy", {"Logits": cosines(3, 5), "Label": LABELS}, margins) for margins in MARGINS],
    Case("fused_rms_norm_quant", rms_inputs(), RMS),
    Case("fused_rms_norm_quant", rms_inputs(bias=True, residual=True, norm_bias=True), RMS),
    Case("fused_rms_norm_quant", rms_inputs(bias=True), RMS),   # bias ignored without a residual: zero grad
    Case("fused_rms_norm_quant", rms_inputs(norm_bias=True, rows=(2,), width=6),
         {"begin_norm_axis": 1, "epsilon": 0.1}),
    Case("fused_rms_norm_quant", rms_inputs(residual=True), RMS, outputs={"out": 1, "residual_out": 1, "inv_var": 1}),
    second_order("gammaln", {"x": between_poles(2, 3)}, rtol=1e-4),
    second_order("gammaincc", {"x": SHAPES[:2], "y": POINTS[:2]}),
    Case("gammaincc", {"x": LARGE, "y": LARGE + [1.0, -0.5, 2.0] * np.sqrt(LARGE)}, wrt=["y"], eps=1.0),
    second_order("gammaincc", {"x": LARGE, "y": LARGE + [1.0, -0.5, 2.0] * np.sqrt(LARGE)}, eps=1.0),
    second_order("multiplex", {"X": [r.standard_normal((4, 3)) for _ in range(2)], "Ids": IDS % 2}, counts={"X": 2}),
    second_order("reduce_as", {"x": r.standard_normal((2, 3, 4)), "target": np.zeros((3, 1))}),
    second_order("swiglu", {"x": r.standard_normal((2, 4))}),
    second_order("swiglu", {"x": r.standard_normal((2, 3)), "y": r.standard_normal((2, 3))}),
    second_order("norm", {"X": r.standard_normal((2, 3))}, {"axis": 1}, grad_type="norm_grad"),
]
CASES += [second_order("fused_rms_norm_quant", rms_inputs(), RMS, grad_type="fused_rms_norm_quant_grad"),
          second_order("fused_rms_norm_quant", rms_inputs(bias=True), RMS, grad_type="fused_rms_norm_quant_grad"),
          second_order("fused_rms_norm_quant", rms_inputs(bias=True, residual=True, norm_bias=True), RMS,
                       grad_type="fused_rms_norm_quant_grad"),
          second_order("fused_rms_norm_quant", rms_inputs(norm_bias=True, rows=(2,), width=6),
                       {"begin_norm_axis": 1, "epsilon": 0.1}, grad_type="fused_rms_norm_quant_grad"),
          second_order("fused_rms_norm_quant", rms_inputs(residual=True), RMS, grad_type="fused_rms_norm_quant_grad")]
CASES += [second_order("margin_cross_entropy", {"Logits": cosines(3, 5), "Label": labels}, margins, rtol=1e-4)
          for margins, labels in zip(MARGINS, (LABELS, LABELS[:, 0], LABELS, LABELS[:, 0]))]
