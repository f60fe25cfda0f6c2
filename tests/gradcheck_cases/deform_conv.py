"""Cases for deformable convolution: v2 (Mask) and v1, with paddings, strides, dilations, groups and deformable
groups. The offsets keep every sampling point 0.15 from the pixel lattice (where the bilinear weights have kinks,
the image's edges included); some points lie outside the image, so its zero padding matters. Then the grad ops'
makers through the grads of Input, Filter and Mask alone (second_order_variants.py makes a second-order case of
every first-order one, the offsets' grad differentiated too; third and fourth derivatives in sampling_orders.py)."""


import gradc
from gradc.layers import ProgramBuilder

from . import Case, rng

r = rng(53)


def randn(*shape):
    return r.standard_normal(shape)


def offsets(*shape):
    """Offsets whose fractional parts lie in [0.15, 0.85]: the points they move integer places to stay off
    the lattice, mostly within 2 pixels of them."""
    return r.integers(-2, 2, shape) + r.uniform(0.15, 0.85, shape)


def deform(x, w, out_sizes, masked=True, **attrs):
    """A case of x [N, C, H, W] and filter w [O, C/g, kh, kw] with offsets (and a mask) for ``out_sizes``."""
    n, points, dg = x.shape[0], w.shape[2] * w.shape[3], attrs.get("deformable_groups", 1)
    inputs = {"Input": x, "Offset": offsets(n, 2 * dg * points, *out_sizes), "Filter": w}
    if masked:
        inputs["Mask"] = r.uniform(0.2, 1.0, (n, dg * points, *out_sizes))
    return Case("deformable_conv" if masked else "deformable_conv_v1", inputs, attrs)


CASES = [
    deform(randn(2, 2, 4, 4), randn(3, 2, 3, 3), (4, 4), paddings=[1, 1], im2col_step=1),
    deform(randn(1, 4, 5, 5), randn(4, 2, 3, 3), (3, 3), strides=[2, 2], paddings=[1, 1], groups=2,
           deformable_groups=2),
    deform(randn(1, 2, 5, 7), randn(2, 2, 2, 3), (3, 2), dilations=[2, 2], strides=[1, 2]),
    deform(randn(2, 2, 4, 4), randn(2, 1, 3, 3), (2, 2), masked=False, groups=2, deformable_groups=2),
    deform(randn(1, 3, 5, 4), randn(4, 3, 2, 2), (2, 2), masked=False, paddings=[0, 1], strides=[2, 3]),
]


def _penalty_on_grads(masked: bool, attrs: dict) -> dict:
    """loss1 = sum(W1 * deform(Input, Offset, Filter, Mask)), loss2 = the weighted sums of the grads of Input,
    Filter (and Mask): d loss2 / d(Input, Offset, Filter, Mask, W1)."""
    case = deform(randn(2, 2, 4, 4), randn(2, 1, 3, 3), (2, 2), masked, **attrs)
    net = ProgramBuilder()
    names = {slot: net.data(slot.lower(), list(value.shape), "float64", stop_gradient=False)
             for slot, value in case.inputs.items()}
    w1 = net.data("w1", [2, 2, 2, 2], "float64", stop_gradient=False)
    out = net.op(case.op, {slot: name for slot, name in names.items()}, attrs, outputs=["Output"])[0]
    loss1 = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": out, "Y": w1})[0]}, {"reduce_all": True})[0]
    gradc.append_backward(net.program, loss1)
    feed = {name: case.inputs[slot] for slot, name in names.items()} | {w1: randn(2, 2, 2, 2)}
    terms = []
    for slot in ("Input", "Filter", "Mask")[:2 + masked]:
        weight = net.data(f"w_{slot}", list(case.inputs[slot].shape), "float64")
        feed[weight] = randn(*case.inputs[slot].shape)
        product = net.op("elementwise_mul", {"X": names[slot] + "@GRAD", "Y": weight})[0]
        terms.append(net.op("reduce_sum", {"X": product}, {"reduce_all": True})[0])
    loss2 = net.op("sum", {"X": terms})[0]
    return {"program": net.program, "feed": feed, "loss": loss2, "wrt": [*names.values(), w1]}


SECOND_ORDER = [("deformable_conv_grad", True, {"paddings": [1, 1], "strides": [2, 2], "groups": 2}),
                ("deformable_conv_v1_grad", False, {"paddings": [1, 1], "strides": [2, 2], "groups": 2,
                                                    "deformable_groups": 2})]
CASES += [Case(op, {}, attrs, program=lambda masked=masked, attrs=attrs: _penalty_on_grads(masked, attrs))
          for op, masked, attrs in SECOND_ORDER]
