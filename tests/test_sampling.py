"""The sampling family beyond the registry walks: grid_sampler's values and Grid gradients at the borders
and outside them, against numbers Paddle 3.3.1 computed (its subgradients at the clamps included), nearest's
rounding (half to even, in float32 as Paddle computes positions), 5-D grids, affine_grid's pixel coordinates
and its one-pixel dims, and temporal_shift's channel groups."""

import numpy as np
import pytest

from gradc import Executor, ProgramError, Scope, append_backward, gradients
from gradc.layers import ProgramBuilder
from gradc.pir import parse_pir, serialize_pir
from one_op import run


def grads_of_sum(op_type, inputs, attrs, out_slot):
    """(the op's output, {input slot: d sum(output) / d input}) through gradc's backward."""
    net = ProgramBuilder()
    names = {slot: net.data(slot.lower(), list(a.shape), a.dtype.name) for slot, a in inputs.items()}
    for name in names.values():
        net.block.var(name).is_parameter, net.block.var(name).stop_gradient = True, False
    out = net.op(op_type, names, attrs, outputs=[out_slot])[0]
    loss = net.op("reduce_sum", {"X": out}, {"reduce_all": True})[0]
    append_backward(net.program, loss)
    fetched = [out, *(name + "@GRAD" for name in names.values())]
    values = Executor().run(net.program, {names[s]: a for s, a in inputs.items()}, fetched, Scope())
    return values[0], dict(zip(inputs, values[1:]))


# X[0, 0] = (0..11)^2 / 10 as 3 x 4; grid points: both corners, outside, inside, outside in y only
SQUARES = (np.arange(12.0).reshape(1, 1, 3, 4) ** 2) / 10
POINTS = np.array([[-1.0, -1.0], [1.0, 1.0], [1.25, -1.5], [0.5, 0.25], [-0.875, 1.125]]).reshape(1, 1, 5, 2)
# (mode, padding_mode, align_corners) -> (Output, Grid@GRAD of sum(Output)), from Paddle 3.3.1, but for points that
# land exactly on the last pixel with border or reflection padding: there Paddle weighs in a cell outside X (minus
# the pixel's value times the scale), which is neither one-sided derivative. gradc takes the derivative from the
# cell below: (1, 1) [3.15, 7.2] where Paddle gives [-18.15, -12.1]; x of (1.25, -1.5) folded onto the last column
# without align_corners, -1.4 where Paddle gives 3.8.
PADDLE = {
    ("bilinear", "zeros", True): ([0.0, 12.1, 0.28125, 5.575, 5.87890625],
                                  [[0.15, 1.6], [-18.15, -12.1], [-0.675, 0.5625], [2.25, 6.6], [2.23125, -6.71875]]),
    ("bilinear", "zeros", False): ([0.0, 3.025, 0.0, 6.8, 1.5],
                                   [[0.0, 0.0], [-12.1, -9.075], [0.0, 0.0], [3.2, 10.2], [4.0, -7.2]]),
    ("bilinear", "border", True): ([0.0, 12.1, 0.9, 5.575, 6.71875],
                                   [[0.15, 1.6], [3.15, 7.2], [0.0, 0.0], [2.25, 6.6], [2.55, 0.0]]),
    ("bilinear", "border", False): ([0.0, 12.1, 0.9, 6.8, 6.4],
                                    [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [3.2, 10.2], [0.0, 0.0]]),
    ("bilinear", "reflection", True): ([0.0, 12.1, 2.5625, 5.575, 6.1],
                                       [[0.15, 1.6], [3.15, 7.2], [-1.35, -3.7], [2.25, 6.6], [2.4, -4.95]]),
    ("bilinear", "reflection", False): ([0.0, 12.1, 1.9, 6.8, 6.4],
                                        [[0.0, 0.0], [0.0, 0.0], [-1.4, -6.0], [3.2, 10.2], [0.0, 0.0]]),
    ("nearest", "zeros", True): ([0.0, 12.1, 0.9, 3.6, 6.4], None),
    ("nearest", "zeros", False): ([0.0, 0.0, 0.0, 3.6, 0.0], None),
    **{("nearest", padding, corners): ([0.0, 12.1, 0.9, 3.6, 6.4], None)
       for padding in ("border", "reflection") for corners in (True, False)},
}


@pytest.mark.parametrize("attrs", PADDLE, ids=lambda a: "-".join(map(str, a)))
def test_grid_sampler_matches_paddle_at_and_beyond_the_borders(attrs):
    mode, padding_mode, align_corners = attrs
    out, grads = grads_of_sum("grid_sampler", {"X": SQUARES, "Grid": POINTS},
                              {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}, "Output")
    expected_out, expected_grid_grad = PADDLE[attrs]
    np.testing.assert_allclose(out.ravel(), expected_out, rtol=1e-12, atol=1e-12)
    expected_grid_grad = np.zeros((5, 2)) if expected_grid_grad is None else expected_grid_grad
    np.testing.assert_allclose(grads["Grid"].reshape(5, 2), expected_grid_grad, rtol=1e-12, atol=1e-12)


def test_on_the_last_pixel_border_and_reflection_take_the_derivative_from_below():
    """Central differences from below agree; from above, border is flat and reflection mirrored."""
    point = POINTS[:, :, 1:2]
    for padding_mode in ("border", "reflection"):
        attrs = {"padding_mode": padding_mode}
        out, grads = grads_of_sum("grid_sampler", {"X": SQUARES, "Grid": point}, attrs, "Output")
        below = [(out.sum() - run("grid_sampler", {"X": SQUARES, "Grid": point - 1e-7 * np.eye(2)[i]}, attrs)
                  ["Output"].sum()) / 1e-7 for i in range(2)]
        np.testing.assert_allclose(grads["Grid"].ravel(), below, rtol=1e-6)


def test_grid_sampler_x_grad_spreads_the_bilinear_weights():
    """The point (0.5, 0.25) sits at x = 2.25, y = 1.25 (align_corners, 3 x 4): weights 0.5625, 0.1875, ..."""
    _, grads = grads_of_sum("grid_sampler", {"X": SQUARES, "Grid": POINTS[:, :, 3:4]}, {}, "Output")
    expected = np.zeros((3, 4))
    expected[1:3, 2:4] = [[0.75 * 0.75, 0.75 * 0.25], [0.25 * 0.75, 0.25 * 0.25]]
    np.testing.assert_allclose(grads["X"][0, 0], expected, rtol=1e-12)


def test_nearest_rounds_half_to_even_in_grids_dtype():
    """x = 0.5 and -0.5 on 4 columns (align_corners False) lie at 2.5 and 0.5: columns 2 and 0. A float32
    y of 2/3 on 4 rows (align_corners) lands on 2.5 in float32 (row 2), at 2.5000001 in float64 (row 3)."""
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    grid = np.array([[0.5, -1.0], [-0.5, -1.0]]).reshape(1, 1, 2, 2)
    out = run("grid_sampler", {"X": x, "Grid": grid}, {"mode": "nearest", "align_corners": False})["Output"]
    np.testing.assert_array_equal(out.ravel(), [2.0, 0.0])
    grid32 = np.array([[-1.0, 1 - 1 / 3]], np.float32).reshape(1, 1, 1, 2)
    out32 = run("grid_sampler", {"X": x.astype(np.float32), "Grid": grid32}, {"mode": "nearest"})["Output"]
    assert out32.dtype == np.float32 and out32.ravel().tolist() == [8.0]


def test_grid_sampler_5d_is_trilinear():
    x = np.arange(8.0).reshape(1, 1, 2, 2, 2)   # value = 4 z + 2 y + x
    grid = np.array([[0.0, 0.0, 0.0], [1.0, -1.0, -1.0], [0.5, 0.0, 1.0]]).reshape(1, 1, 1, 3, 3)
    out = run("grid_sampler", {"X": x, "Grid": grid}, {})["Output"]
    np.testing.assert_allclose(out.ravel(), [3.5, 1.0, 4 + 1 + 0.75])


def test_affine_grid_maps_pixel_centres_and_takes_n_from_theta():
    theta = np.array([[[2.0, 0.0, 0.5], [0.0, -1.0, 0.0]]] * 2)
    for corners, xs, ys in ((True, [-1.0, 1.0], [-1.0, 0.0, 1.0]), (False, [-0.5, 0.5], [-2 / 3, 0.0, 2 / 3])):
        out = run("affine_grid", {"Theta": theta}, {"output_shape": [5, 1, 3, 2], "align_corners": corners})["Output"]
        assert out.shape == (2, 3, 2, 2)
        np.testing.assert_allclose(out[1, :, :, 0], np.tile(np.multiply(xs, 2) + 0.5, (3, 1)))
        np.testing.assert_allclose(out[1, :, :, 1], -np.tile(np.array(ys)[:, None], (1, 2)))


def test_affine_grid_puts_a_single_pixel_at_0():
    """Paddle 3.3.1 gives NaN for a 1-pixel dim with align_corners (it divides 2 by size - 1)."""
    theta = np.array([[[1.0, 0.0, 0.25], [0.0, 1.0, -0.5]]])
    for corners in (True, False):
        out = run("affine_grid", {"Theta": theta}, {"output_shape": [1, 1, 1, 1], "align_corners": corners})
        np.testing.assert_array_equal(out["Output"].ravel(), [0.25, -0.5])


def test_affine_grid_3d_and_its_theta_grad():
    theta = np.random.default_rng(3).standard_normal((1, 3, 4))
    out, grads = grads_of_sum("affine_grid", {"Theta": theta}, {"output_shape": [1, 1, 2, 3, 4]}, "Output")
    assert out.shape == (1, 2, 3, 4, 3)
    # each output coordinate sums Theta's row over the 24 points: d/dTheta = sums of (x, y, z, 1) = (0, 0, 0, 24)
    np.testing.assert_allclose(grads["Theta"][0], np.tile([0.0, 0.0, 0.0, 24.0], (3, 1)), atol=1e-12)


def test_temporal_shift_splits_channels_in_float32():
    """20 channels x shift_ratio 0.35 (float32 0.34999999) is 6.9999999 in float64 but 7 in float32 (Paddle):
    channels 0..6 read the previous segment, 7..13 the next, the rest stay."""
    x = np.arange(2 * 20, dtype=np.float64).reshape(2, 20, 1, 1)
    out = run("temporal_shift", {"X": x}, {"seg_num": 2, "shift_ratio": 0.35})["Out"][:, :, 0, 0]
    np.testing.assert_array_equal(out[0], [0] * 7 + list(range(27, 34)) + list(range(14, 20)))
    np.testing.assert_array_equal(out[1], list(range(7)) + [0] * 7 + list(range(34, 40)))


def test_temporal_shift_nhwc_is_nchw_transposed():
    x = np.random.default_rng(5).standard_normal((4, 8, 2, 3))
    attrs = {"seg_num": 2, "shift_ratio": 0.25}
    nchw = run("temporal_shift", {"X": x}, attrs)["Out"]
    nhwc = run("temporal_shift", {"X": x.transpose(0, 2, 3, 1)}, {**attrs, "data_format": "NHWC"})["Out"]
    np.testing.assert_array_equal(nhwc, nchw.transpose(0, 2, 3, 1))


def test_a_point_outside_reads_0_whatever_x_holds():
    """zeros padding reads nothing outside: an infinite first pixel does not leak into far points."""
    x = np.arange(12.0).reshape(1, 1, 3, 4)
    x[0, 0, 0, 0] = np.inf
    grid = np.array([[-3.0, -3.0], [1.0, 1.0]]).reshape(1, 1, 2, 2)
    out = run("grid_sampler", {"X": x, "Grid": grid}, {"mode": "nearest"})["Output"]
    np.testing.assert_array_equal(out.ravel(), [0.0, 11.0])


def test_affine_grids_computed_output_shape_round_trips_through_pir():
    """A computed shape is PIR's output_shape operand itself (a constant one folds into the attribute): the
    program written as PIR and read back reads the OutputShape tensor, in the forward and the grad op."""
    net = ProgramBuilder()
    theta = net.data("theta", [1, 2, 3], "float64")
    shape = net.data("shape", [4], "int32")
    net.block.var(theta).is_parameter, net.block.var(theta).stop_gradient = True, False
    grid = net.op("affine_grid", {"Theta": theta, "OutputShape": shape}, {"output_shape": [1, 1, 2, 2]},
                  outputs=["Output"])[0]
    loss = net.op("reduce_sum", {"X": net.op("square", {"X": grid})[0]}, {"reduce_all": True})[0]
    append_backward(net.program, loss)
    again = parse_pir(serialize_pir(net.program, fetch=[grid, theta + "@GRAD"]))
    assert all(op.inputs["OutputShape"] for op in again.global_block.ops if op.type.startswith("affine_grid"))
    feed = {theta: np.array([[[1.0, 0.5, 0.25], [0.0, 2.0, -1.0]]]), shape: np.array([1, 1, 3, 5], np.int32)}
    expected = Executor().run(net.program, feed, [grid, theta + "@GRAD"], Scope())
    values = Executor().run(again, feed, [grid, theta + "@GRAD"], Scope())
    assert expected[0].shape == (1, 3, 5, 2)
    for value, reference in zip(values, expected):
        np.testing.assert_array_equal(value, reference)


def test_on_the_pixel_lattice_the_grids_second_derivative_is_the_cell_below_and_right():
    """Grid points on pixels (align_corners), where the bilinear weights have kinks: the second derivative of a
    penalty on Grid@GRAD is that of the cell the first-order kernel reads (below and right of the point), the cross
    difference X[y, x] - X[y, x+1] - X[y+1, x] + X[y+1, x+1] times both slopes d position / d Grid."""
    rng = np.random.default_rng(11)
    image, v = rng.standard_normal((1, 1, 3, 4)), rng.standard_normal((1, 2, 3, 2))
    rows, cols = np.meshgrid(np.arange(2.0), np.arange(3.0), indexing="ij")   # pixel (y, x) = (i, j)
    grid = np.stack([cols / 1.5 - 1, rows - 1], axis=-1)[None]   # x = 2 col / (W - 1) - 1, y = 2 row / (H - 1) - 1
    net = ProgramBuilder()
    x, g = net.data("x", [1, 1, 3, 4], "float64"), net.data("g", [1, 2, 3, 2], "float64")
    for name in (x, g):
        net.block.var(name).stop_gradient = False
    out = net.op("grid_sampler", {"X": x, "Grid": g}, {"align_corners": True}, outputs=["Output"])[0]
    append_backward(net.program, net.op("reduce_sum", {"X": out}, {"reduce_all": True})[0])
    weighted = net.op("elementwise_mul", {"X": g + "@GRAD", "Y": net.data("v", [1, 2, 3, 2], "float64")})[0]
    (grad,) = gradients(net.program, net.op("reduce_sum", {"X": weighted}, {"reduce_all": True})[0], [g])
    (value,) = Executor().run(net.program, {x: image, g: grid, "v": v}, [grad], Scope())
    slopes = 1.5 * 1.0   # (W - 1) / 2 and (H - 1) / 2
    cross = (image[0, 0, :2, :3] - image[0, 0, :2, 1:] - image[0, 0, 1:, :3] + image[0, 0, 1:, 1:]) * slopes
    np.testing.assert_allclose(value[0, ..., 0], cross * v[0, ..., 1], rtol=1e-12)
    np.testing.assert_allclose(value[0, ..., 1], cross * v[0, ..., 0], rtol=1e-12)


@pytest.mark.parametrize("op_type, inputs, unknown", [
    ("affine_grid", {"Theta": [2, 2, 3]}, "Theta"), ("grid_sampler", {"X": [1, 1, 3, 4], "Grid": [1, 2, 2, 2]}, "X"),
    ("grid_sampler", {"X": [1, 1, 3, 4], "Grid": [1, 2, 2, 2]}, "Grid"), ("temporal_shift", {"X": [2, 4, 3, 3]}, "X"),
])
def test_an_input_without_a_declared_shape_is_refused_naming_the_op_and_the_slot(op_type, inputs, unknown):
    net = ProgramBuilder()
    names = {slot: net.data(slot.lower(), shape, "float32") for slot, shape in inputs.items()}
    net.block.var(names[unknown]).shape = None
    attrs = {"output_shape": [2, 1, 4, 4]} if op_type == "affine_grid" else {}
    with pytest.raises(ProgramError, match=rf"^block 0, op 0 \({op_type}\): the shape of {unknown} is unknown"):
        net.op(op_type, names, attrs)
