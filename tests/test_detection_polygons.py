"""multiclass_nms3 over polygon boxes (a rotated detector's 4 corners, 8 coordinates): IoUs of convex polygons, as
Paddle's PolyIoU gives them, and the selection Paddle 3.3.1 makes of the boxes below."""

import numpy as np
import pytest

from gradc.executor.kernels.detection_nms import ious
from gradc.executor.kernels.detection_poly import polygon_ious
from one_op import run

SQUARE = [0, 0, 2, 0, 2, 2, 0, 2]
BOXES = np.array([SQUARE, [1, 1, 3, 1, 3, 3, 1, 3], [0, 0, 2, 0, 2, 2, 0, 2.1], [1, 0, 2, 1, 1, 2, 0, 1]],
                 np.float32)   # a square; shifted by 1, 1; its top-left corner raised; the diamond inside it


def test_polygon_ious_are_the_shared_area_over_the_union():
    """Overlaps worked by hand: 1 of 7, 4 of 4.1 (the raised square's area), the diamond (2) inside the square,
    a triangle of 0.5 in the shifted square; the same polygon clockwise or from another corner overlaps fully."""
    expected = [1, 1 / 7, 4 / 4.1, 0.5]
    np.testing.assert_allclose(polygon_ious(BOXES[:1], BOXES)[0], expected, rtol=1e-6)
    np.testing.assert_allclose(polygon_ious(BOXES[3:], BOXES[1:2])[0], [0.5 / 5.5], rtol=1e-6)
    turned = np.array([[0, 2, 2, 2, 2, 0, 0, 0], [2, 0, 2, 2, 0, 2, 0, 0]], np.float32)
    np.testing.assert_allclose(polygon_ious(BOXES[:1], turned)[0], [1, 1], rtol=1e-6)


def test_axis_aligned_polygons_overlap_as_their_boxes_do():
    rng = np.random.default_rng(0)
    corners = np.sort(rng.uniform(0, 4, (12, 2, 2)), axis=1)   # [[x1, y1], [x2, y2]]
    boxes = corners.reshape(12, 4)
    x1, y1, x2, y2 = boxes.T
    polygons = np.stack([x1, y1, x2, y1, x2, y2, x1, y2], 1)
    np.testing.assert_allclose(polygon_ious(polygons, polygons), ious(boxes, boxes, True), atol=1e-12)


@pytest.mark.parametrize("threshold, kept", [(0.1, [0]), (0.2, [0, 1]), (0.6, [0, 1, 3])])
def test_multiclass_nms3_keeps_polygons_as_paddle_does(threshold, kept):
    """Paddle 3.3.1's _C_ops.multiclass_nms3 of these boxes, scores 0.9 to 0.6, keeps these; Out rows hold the
    label, the score and the 8 coordinates."""
    scores = np.array([[[0.9, 0.8, 0.7, 0.6]]], np.float32)
    out = run("multiclass_nms3", {"BBoxes": BOXES[None], "Scores": scores},
              dict(score_threshold=0.0, nms_top_k=-1, keep_top_k=-1, nms_threshold=threshold, normalized=True,
                   nms_eta=1.0, background_label=-1))
    assert out["Out"].shape == (len(kept), 10)
    np.testing.assert_array_equal(out["Out"][:, 2:], BOXES[kept])
    np.testing.assert_array_equal(out["Out"][:, 1], scores[0, 0, kept])
    np.testing.assert_array_equal(out["Index"].ravel(), kept)


def test_a_polygon_that_is_not_convex_is_refused():
    arrow = np.array([[0, 0, 2, 1, 0, 2, 1, 1]], np.float32)
    with pytest.raises(ValueError, match="convex"):
        polygon_ious(arrow, BOXES)
