"""Cases for the sampling ops: affine_grid 2-D and 3-D both align_corners ways (and its OutputShape input),
grid_sampler in every mode x padding_mode x align_corners, 4-D and 5-D, temporal_shift in both layouts.
Grid points stay off the pixel lattice and the clamps/folds (bilinear kinks) and off the rounding ties of
nearest; some lie outside [-1, 1] so padding matters. Then the grad ops' own makers (second derivatives; every
first-order case above is one again in second_order_variants.py, Grid@GRAD differentiated too; third and fourth
derivatives in sampling_orders.py)."""

import numpy as np

import gradc
from gradc.layers import ProgramBuilder

from . import Case, rng
from .second_order import second_order

r = rng(29)


def randn(*shape):
    return r.standard_normal(shape)


def grid(*shape, size):
    """Grid points in [-1.3, 1.3] whose pixel positions (for every size in ``size``, both align_corners ways)
    keep 0.1 from integers and half-integers."""
    points = r.uniform(-1.3, 1.3, shape)
    while True:
        positions = [(points + 1) * s / 2 + shift for s in size for shift in (0, -0.5, 0.5)]
        near = np.logical_or.reduce([np.abs(p * 2 - np.round(p * 2)) < 0.2 for p in positions])
        if not near.any():
            return points
        points[near] = r.uniform(-1.3, 1.3, int(near.sum()))


def sampler(x, g, **attrs):
    return Case("grid_sampler", {"X": x, "Grid": g}, attrs)


SAMPLER_ATTRS = [dict(mode=mode, padding_mode=padding, align_corners=corners)
                 for mode in ("bilinear", "nearest") for padding in ("zeros", "border", "reflection")
                 for corners in (True, False)]

CASES = [
    Case("affine_grid", {"Theta": randn(2, 2, 3)}, {"output_shape": [2, 1, 3, 4], "align_corners": True}),
    Case("affine_grid", {"Theta": randn(2, 2, 3)}, {"output_shape": [2, 1, 1, 4], "align_corners": False}),
    Case("affine_grid", {"Theta": randn(1, 3, 4)}, {"output_shape": [1, 2, 2, 3, 2], "align_corners": False}),
    Case("affine_grid", {"Theta": randn(1, 2, 3), "OutputShape": np.array([1, 1, 2, 5], np.int32)},
         {"output_shape": [1, 1, 3, 3]}),
    *[sampler(randn(2, 2, 3, 4), grid(2, 3, 2, 2, size=(3, 4)), **attrs) for attrs in SAMPLER_ATTRS],
    *[sampler(randn(1, 2, 3, 2, 4), grid(1, 2, 2, 3, 3, size=(3, 2, 4)), **attrs) for attrs in SAMPLER_ATTRS[::3]],
    Case("temporal_shift", {"X": randn(6, 8, 2, 2)}, {"seg_num": 3, "shift_ratio": 0.25}),
    Case("temporal_shift", {"X": randn(4, 2, 3, 5)}, {"seg_num": 2, "shift_ratio": 0.4, "data_format": "NHWC"}),
]


# second derivatives: affine_grid and temporal_shift through second_order's weighted sums of every input grad;
# grid_sampler through X@GRAD alone (a penalty on the input's gradient)
def _penalty_on_x_grad(attrs: dict) -> dict:
    """loss1 = sum(W1 * grid_sampler(X, Grid)), loss2 = sum(W2 * X@GRAD): d loss2 / d(X, Grid, W1)."""
    net = ProgramBuilder()
    x, g, w1, w2 = (net.data(name, shape, "float64") for name, shape in
                    (("x", [1, 2, 3, 4]), ("g", [1, 2, 3, 2]), ("w1", [1, 2, 2, 3]), ("w2", [1, 2, 3, 4])))
    for name in (x, g, w1):
        net.block.var(name).stop_gradient = False
    out = net.op("grid_sampler", {"X": x, "Grid": g}, attrs, outputs=["Output"])[0]
    loss1 = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": out, "Y": w1})[0]}, {"reduce_all": True})[0]
    gradc.append_backward(net.program, loss1)
    loss2 = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": x + "@GRAD", "Y": w2})[0]},
                   {"reduce_all": True})[0]
    feed = {x: randn(1, 2, 3, 4), g: grid(1, 2, 3, 2, size=(3, 4)), w1: randn(1, 2, 2, 3), w2: randn(1, 2, 3, 4)}
    return {"program": net.program, "feed": feed, "loss": loss2, "wrt": [x, g, w1]}


CASES += [
    second_order("affine_grid", {"Theta": randn(2, 2, 3)}, {"output_shape": [2, 1, 3, 4], "align_corners": False}),
    second_order("affine_grid", {"Theta": randn(1, 3, 4)}, {"output_shape": [1, 1, 2, 2, 3]}),
    second_order("temporal_shift", {"X": randn(4, 4, 2, 2)}, {"seg_num": 2, "shift_ratio": 0.25}),
    second_order("temporal_shift", {"X": randn(4, 2, 2, 6)}, {"seg_num": 2, "data_format": "NHWC"}),
    second_order("grid_sampler", {"X": randn(1, 2, 3, 4), "Grid": grid(1, 2, 3, 2, size=(3, 4))},
                 {"mode": "nearest", "padding_mode": "reflection", "align_corners": False},
                 grad_type="grid_sampler_grad"),
    # the grid alone wanted (a fed image): the grad op still writes X@GRAD, into a temporary, as Paddle's kernel needs
    Case("grid_sampler", {"X": randn(1, 2, 3, 4), "Grid": grid(1, 2, 3, 2, size=(3, 4))}, wrt=["Grid"]),
    *[Case("grid_sampler_grad", {}, attrs, program=lambda attrs=attrs: _penalty_on_x_grad(attrs))
      for attrs in (dict(padding_mode="zeros", align_corners=True), dict(padding_mode="border", align_corners=False),
                    dict(padding_mode="reflection", align_corners=False))],
]



def _spatial_transformer_penalty(padding_mode: str) -> dict:
    """A spatial transformer: Grid = affine_grid(Theta), loss1 = sum(W1 * tanh(grid_sampler(X, Grid))), and a
    gradient penalty on Theta's grad, loss2 = sum(Theta@GRAD^2), which reads Grid@GRAD: d loss2 / d(Theta, X, W1)."""
    net = ProgramBuilder()
    theta, x, w1 = (net.data(name, shape, "float64", stop_gradient=False) for name, shape in
                    (("theta", [1, 2, 3]), ("x", [1, 2, 4, 5]), ("w1", [1, 2, 3, 4])))
    attrs = {"mode": "bilinear", "padding_mode": padding_mode, "align_corners": False}
    g = net.op("affine_grid", {"Theta": theta}, {"output_shape": [1, 2, 3, 4], "align_corners": False},
               outputs=["Output"])[0]
    out = net.op("tanh", {"X": net.op("grid_sampler", {"X": x, "Grid": g}, attrs, outputs=["Output"])[0]})[0]
    loss1 = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": out, "Y": w1})[0]}, {"reduce_all": True})[0]
    gradc.append_backward(net.program, loss1)
    squared = net.op("elementwise_mul", {"X": theta + "@GRAD", "Y": theta + "@GRAD"})[0]
    loss2 = net.op("reduce_sum", {"X": squared}, {"reduce_all": True})[0]
    # rotated, scaled and shifted: every sampling position keeps 0.008 or more from the pixel lattice (and the folds)
    feed = {theta: np.array([[[0.9, -0.3, 0.1], [0.25, 1.1, -0.2]]]), x: randn(1, 2, 4, 5), w1: randn(1, 2, 3, 4)}
    return {"program": net.program, "feed": feed, "loss": loss2, "wrt": [theta, x, w1]}


CASES += [Case("grid_sampler_grad", {}, {"padding_mode": mode},
               program=lambda mode=mode: _spatial_transformer_penalty(mode)) for mode in ("zeros", "reflection")]
