"""Cases for the suites' multi-scale deformable attention (gradc.ops.ms_deform_attn): Paddle3D's ms_deform_attn and
PaddleDetection's ms_deformable_attn, two levels of different sizes. The sampling points keep 0.15 from the pixel
lattice of their level (where the bilinear weights have kinks); some lie partly or wholly outside the map, so its
zero padding and the skipped points matter. Then the grad ops' makers, through the grads of Value and
AttentionWeights, and of the sampling locations too (second_order_variants.py makes a second-order case of every
first-order one; third derivatives in sampling_orders.py)."""

import numpy as np

import gradc
from gradc.layers import ProgramBuilder

from . import Case, rng

r = rng(71)
SHAPES = np.array([[3, 4], [2, 3]], np.int64)
STARTS = np.array([0, 12], np.int64)


def locations(batch: int, queries: int, heads: int, points: int) -> np.ndarray:
    """(x, y) in [0, 1] units whose pixel positions x W - 1/2, y H - 1/2 lie 0.15 or more off the lattice, from
    one pixel outside the map to one past its end."""
    loc = np.empty((batch, queries, heads, len(SHAPES), points, 2))
    for level, (height, width) in enumerate(SHAPES):
        for axis, size in ((0, width), (1, height)):
            pixel = r.integers(-2, size + 1, loc.shape[:3] + (points,)) + r.uniform(0.15, 0.85,
                                                                                    loc.shape[:3] + (points,))
            loc[:, :, :, level, :, axis] = (pixel + 0.5) / size
    return loc


def inputs(variant: str, batch: int = 2, queries: int = 3, heads: int = 2, channels: int = 3, points: int = 2):
    value = r.standard_normal((batch, int((SHAPES[:, 0] * SHAPES[:, 1]).sum()), heads, channels))
    loc, attn = locations(batch, queries, heads, points), r.uniform(0.1, 1.0, (batch, queries, heads, 2, points))
    if variant == "ms_deform_attn":
        return {"value": value, "sampling_locations": loc, "attention_weights": attn, "spatial_shapes": SHAPES,
                "level_start_index": STARTS}
    return {"Value": value, "SamplingLocations": loc, "AttentionWeights": attn, "SpatialShapes": SHAPES,
            "LevelIndex": STARTS}


CASES = [
    Case("ms_deform_attn", inputs("ms_deform_attn"), {"im2col_step": 64}),
    # more batches than im2col_step: where Paddle3D's CUDA backward reads the wrong dOut (docs/ext-ops.md)
    Case("ms_deform_attn", inputs("ms_deform_attn", batch=4, queries=2, heads=1, channels=2, points=3),
         {"im2col_step": 2}),
    Case("ms_deformable_attn", inputs("ms_deformable_attn")),
]


def penalty_on_grads(variant: str, read_locations: bool = False) -> dict:
    """loss1 = sum(W1 * F(value, locations, weights)), loss2 = the weighted sums of the grads of value and weights
    (and, ``read_locations``, of the locations'): d loss2 / d(value, locations, weights, W1)."""
    case = inputs(variant, batch=1, queries=2)
    value, _, _, loc, attn, out = ("value", "spatial_shapes", "level_start_index", "sampling_locations",
                                   "attention_weights", "out") if variant == "ms_deform_attn" else (
        "Value", "SpatialShapes", "LevelIndex", "SamplingLocations", "AttentionWeights", "Out")
    net = ProgramBuilder()
    names = {slot: net.data(slot.lower(), list(v.shape), "float64" if v.dtype == np.float64 else "int64",
                            stop_gradient=v.dtype != np.float64) for slot, v in case.items()}
    w1 = net.data("w1", [1, 2, 6], "float64", stop_gradient=False)
    attrs = {"im2col_step": 64} if variant == "ms_deform_attn" else {}
    result = net.op(variant, dict(names), attrs, outputs=[out])[0]
    loss1 = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": result, "Y": w1})[0]}, {"reduce_all": True})[0]
    gradc.append_backward(net.program, loss1)
    feed = {names[slot]: v for slot, v in case.items()} | {w1: r.standard_normal((1, 2, 6))}
    terms = []
    for slot in (value, attn, loc)[:2 + read_locations]:
        weight = net.data(f"w_{slot.lower()}", list(case[slot].shape), "float64")
        feed[weight] = r.standard_normal(case[slot].shape)
        product = net.op("elementwise_mul", {"X": names[slot] + "@GRAD", "Y": weight})[0]
        terms.append(net.op("reduce_sum", {"X": product}, {"reduce_all": True})[0])
    loss2 = net.op("sum", {"X": terms})[0]
    return {"program": net.program, "feed": feed, "loss": loss2, "wrt": [names[value], names[loc], names[attn], w1]}


CASES += [Case(f"{variant}_grad", {}, program=lambda variant=variant, read=read: penalty_on_grads(variant, read))
          for variant in ("ms_deform_attn", "ms_deformable_attn") for read in (False, True)]
