"""Deformable convolution beyond the registry walks: values and gradients at the pixel lattice and the image's
borders against numbers Paddle 3.3.1 computed, the offset layout (per deformable group, per kernel point, (dy, dx))
against a direct loop over Paddle's formulas, and where gradc departs from Paddle: im2col_step changes no gradient,
Mask@GRAD comes without Offset@GRAD, a NaN offset has zero gradients."""

import numpy as np
import pytest

from gradc import Executor, Scope, append_backward, gradients
from gradc.layers import ProgramBuilder

ATTRS = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1, "deformable_groups": 1}


def run(op_type, inputs, attrs, wrt=None, weights=None):
    """(Output, {slot: d sum(weights * Output) / d input}) through gradc's backward, for the slots in ``wrt``
    (default: all)."""
    net = ProgramBuilder()
    wrt = list(inputs) if wrt is None else wrt
    names = {slot: net.data(slot.lower(), list(a.shape), a.dtype.name, stop_gradient=slot not in wrt)
             for slot, a in inputs.items()}
    out = net.op(op_type, names, attrs, outputs=["Output"])[0]
    feed = {names[slot]: a for slot, a in inputs.items()}
    if weights is not None:
        feed["weights"] = weights
        out_weighted = net.op("elementwise_mul", {"X": out, "Y": net.data("weights", list(weights.shape),
                                                                           weights.dtype.name)})[0]
    loss = net.op("reduce_sum", {"X": out if weights is None else out_weighted}, {"reduce_all": True})[0]
    append_backward(net.program, loss)
    values = Executor().run(net.program, feed, [out, *(names[slot] + "@GRAD" for slot in wrt)], Scope())
    return values[0], dict(zip(wrt, values[1:]))


# a 1x1 kernel of weight 1 reads X at (oh + dy, ow + dx), twice (Mask 2): on pixels, at -1 (nothing), half outside,
# on the last column and row, NaN, beyond the last column, just above the row below the image
SQUARES = (np.arange(12.0).reshape(1, 1, 3, 4) ** 2) / 10
DY = [[0, -1, -0.5, 0.5], [1, np.nan, 0.25, 0], [0.999, -2.5, -0.3, 0]]
DX = [[0, 0, 0.25, 0], [-0.75, 0, 1.5, 1], [0, 0, -0.6, 0.5]]
POINTS = {"Input": SQUARES, "Offset": np.array([[DY, DX]]), "Filter": np.ones((1, 1, 1, 1)),
          "Mask": np.full((1, 1, 3, 4), 2.0)}
# Paddle 3.3.1's, but at the NaN offset (row 1, column 1): Paddle's Offset@GRAD there is [5, NaN] and its
# Mask@GRAD NaN (its grad kernel takes the NaN point for inside the image); gradc's are 0, as the forward reads
# nothing there
PADDLE = {
    "Output": [[0, 0, 0.525, 5.8], [3.2, 0, 6.7, 0], [0.0128, 0.1, 14.168, 12.1]],
    "Input": [[2, 1, 0.75, 1.25], [0, 0.36, 0.24, 1.75], [0.502, 0.84, 0.56, 1.25]],
    "Offset": [[[3.2, 0, 1.05, 8], [-3.2, 0, 7.2, 0], [-12.8, 0.2, 11.84, -12.1]],
               [[0.2, 0, 0.5, -5.8], [12.8, 0, -13.4, 0], [0.0034, 0.3, 3.32, -24.2]]],
    "Filter": [[[[42.6058]]]],
    "Mask": [[0, 0, 0.2625, 2.9], [1.6, 0, 3.35, 0], [0.0064, 0.05, 7.084, 6.05]],
}


def test_values_and_gradients_match_paddle_on_the_lattice_and_at_the_borders():
    out, grads = run("deformable_conv", POINTS, ATTRS)
    np.testing.assert_allclose(out[0, 0], PADDLE["Output"], rtol=1e-12, atol=1e-12)
    for slot, grad in grads.items():
        np.testing.assert_allclose(grad.reshape(np.shape(PADDLE[slot])), PADDLE[slot], rtol=1e-12, atol=1e-12,
                                   err_msg=slot)


def reference(x, offset, filt, mask, strides, paddings, dilations, groups, deformable_groups):
    """Paddle's formulas one sampling point at a time."""
    n, c, height, width = x.shape
    o, cg, kh, kw = filt.shape
    oh, ow = offset.shape[2:]
    per_group = c // deformable_groups

    def pixel(b, ch, row, col):
        return x[b, ch, row, col] if 0 <= row < height and 0 <= col < width else 0.0

    cols = np.zeros((n, c, kh, kw, oh, ow))
    for b, ch, i, j, y, z in np.ndindex(cols.shape):
        g, k = ch // per_group, i * kw + j
        h = y * strides[0] - paddings[0] + i * dilations[0] + offset[b, g * 2 * kh * kw + 2 * k, y, z]
        w = z * strides[1] - paddings[1] + j * dilations[1] + offset[b, g * 2 * kh * kw + 2 * k + 1, y, z]
        if -1 < h < height and -1 < w < width:
            h0, w0 = int(np.floor(h)), int(np.floor(w))
            a, e = h - h0, w - w0
            value = ((1 - a) * (1 - e) * pixel(b, ch, h0, w0) + (1 - a) * e * pixel(b, ch, h0, w0 + 1)
                     + a * (1 - e) * pixel(b, ch, h0 + 1, w0) + a * e * pixel(b, ch, h0 + 1, w0 + 1))
            cols[b, ch, i, j, y, z] = value * (1.0 if mask is None else mask[b, g * kh * kw + k, y, z])
    out = np.zeros((n, o, oh, ow))
    for b, oc in np.ndindex(n, o):
        group = oc // (o // groups)
        out[b, oc] = np.einsum("cij,cijyz->yz", filt[oc], cols[b, group * cg:(group + 1) * cg])
    return out


@pytest.mark.parametrize("masked", [True, False])
def test_the_offset_layout_is_per_deformable_group_per_kernel_point_dy_then_dx(masked):
    rng = np.random.default_rng(7)
    attrs = {"strides": [2, 1], "paddings": [1, 0], "dilations": [1, 2], "groups": 2, "deformable_groups": 2}
    x, filt = rng.standard_normal((2, 4, 5, 6)), rng.standard_normal((4, 2, 2, 3))
    inputs = {"Input": x, "Offset": rng.uniform(-2, 2, (2, 24, 3, 2)), "Filter": filt}
    if masked:
        inputs["Mask"] = rng.uniform(0, 1, (2, 12, 3, 2))
    out, _ = run("deformable_conv" if masked else "deformable_conv_v1", inputs, attrs)
    expected = reference(x, inputs["Offset"], filt, inputs.get("Mask"), **attrs)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_v1_is_v2_with_a_unit_mask():
    rng = np.random.default_rng(3)
    inputs = {"Input": rng.standard_normal((1, 2, 4, 4)), "Offset": rng.uniform(-1.5, 1.5, (1, 18, 4, 4)),
              "Filter": rng.standard_normal((3, 2, 3, 3))}
    attrs = {**ATTRS, "paddings": [1, 1]}
    out_v1, grads_v1 = run("deformable_conv_v1", inputs, attrs)
    out_v2, grads_v2 = run("deformable_conv", {**inputs, "Mask": np.ones((1, 9, 4, 4))}, attrs)
    np.testing.assert_allclose(out_v1, out_v2, rtol=1e-13)
    for slot, grad in grads_v1.items():
        np.testing.assert_allclose(grad, grads_v2[slot], rtol=1e-13, err_msg=slot)


def test_im2col_step_changes_no_gradient():
    """Paddle 3.3.1's grads with im2col_step 2 on a batch of 4 are wrong, and all zeros with 64."""
    rng = np.random.default_rng(5)
    inputs = {"Input": rng.standard_normal((4, 2, 4, 4)), "Offset": rng.uniform(-1.5, 1.5, (4, 18, 4, 4)),
              "Filter": rng.standard_normal((3, 2, 3, 3)), "Mask": rng.uniform(0, 1, (4, 9, 4, 4))}
    weights = rng.standard_normal((4, 3, 4, 4))
    results = [run("deformable_conv", inputs, {**ATTRS, "paddings": [1, 1], "im2col_step": step}, weights=weights)
               for step in (1, 2, 64)]
    for out, grads in results[1:]:
        np.testing.assert_array_equal(out, results[0][0])
        for slot, grad in grads.items():
            np.testing.assert_array_equal(grad, results[0][1][slot], err_msg=slot)
    assert all(np.abs(grad).max() > 0.1 for grad in results[0][1].values())


def test_mask_gets_its_gradient_without_the_offsets_getting_theirs():
    """Paddle 3.3.1 computes Mask@GRAD only together with Offset@GRAD."""
    _, with_offsets = run("deformable_conv", POINTS, ATTRS)
    _, alone = run("deformable_conv", POINTS, ATTRS, wrt=["Mask"])
    np.testing.assert_array_equal(alone["Mask"], with_offsets["Mask"])


def test_float32_in_float32_out():
    inputs = {slot: np.nan_to_num(a).astype(np.float32) for slot, a in POINTS.items()}
    out, grads = run("deformable_conv", inputs, ATTRS)
    assert out.dtype == np.float32 and all(grad.dtype == np.float32 for grad in grads.values())
    np.testing.assert_allclose(out[0, 0, 1], [3.2, 5.0, 6.7, 0], rtol=1e-6)   # offset 0 for NaN: 2 X[1, 1]


def test_on_the_pixel_lattice_the_offsets_second_derivative_is_the_cell_below_and_right():
    """Offsets 0 put every point on a pixel, where the bilinear weights have kinks: the second derivative is that
    of the cell the first-order kernel reads (below and right of the point), the cross difference
    X[h, w] - X[h, w+1] - X[h+1, w] + X[h+1, w+1] (along one axis the weights are linear)."""
    rng = np.random.default_rng(7)
    x, v = rng.standard_normal((1, 1, 3, 4)), rng.standard_normal((1, 2, 3, 4))
    net = ProgramBuilder()
    names = {slot: net.data(slot.lower(), shape, "float64", stop_gradient=False)
             for slot, shape in (("Input", [1, 1, 3, 4]), ("Offset", [1, 2, 3, 4]), ("Filter", [1, 1, 1, 1]))}
    out = net.op("deformable_conv_v1", names, ATTRS, outputs=["Output"])[0]
    append_backward(net.program, net.op("reduce_sum", {"X": out}, {"reduce_all": True})[0])
    weighted = net.op("elementwise_mul", {"X": names["Offset"] + "@GRAD", "Y": net.data("v", [1, 2, 3, 4], "float64")})
    (grad,) = gradients(net.program, net.op("reduce_sum", {"X": weighted[0]}, {"reduce_all": True})[0],
                        [names["Offset"]])
    feed = {names["Input"]: x, names["Offset"]: np.zeros((1, 2, 3, 4)), names["Filter"]: np.ones((1, 1, 1, 1)), "v": v}
    (value,) = Executor().run(net.program, feed, [grad], Scope())
    cross = x[0, 0, :-1, :-1] - x[0, 0, :-1, 1:] - x[0, 0, 1:, :-1] + x[0, 0, 1:, 1:]
    np.testing.assert_allclose(value[0, 0, :2, :3], cross * v[0, 1, :2, :3], rtol=1e-12)   # dy's: times dx's v
    np.testing.assert_allclose(value[0, 1, :2, :3], cross * v[0, 0, :2, :3], rtol=1e-12)


def test_an_empty_batch_gives_empty_output_and_gradients():
    inputs = {"Input": np.zeros((0, 2, 4, 4)), "Offset": np.zeros((0, 18, 4, 4)), "Filter": np.ones((3, 2, 3, 3)),
              "Mask": np.zeros((0, 9, 4, 4))}
    out, grads = run("deformable_conv", inputs, {**ATTRS, "paddings": [1, 1]})
    assert out.shape == (0, 3, 4, 4)
    assert {slot: grad.shape for slot, grad in grads.items()} == {slot: a.shape for slot, a in inputs.items()}
    assert not grads["Filter"].any()
