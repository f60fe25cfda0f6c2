"""The roi ops beyond the registry walks: values Paddle 3.3.1 gives (printed by it, CPU kernels) at the edges that
are easy to get wrong (samples off the image, C's rounding of halves, max ties, NaN and -inf in a bin, empty
bins), the places gradc parts from Paddle (roi_align_grad of an aligned box smaller than a pixel, an aligned box
of no size), float32 in and out, and RoisNum."""

import numpy as np
import pytest

import gradc
from gradc import ExecutionError, ProgramError
from gradc.backward import append_grad_ops
from gradc.ir import VarType
from test_legacy_nn import described, program_of, run_op

f32 = np.float32
FMAX = float(np.finfo(f32).max)
IMAGES = (np.arange(40, dtype=f32).reshape(2, 1, 4, 5) ** 1.5 / 7).astype(f32)
ONE_EACH = np.array([1, 1], np.int32)
TIES = np.array([[[[1, 3, 3], [3, 0, 2], [np.nan, 3, 1]]],
                 [[[-np.inf, -np.inf, 5], [-np.inf, -np.inf, 5], [1, 1, 1]]]], f32)


def test_roi_align_matches_paddle_with_samples_off_the_image():
    """Adaptive sampling; the first box reaches above the image (samples below y = -1 count 0)."""
    boxes = np.array([[0.3, -1.7, 3.9, 2.2], [2.5, 1.0, 6.5, 3.5]], f32)
    out = run_op("roi_align", {"X": IMAGES, "ROIs": boxes, "RoisNum": ONE_EACH}, {"pooled_height": 2,
                                                                                 "pooled_width": 2})
    assert out.dtype == f32
    np.testing.assert_allclose(out, [[[[0.10494564, 0.37816286], [3.0722942, 4.1481318]]],
                                     [[[25.465269, 13.03367], [32.722828, 16.688927]]]], rtol=1e-6)


def test_aligned_roi_align_matches_paddle():
    boxes = np.array([[0.6, 0.4, 5.0, 3.0], [-2.0, -2.0, 1.0, 1.0]], f32)
    out = run_op("roi_align", {"X": IMAGES, "ROIs": boxes, "RoisNum": ONE_EACH},
                 {"pooled_height": 1, "pooled_width": 2, "spatial_scale": 0.8, "sampling_ratio": 2, "aligned": True})
    np.testing.assert_allclose(out, [[[[1.9962893, 2.8659999]]], [[[0.0, 6.3887658]]]], rtol=1e-6)


def test_roi_align_grad_of_an_aligned_box_below_a_pixel_is_its_forwards():
    """Paddle 3.3.1's grad widens the 0.6 x 0.4 box to a pixel and gives [[0.0075, 0.225, 0.0675], [0.075, 2.25,
    0.675], [0.0175, 0.525, 0.1575]] in the top-left corner; central differences of its forward give these."""
    x = np.random.default_rng(1).standard_normal((1, 1, 5, 5))
    box = np.array([[1.2, 1.1, 1.8, 1.5]])
    _, grad = run_op("roi_align", {"X": x, "ROIs": box}, {"pooled_height": 2, "pooled_width": 2, "aligned": True},
                     out_grad=np.ones((1, 1, 2, 2)), wrt=["X"])
    expected = np.zeros((5, 5))
    expected[:2, :3] = [[0.06, 0.68, 0.06], [0.24, 2.72, 0.24]]
    np.testing.assert_allclose(grad[0, 0], expected, atol=1e-12)


def test_an_aligned_box_of_no_size_pools_zero():
    """No sampling points: 0 (Paddle's CPU kernel gives NaN, dividing by the zero count; its GPU kernel 0)."""
    out = run_op("roi_align", {"X": IMAGES[:1], "ROIs": np.array([[1.5, 1.5, 1.5, 1.5]], f32)}, {"aligned": True})
    np.testing.assert_array_equal(out, np.zeros((1, 1, 1, 1), f32))


def test_roi_pool_takes_the_first_maximum_and_skips_nan_and_minus_inf():
    """Box 0: ties go to the first in row-major order, NaN never wins. Box 1: a bin of -inf keeps Paddle's
    starting value -max with Argmax -1. Box 2: x 2.5 rounds (away from zero) to 3, past the image: empty bins."""
    boxes = np.array([[0, 0, 2, 2], [0, 0, 1, 1], [2.5, 0, 2.5, 0.5]], f32)
    program_inputs = {"X": TIES, "ROIs": boxes, "RoisNum": np.array([1, 2], np.int32)}
    out = run_op("roi_pool", program_inputs, {"pooled_height": 2, "pooled_width": 2})
    argmax = run_op("roi_pool", program_inputs, {"pooled_height": 2, "pooled_width": 2}, out_slot="Argmax")
    np.testing.assert_array_equal(out, np.array([[[[3, 3], [3, 3]]], [[[-FMAX, -FMAX], [-FMAX, -FMAX]]],
                                                 [[[0, 0], [0, 0]]]], f32))
    assert out.dtype == f32 and argmax.dtype == np.int64
    np.testing.assert_array_equal(argmax, [[[[1, 1], [3, 7]]], [[[-1, -1], [-1, -1]]], [[[-1, -1], [-1, -1]]]])


def test_roi_pool_bins_clipped_by_the_image_match_paddle():
    inputs = {"X": TIES[:1], "ROIs": np.array([[0, 0, 2, 2], [1.5, 1.5, 2.5, 2.5]], f32)}
    out = run_op("roi_pool", inputs, {"pooled_height": 3, "pooled_width": 3})
    argmax = run_op("roi_pool", inputs, {"pooled_height": 3, "pooled_width": 3}, out_slot="Argmax")
    np.testing.assert_array_equal(out, np.array([[[[1, 3, 3], [3, 0, 2], [-FMAX, 3, 1]]],
                                                 [[[1, 1, 0], [1, 1, 0], [0, 0, 0]]]], f32))
    np.testing.assert_array_equal(argmax, [[[[0, 1, 2], [3, 4, 5], [-1, 7, 8]]], [[[8, 8, -1], [8, 8, -1],
                                                                                    [-1, -1, -1]]]])


def test_roi_pool_grad_sends_each_output_grad_to_its_argmax_only():
    """Both top bins' maximum is the first 3 (position 1): it gets 1 + 2. As Paddle 3.3.1 gives."""
    program = gradc.Program()
    block = program.global_block
    x = np.array([[[[1, 3, 3], [3, 0, 2], [0.5, 3, 1]]]], f32)
    block.create_var("x", [1, 1, 3, 3], VarType.FP32).stop_gradient = False
    block.create_var("boxes", [1, 4], VarType.FP32)
    block.create_var("out", [1, 1, 2, 2], VarType.FP32)
    block.create_var("argmax", [1, 1, 2, 2], VarType.INT64)
    block.append_op("roi_pool", {"X": ["x"], "ROIs": ["boxes"]}, {"Out": ["out"], "Argmax": ["argmax"]},
                    {"pooled_height": 2, "pooled_width": 2})
    append_grad_ops(program, ["out"])
    feed = {"x": x, "boxes": np.array([[0, 0, 2, 2]], f32), "out@GRAD": np.array([[[[1, 2], [4, 8]]]], f32)}
    grad, = gradc.Executor().run(program, feed, ["x@GRAD"], gradc.Scope())
    np.testing.assert_array_equal(grad, np.array([[[[0, 3, 0], [4, 0, 0], [0, 8, 0]]]], f32))


PSROI_WHOLE = [[[3.5, 16.5], [31.5, 44.5]], [[51.5, 64.5], [79.5, 92.5]]]
PSROI_WIDER = [[[3.5, 17.0], [31.5, 45.0]], [[51.5, 65.0], [79.5, 93.0]]]


@pytest.mark.parametrize("boxes, scale, expected", [
    ([[0.5, 0.4, 2.5, 1.6], [1.4, -0.5, 3.5, 2.5]], 1.0, [PSROI_WHOLE, PSROI_WIDER]),
    ([[1.5, 0.5, 5.5, 4.5], [2.8, -1.0, 7.0, 5.0]], 0.5, [PSROI_WHOLE, PSROI_WHOLE])])
def test_psroi_pool_rounds_the_corners_before_scaling_as_paddle(boxes, scale, expected):
    """Corners round half away from zero (0.5 -> 1, 2.5 -> 3), then scale; bin (i, j) of output channel c reads
    channel (2 c + i) 2 + j."""
    x = np.arange(96, dtype=f32).reshape(1, 8, 3, 4)
    out = run_op("psroi_pool", {"X": x, "ROIs": np.array(boxes, f32)},
                 {"output_channels": 2, "pooled_height": 2, "pooled_width": 2, "spatial_scale": scale})
    np.testing.assert_array_equal(out, np.array(expected, f32))


def test_without_roisnum_one_image_holds_every_box_and_two_images_are_refused():
    boxes = np.array([[0.0, 0.0, 2.0, 2.0]], f32)
    out = run_op("psroi_pool", {"X": IMAGES[1:], "ROIs": boxes}, {"output_channels": 1})
    np.testing.assert_allclose(out, IMAGES[1:, :, :3, :3].mean(keepdims=True), rtol=1e-6)
    with pytest.raises(ProgramError, match="without RoisNum or a LoD on ROIs"):
        run_op("roi_align", {"X": IMAGES, "ROIs": boxes}, {})


def test_roisnum_that_does_not_count_the_boxes_is_refused():
    with pytest.raises(ExecutionError, match=r"RoisNum \[1, 0\] must give 2 box counts >= 0 .* summing to the 2"):
        run_op("roi_pool", {"X": IMAGES, "ROIs": np.zeros((2, 4), f32), "RoisNum": np.array([1, 0], np.int32)}, {})


@pytest.mark.parametrize("op, attrs, phrase", [
    ("roi_align", {"pooled_height": 2**31 - 1, "pooled_width": 2**31 - 1}, "Out of shape"),
    ("roi_align", {"sampling_ratio": 2**31 - 1}, "samples of each of the 1 x 1 bins of a box"),
    ("roi_pool", {"pooled_width": 2**28}, "the column maxima of a box's bins")])
def test_attribute_sized_work_is_refused_before_it_is_allocated(op, attrs, phrase):
    with pytest.raises(ExecutionError, match=rf"op 0 \({op}\): .*{phrase}.*more than the limit"):
        run_op(op, {"X": IMAGES[:1], "ROIs": np.array([[0, 0, 1, 1]], f32)}, attrs)


def test_a_huge_spatial_scale_puts_roi_pools_box_outside_the_image():
    out = run_op("roi_pool", {"X": IMAGES[:1], "ROIs": np.array([[1, 1, 2, 2]], f32)}, {"spatial_scale": 1e30})
    np.testing.assert_array_equal(out, np.zeros((1, 1, 1, 1), f32))


@pytest.mark.parametrize("op, attrs", [("roi_align", {}), ("psroi_pool", {"output_channels": 1})])
def test_an_out_grad_not_shaped_like_out_is_refused(op, attrs):
    """A program whose Out@GRAD is declared [-1, ...] may feed more rows than boxes: the grad kernel names it."""
    inputs = {"X": IMAGES[:1], "ROIs": np.array([[0, 0, 2, 2]], f32)}
    program = program_of(op, inputs, attrs, "Out")
    described(program, np.zeros((1, 1, 1, 1), f32))
    append_grad_ops(program, ["out"])
    program.global_block.var("out@GRAD").shape = [-1, 1, 1, 1]
    with pytest.raises(ExecutionError, match=rf"{op}_grad\): Out@GRAD \[2, 1, 1, 1\] must be shaped like Out "
                                             r"\[1, 1, 1, 1\]"):
        gradc.Executor().run(program, {**inputs, "out@GRAD": np.ones((2, 1, 1, 1), f32)}, ["X@GRAD"], gradc.Scope())
