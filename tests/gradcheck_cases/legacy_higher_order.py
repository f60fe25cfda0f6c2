"""Cases for Paddle's last legacy higher-order op types gradc lacked: the third-derivative ops of unary math
(gradc.ops.triple_grad_unary), each with and without one of its two cotangents, acos_double_grad, and the norms'
batch_norm_grad_grad and instance_norm_double_grad (gradc.ops.norm_second) in their modes and with inputs absent."""

import numpy as np

from . import Case, rng

r = rng(47)


def _triple(type: str, value, slots: tuple[str, ...], attrs=None, dropped: str | None = None, more=None):
    inputs = {slot: value if i == 0 else r.standard_normal(value.shape) for i, slot in enumerate(slots)
              if slot != dropped}
    return Case(type, {**inputs, **(more or {})}, attrs or {}, wrt=[s for s in slots if s != dropped])


_SIN = ("X", "grad_out_forward", "grad_x_grad_forward", "grad_x@GRAD", "grad_out_grad@GRAD")
_SIGMOID = ("Out", "fwd_grad_out", "grad_grad_x", "grad_out@GRAD", "grad_grad_out@GRAD")
_POW = ("X", "grad_out", "grad_grad_x", "grad_x@GRAD", "grad_grad_out@GRAD")

CASES = [
    _triple("sin_triple_grad", r.standard_normal((3, 4)), _SIN),
    _triple("sin_triple_grad", r.standard_normal((2, 3)), _SIN, dropped="grad_out_grad@GRAD"),
    _triple("cos_triple_grad", r.standard_normal((3, 4)), _SIN),
    _triple("cos_triple_grad", r.standard_normal((2, 3)), _SIN, dropped="grad_x@GRAD"),
    _triple("sigmoid_triple_grad", 1 / (1 + np.exp(-r.standard_normal((3, 4)))), _SIGMOID),
    _triple("sigmoid_triple_grad", 1 / (1 + np.exp(-r.standard_normal((2, 3)))), _SIGMOID, dropped="grad_out@GRAD"),
    _triple("pow_triple_grad", r.uniform(0.5, 2.0, (3, 4)), _POW, {"factor": 3.5}),
    _triple("pow_triple_grad", r.uniform(0.5, 2.0, (2, 3)), _POW, more={"FactorTensor": np.array([2.5])}),
    # acos_double_grad (Paddle 3.3.1 registers no kernel of it), inside (-1, 1) away from the poles
    Case("acos_double_grad", {"x": r.uniform(-0.8, 0.8, (3, 4)), "grad_out": r.standard_normal((3, 4)),
                              "grad_x@GRAD": r.standard_normal((3, 4))}),
]


def _norm_case(type: str, shape, channels: int, slots: tuple[str, ...], attrs=None, dropped=(), more=None):
    """A norm's double grad at x, its scale, its first grad's dY and the grads of its outputs (``dropped`` absent)."""
    x = r.standard_normal(shape)
    values = dict(zip(slots, (x, r.standard_normal(channels), r.standard_normal(shape), r.standard_normal(shape),
                              r.standard_normal(channels), r.standard_normal(channels))))
    inputs = {slot: value for slot, value in values.items() if slot not in dropped}
    return Case(type, {**inputs, **(more or {})}, attrs or {}, wrt=list(inputs))


_BN = ("X", "Scale", "DY", "DDX", "DDScale", "DDBias")
_BN_SAVED = {"SavedMean": np.zeros(2), "SavedVariance": np.ones(2)}   # read by no kernel: the batch's from X
_RUNNING = {"Mean": np.array([0.1, -0.2]), "Variance": np.array([0.8, 1.3])}
_IN = ("x", "scale", "grad_y", "grad_x@GRAD", "grad_scale@GRAD", "grad_bias@GRAD")
CASES += [
    # batch_norm_grad_grad: a WGAN-GP penalty through BatchNorm; NHWC; global statistics; without DDX, DDScale, Scale
    _norm_case("batch_norm_grad_grad", (3, 2, 2, 3), 2, _BN, {"epsilon": 1e-3}, more=_BN_SAVED),
    _norm_case("batch_norm_grad_grad", (3, 2, 3, 2), 2, _BN, {"data_layout": "NHWC"}, more=_BN_SAVED),
    _norm_case("batch_norm_grad_grad", (4, 2, 3), 2, _BN, {"use_global_stats": True}, more={**_BN_SAVED, **_RUNNING}),
    _norm_case("batch_norm_grad_grad", (3, 2, 4), 2, _BN, dropped=("DDX",), more=_BN_SAVED),
    _norm_case("batch_norm_grad_grad", (3, 2, 4), 2, _BN, dropped=("DDScale", "DDBias"), more=_BN_SAVED),
    _norm_case("batch_norm_grad_grad", (3, 2, 4), 2, _BN, dropped=("Scale", "DDScale"), more=_BN_SAVED),   # no weight
    # instance_norm_double_grad, and without grad_x@GRAD, without scale
    _norm_case("instance_norm_double_grad", (2, 2, 2, 3), 2, _IN, {"epsilon": 1e-3},
               more={"saved_mean": np.zeros(4), "saved_variance": np.ones(4)}),
    _norm_case("instance_norm_double_grad", (2, 2, 5), 2, _IN, dropped=("grad_x@GRAD",),
               more={"saved_mean": np.zeros(4), "saved_variance": np.ones(4)}),
    _norm_case("instance_norm_double_grad", (2, 3, 4), 3, _IN, dropped=("scale", "grad_scale@GRAD"),
               more={"saved_mean": np.zeros(6), "saved_variance": np.ones(6)}),
]
