"""yolov3_loss beyond the registry walks: Paddle 3.3.1's values (loss, masks, X@GRAD) on a case where two gt boxes
share a cell and anchor and one is padding; where Paddle's gradient is wrong there (it keeps the last box's box
and class terms only), gradc's matches central differences of the loss both compute; the gt inputs get no
gradient; a gt centre outside the image is refused; third derivatives. Expected values were printed by Paddle
3.3.1 (legacy static mode)."""

import numpy as np
import pytest

import gradc
from float64_nets import check_third_derivatives
from gradc import ExecutionError
from gradc.layers import ProgramBuilder
from gradcheck_cases.second_order import second_order

f32 = np.float32
X = np.linspace(-1.5, 1.2, 56, dtype=f32).reshape(1, 14, 2, 2)
# boxes 0 and 1 fall in cell (0, 0) with anchor 0; box 2 is padding (w 0); box 3 is in cell (1, 1)
GT = np.array([[[0.3, 0.2, 0.4, 0.5], [0.35, 0.3, 0.5, 0.45], [0.7, 0.7, 0.0, 0.3], [0.8, 0.6, 0.2, 0.25]]], f32)
LABEL = np.array([[1, 0, 1, 0]], np.int32)
ATTRS = {"anchors": [10, 13, 16, 30], "anchor_mask": [0, 1], "class_num": 2, "ignore_thresh": 0.5,
         "downsample_ratio": 8, "use_label_smooth": False}
# Paddle 3.3.1: loss, ObjectnessMask, GTMatchMask, and X@GRAD of the loss (anchor 0's channels at cells (0, 0)
# and (1, 1), and anchor 1's objectness)
PADDLE_LOSS = 27.507717
PADDLE_OBJECTNESS = [[[[1.0, 0.0], [0.0, 1.0]], [[0.0, 0.0], [0.0, 0.0]]]]
PADDLE_MATCH = [[0, 0, -1, 0]]
PADDLE_AT_00 = [-0.91869473, -0.6859423, -1.775, -1.775, -0.6714048, -0.6267225, 0.4202327]
PADDLE_AT_11 = [-0.76942164, 0.0766908, 1.95, 1.95, -0.63813365, -0.5916786, 0.4564741]
PADDLE_OBJECTNESS_1 = [0.6592604, 0.6702002, 0.68095887, 0.691528]


def yolo(x=X, gt=GT, label=LABEL, attrs=ATTRS, grads=("x",)):
    """(Loss, ObjectnessMask, GTMatchMask, and the grads of ``grads`` of sum(Loss))."""
    net = ProgramBuilder()
    names = {"x": net.data("x", list(x.shape), x.dtype.name, stop_gradient=False),
             "gt": net.data("gt", list(gt.shape), gt.dtype.name, stop_gradient="gt" not in grads),
             "label": net.data("label", list(label.shape), "int32")}
    loss, objectness, match = net.op("yolov3_loss", {"X": names["x"], "GTBox": names["gt"], "GTLabel": names["label"]},
                                     dict(attrs), outputs=["Loss", "ObjectnessMask", "GTMatchMask"])
    total = net.op("reduce_sum", {"X": loss}, {"reduce_all": True})[0]
    gradc.append_backward(net.program, total)
    feed = {names["x"]: x, names["gt"]: gt, names["label"]: label}
    fetch = [loss, objectness, match, *(f"{names[g]}@GRAD" for g in grads if g == "x")]
    return gradc.Executor().run(net.program, feed, fetch, gradc.Scope()), net.program


def loss64(x):
    return yolo(x.astype(np.float64), GT.astype(np.float64), grads=())[0][0].sum()


def test_loss_and_masks_are_paddles():
    (loss, objectness, match, _), _ = yolo()
    assert loss.dtype == f32 and match.dtype == np.int32
    np.testing.assert_allclose(loss, [PADDLE_LOSS], rtol=1e-6)
    np.testing.assert_array_equal(objectness, PADDLE_OBJECTNESS)
    np.testing.assert_array_equal(match, PADDLE_MATCH)


def test_the_gradient_is_paddles_where_no_two_boxes_share_a_cell():
    (_, _, _, grad), _ = yolo()
    assert grad.dtype == f32
    np.testing.assert_allclose(grad[0, :7, 1, 1], PADDLE_AT_11, rtol=1e-5)
    np.testing.assert_allclose(grad[0, 11].ravel(), PADDLE_OBJECTNESS_1, rtol=1e-5)
    np.testing.assert_allclose(grad[0, 4, 0, 0], PADDLE_AT_00[4], rtol=1e-5)   # the objectness, counted once


def test_two_boxes_in_one_cell_sum_their_gradients_where_paddle_keeps_the_last():
    (_, _, _, grad), _ = yolo()
    box_and_class = [0, 1, 2, 3, 5, 6]
    eps, numeric = 1e-6, []
    for channel in box_and_class:
        step = np.zeros(X.shape)
        step[0, channel, 0, 0] = eps
        numeric.append((loss64(X + step) - loss64(X - step)) / (2 * eps))
    np.testing.assert_allclose(grad[0, box_and_class, 0, 0], numeric, rtol=1e-5, atol=1e-6)
    paddle = np.array(PADDLE_AT_00)[box_and_class]
    assert np.abs(grad[0, box_and_class, 0, 0] - paddle).min() > 0.1   # Paddle's is the second box's alone


def test_an_image_of_padding_only_counts_the_objectness_against_0_as_paddle():
    """No gt box is valid (all w = h = 0): each cell's objectness is a cross entropy against 0 (Paddle: 6.198558),
    its gradient sigmoid(x), and no other channel has a gradient."""
    (loss, objectness, match, grad), _ = yolo(label=np.zeros((1, 2), np.int32), gt=np.zeros((1, 2, 4), f32))
    np.testing.assert_allclose(loss, [6.198558], rtol=1e-6)
    np.testing.assert_array_equal(match, [[-1, -1]])
    assert not objectness.any()
    logits = X.reshape(1, 2, 7, 2, 2)[:, :, 4]
    np.testing.assert_allclose(grad.reshape(1, 2, 7, 2, 2)[:, :, 4], 1 / (1 + np.exp(-logits)), rtol=1e-6)
    assert not np.delete(grad.reshape(1, 2, 7, 2, 2), 4, axis=2).any()


def test_a_batch_of_no_images_has_no_loss():
    (loss, objectness, match, grad), _ = yolo(np.zeros((0, 14, 2, 2), f32), np.zeros((0, 3, 4), f32),
                                              np.zeros((0, 3), np.int32))
    assert loss.shape == (0,) and objectness.shape == (0, 2, 2, 2) and match.shape == (0, 3)
    assert grad.shape == (0, 14, 2, 2)


def test_the_gt_boxes_get_no_gradient():
    """Paddle declares GTBox@GRAD but computes nothing into it; gradc treats the gt inputs as labels."""
    _, program = yolo(grads=("x", "gt"))
    grad_op = next(op for op in program.global_block.ops if op.type == "yolov3_loss_grad")
    assert grad_op.output("X@GRAD") and not grad_op.output("GTBox@GRAD")
    assert program.global_block.find_var("gt@GRAD") is None


@pytest.mark.parametrize("centre", [(1.0, 0.5), (0.5, -0.6)], ids=["right edge", "above"])
def test_a_gt_centre_outside_the_image_is_refused(centre):
    """Paddle indexes past the cell grid there (other cells' entries or memory past X); a centre in (-1/H, 0)
    truncates to row 0, as in Paddle."""
    gt = GT.copy()
    gt[0, 3, :2] = centre
    with pytest.raises(ExecutionError, match=r"GTBox \[0, 3\] has its centre .* outside the image"):
        yolo(gt=gt)


def test_a_label_outside_the_classes_has_no_positive_class_as_in_paddle():
    """Paddle's kernel compares each class with the label: none matches, every class logit is a negative."""
    (loss, *_), _ = yolo(label=np.array([[1, 0, 1, 7]], np.int32))
    (expected, *_), _ = yolo()
    logit = float(X[0, 5, 1, 1])   # box 3's class 0 logit: cross entropy against 0, not 1, adds the logit
    np.testing.assert_allclose(loss - expected, [logit], rtol=1e-5)


def test_third_derivatives_through_the_composite_second_derivative():
    """The ops yolov3_loss_grad's maker emits (the grad op itself at saturated X, sigmoid_grad) have makers too."""
    case = second_order("yolov3_loss", {"X": np.random.default_rng(5).standard_normal((1, 12, 2, 2)),
                                        "GTBox": GT.astype(np.float64), "GTLabel": LABEL % 1,
                                        "GTScore": np.array([[0.9, 1.0, 0.6, 0.8]])},
                        {**ATTRS, "class_num": 1, "use_label_smooth": True}, wrt=["X"], grad_type="yolov3_loss_grad")
    check_third_derivatives(case, np.random.default_rng(6))
