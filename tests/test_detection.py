"""The detection family against Paddle 3.3.1: each op on a small case with ties and suppressions, with the values
Paddle's CPU kernels computed (pasted here: the tests do not import Paddle). Equal scores are where the orders
differ: matrix_nms and generate_proposals_v2 sort with C++'s unstable algorithms, whose order gradc replays."""

import ctypes

import numpy as np
import pytest

from gradc import ExecutionError, ProgramError
from gradc.executor.kernels import scans_order
from gradc.executor.kernels.detection_sort import full_sort, nth_element, partial_sort
from gradc.executor.kernels.glibc_expf import expf
from gradc.ops.detection import expand_aspect_ratios
from one_op import run

# six boxes in a row, each overlapping the next (IoU 3/5, 1/3, ...), and one apart
CHAIN = [[0, 0, 4, 4], [1, 0, 5, 4], [2, 0, 6, 4], [3, 0, 7, 4], [4, 0, 8, 4], [10, 10, 12, 12]]


def f32(values):
    return np.array(values, np.float32)


def i32(values):
    return np.array(values, np.int32)


def assert_values(got, expected):
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_nms_keeps_boxes_in_order_unless_an_earlier_kept_one_overlaps():
    boxes = f32([[0, 0, 2, 2], [0.5, 0.5, 2, 2], [3, 3, 4, 4], [0, 0, 2, 2], [3.1, 3, 4, 4]])
    out = run("nms", {"Boxes": boxes}, {"iou_threshold": 0.3})
    assert_values(out["KeepBoxesIdxs"], np.array([0, 2], np.int64))


def test_matrix_nms_orders_equal_scores_as_paddles_partial_sort():
    """Six equal scores: std::partial_sort leaves them as boxes 3, 4, 1, 0, 2, 5, and each box decays by its
    IoUs with the boxes before it in that order (a stable order would keep other boxes)."""
    out = run("matrix_nms", {"BBoxes": f32([CHAIN]), "Scores": f32([[[0.9] * 6, [0.5] * 6]])},
              dict(score_threshold=0.1, nms_top_k=-1, keep_top_k=4, post_threshold=0.3, background_label=0))
    assert_values(out["Out"], f32([[1, 0.5, 10, 10, 12, 12], [1, 0.5, 3, 0, 7, 4], [1, 0.3333333, 1, 0, 5, 4]]))
    assert_values(out["Index"], i32([[5], [3], [1]]))
    assert_values(out["RoisNum"], i32([3]))
    assert partial_sort(f32([0.5] * 6), 6).tolist() == [3, 4, 1, 0, 2, 5]


def test_matrix_nms_gaussian_decay_with_nms_top_k_and_no_background():
    scores = f32([[[0.9, 0.8, 0.8, 0.2, 0.7, 0.6], [0.5] * 6]])
    out = run("matrix_nms", {"BBoxes": f32([CHAIN]), "Scores": scores},
              dict(score_threshold=0.1, nms_top_k=3, keep_top_k=-1, post_threshold=0.05, use_gaussian=True,
                   gaussian_sigma=2.0, background_label=-1))
    assert_values(out["Out"], f32([[0, 0.9, 0, 0, 4, 4], [0, 0.6405899, 2, 0, 6, 4], [1, 0.5, 0, 0, 4, 4],
                                   [1, 0.4003687, 2, 0, 6, 4], [0, 0.3894018, 1, 0, 5, 4],
                                   [1, 0.2433761, 1, 0, 5, 4]]))
    assert_values(out["Index"], i32([[0], [2], [0], [2], [1], [1]]))


def test_multiclass_nms3_ranks_equal_scores_by_box_and_keeps_the_top_k_by_class():
    scores = f32([[[0.1] * 6, [0.5, 0.5, 0.5, 0.6, 0.6, 0.5], [0.7, 0.2, 0.7, 0.2, 0.7, 0.7]]])
    out = run("multiclass_nms3", {"BBoxes": f32([CHAIN]), "Scores": scores},
              dict(score_threshold=0.3, nms_top_k=-1, keep_top_k=5, nms_threshold=0.3, background_label=0))
    assert_values(out["Out"], f32([[1, 0.6, 3, 0, 7, 4], [1, 0.5, 0, 0, 4, 4], [2, 0.7, 0, 0, 4, 4],
                                   [2, 0.7, 4, 0, 8, 4], [2, 0.7, 10, 10, 12, 12]]))
    assert_values(out["Index"], i32([[3], [0], [0], [4], [5]]))
    assert_values(out["NmsRoisNum"], i32([5]))


def test_multiclass_nms3_per_class_boxes_counts_images_by_rois_num():
    """2-D Scores [M, C] with boxes per class [M, C, 4]; an image with no boxes keeps none."""
    boxes = f32(np.stack([CHAIN, np.add(CHAIN, 0.5)], axis=1))
    scores = f32([[0.9, 0.2], [0.8, 0.7], [0.3, 0.7], [0.6, 0.1], [0.5, 0.9], [0.4, 0.4]])
    out = run("multiclass_nms3", {"BBoxes": boxes, "Scores": scores, "RoisNum": i32([4, 0, 2])},
              dict(score_threshold=0.25, nms_top_k=-1, keep_top_k=-1, nms_threshold=0.5, background_label=-1))
    assert_values(out["NmsRoisNum"], i32([3, 0, 4]))
    assert_values(out["Index"], i32([[0], [6], [3], [8], [10], [9], [11]]))   # first box * C + class
    assert_values(out["Out"], f32([[0, 0.9, 0, 0, 4, 4], [0, 0.6, 3, 0, 7, 4], [1, 0.7, 1.5, 0.5, 5.5, 4.5],
                                   [0, 0.5, 4, 0, 8, 4], [0, 0.4, 10, 10, 12, 12], [1, 0.9, 4.5, 0.5, 8.5, 4.5],
                                   [1, 0.4, 10.5, 10.5, 12.5, 12.5]]))


GRID_ANCHORS = f32([[[[4 * x, 4 * y, 4 * x + 3, 4 * y + 3]] for x in range(5)] for y in range(4)])   # 20 cells
GRID_SCORES = f32([[[[0.3, 0.9, 0.3, 0.3, 0.9], [0.1, 0.3, 0.9, 0.3, 0.5], [0.3, 0.9, 0.3, 0.3, 0.9],
                     [0.1, 0.3, 0.9, 0.3, 0.5]]]])


def _grid_proposals(pre_nms_top_n):
    return run("generate_proposals_v2", {"Scores": GRID_SCORES, "BboxDeltas": np.zeros((1, 4, 4, 5), np.float32),
                                         "ImShape": f32([[16, 20]]), "Anchors": GRID_ANCHORS,
                                         "Variances": np.ones((4, 5, 1, 4), np.float32)},
               dict(pre_nms_topN=pre_nms_top_n, post_nms_topN=-1, nms_thresh=0.0, min_size=0.1, eta=1.0,
                    pixel_offset=True))


def test_generate_proposals_returns_nth_elements_order_without_nms():
    """pre_nms_topN 6 of 20 anchors, six tied at 0.9: std::nth_element's order (not sorted by position)."""
    out = _grid_proposals(6)
    assert_values(out["RpnRois"], f32([[16, 0, 19, 3], [8, 4, 11, 7], [4, 8, 7, 11], [8, 12, 11, 15], [4, 0, 7, 3],
                                       [16, 8, 19, 11]]))
    assert_values(out["RpnRoiProbs"], f32([[0.9]] * 6))
    assert_values(out["RpnRoisNum"], i32([6]))


def test_generate_proposals_returns_std_sorts_order_of_equal_scores_without_nms():
    """All 20 anchors: introsort's order among the tied scores, which is neither by position nor reversed."""
    rois = _grid_proposals(0)["RpnRois"]
    cells = (rois[:, 1] // 4 * 5 + rois[:, 0] // 4).astype(int).tolist()
    assert cells == [1, 17, 14, 4, 11, 7, 19, 9, 8, 6, 10, 12, 13, 3, 16, 2, 18, 0, 5, 15]   # Paddle's


def test_generate_proposals_decodes_clips_filters_and_suppresses():
    """Anchor 1 overlaps the better anchor 0 (dropped by NMS); anchor 3's height delta is capped at log(1000/16)
    and clipped to the image; every box is at least min_size."""
    deltas = f32([[[[0, 0.1, 0.05, 0]], [[0, 0, 0.2, 0]], [[0.5, 0, 0, 0.1]], [[0, 0, 0, 8.0]]]])
    anchors = f32([[[[0, 0, 5, 5]], [[1, 0, 6, 5]], [[6, 6, 9, 9]], [[0, 0, 9, 9]]]])
    out = run("generate_proposals_v2", {"Scores": f32([[[[0.3, 0.9, 0.3, 0.8]]]]), "BboxDeltas": deltas,
                                        "ImShape": f32([[10, 12]]), "Anchors": anchors,
                                        "Variances": np.ones((1, 4, 1, 4), np.float32)},
              dict(pre_nms_topN=0, post_nms_topN=-1, nms_thresh=0.5, min_size=2.0, eta=1.0, pixel_offset=True))
    assert_values(out["RpnRois"], f32([[1.6, 0, 6.6, 5], [0, 0, 9.525855, 9], [6.2, 6.8, 9.2, 9]]))
    assert_values(out["RpnRoiProbs"], f32([[0.9], [0.8], [0.3]]))


def test_yolo_box_zeroes_boxes_under_conf_thresh_and_clips_to_the_image():
    x = f32([[[[0.5, -1.0], [2.0, 0.0]], [[0.0, 1.0], [-0.5, 0.3]], [[0.2, -0.2], [0.1, 3.0]],
              [[0.0, 0.5], [-0.3, 0.1]], [[2.0, -3.0], [0.5, 1.0]], [[1.0, -1.0], [0.0, 2.0]]]])
    out = run("yolo_box", {"X": x, "ImgSize": i32([[20, 30]])},
              dict(anchors=[8, 12], class_num=1, conf_thresh=0.3, downsample_ratio=8, clip_bbox=True, scale_x_y=1.1))
    assert_values(out["Boxes"], f32([[[0.3600588, 0, 18.681099, 12.5], [0, 0, 0, 0],
                                      [5.4943705, 8.09681, 22.071934, 19], [0, 7.5300856, 29, 19]]]))
    assert_values(out["Scores"], f32([[[0.6439143], [0], [0.3112297], [0.6439143]]]))


def test_yolo_box_takes_scale_x_y_and_iou_aware_factor_as_float32_as_paddle():
    """scale_x_y 1.05 is 1.0499999523 in Paddle's float32 attribute, and its bias -0.5 (scale - 1) follows from that:
    every box and score below is Paddle 3.3.1's to the bit (with 1.05 itself a third of them were an ulp off)."""
    x = (np.linspace(-2, 2, 56).reshape(1, 14, 2, 2) ** 3 / 3).astype(np.float32)
    out = run("yolo_box", {"X": x, "ImgSize": i32([[40, 56]])},
              dict(anchors=[6, 9, 12, 8], class_num=1, conf_thresh=0.01, downsample_ratio=16, clip_bbox=False,
                   scale_x_y=1.05, iou_aware=True, iou_aware_factor=0.4))
    np.testing.assert_array_equal(out["Boxes"], f32([[
        [3.1748505, 2.2109365, 11.8145, 12.868538], [31.814487, 2.5431032, 40.86607, 13.403843],
        [4.4354477, 22.85106, 13.842304, 33.8636], [33.02725, 23.13237, 42.732136, 34.251686],
        [0.597703, 1.5186596, 27.574059, 19.307745], [27.762163, 0.6358547, 56.55143, 20.517317],
        [-1.2635956, 19.517294, 29.781181, 42.03842], [25.47123, 18.082108, 59.32377, 43.959064]]]))
    np.testing.assert_array_equal(out["Scores"], f32([[[0.11033699], [0.12256671], [0.13483556], [0.14703667],
                                                       [0.3506511], [0.39520553], [0.43973345], [0.48308453]]]))


def test_prior_box_min_max_order_skips_repeated_aspect_ratios():
    """Aspect ratios [2, 0.5, 1] flipped are 1, 2, 0.5: min square, max square, then 2 and 0.5."""
    out = run("prior_box", {"Input": np.zeros((1, 1, 1, 2), np.float32), "Image": np.zeros((1, 1, 8, 10), np.float32)},
              dict(min_sizes=[4.0], max_sizes=[6.0], aspect_ratios=[2.0, 0.5, 1.0], variances=[0.1, 0.1, 0.2, 0.2],
                   flip=True, clip=True, min_max_aspect_ratios_order=True))
    assert_values(out["Boxes"], f32([[[[0.05, 0.25, 0.45, 0.75], [0.005051017, 0.19381377, 0.49494895, 0.8061862],
                                       [0, 0.3232233, 0.53284276, 0.6767767], [0.10857864, 0.14644662, 0.39142138,
                                                                               0.8535534]],
                                      [[0.55, 0.25, 0.95, 0.75], [0.505051, 0.19381377, 0.994949, 0.8061862],
                                       [0.46715727, 0.3232233, 1, 0.6767767], [0.6085786, 0.14644662, 0.8914213,
                                                                               0.8535534]]]]))
    assert_values(out["Variances"], np.broadcast_to(f32([0.1, 0.1, 0.2, 0.2]), (1, 2, 4, 4)))


def test_aspect_ratios_within_1e_6_of_one_listed_are_skipped_as_paddles_quadratic_walk_does():
    def paddles(ratios, flip):   # ExpandAspectRatios: each ratio against every one listed before it
        expanded = [1.0]
        for ratio in ratios:
            if all(abs(ratio - seen) >= 1e-6 for seen in expanded):
                expanded += [ratio, 1.0 / ratio] if flip else [ratio]
        return expanded
    rng = np.random.default_rng(0)
    near = [1.0, 2.0, 0.5, 1 + 5e-7, 1 - 9e-7, 2 + 1e-6, 0.5 + 9.99e-7, 1e-7, 2e-7, 1e6, 1e6 + 1e-6, np.inf]
    for _ in range(2000):
        ratios = [float(rng.choice(near)) + float(rng.integers(-3, 4)) * 1e-6 * (rng.random() < 0.4)
                  for _ in range(rng.integers(0, 8))]
        for flip in (True, False):
            assert expand_aspect_ratios(ratios, flip) == paddles(ratios, flip), ratios


def test_box_coder_decodes_pixel_boxes_with_prior_variances_along_axis_1():
    target = f32([[[0.5, -0.5, 0.2, 0.1], [1.0, 0.0, -0.3, 0.4], [0.0, 0.0, 0.0, 0.0]],
                  [[-1.0, 0.5, 0.0, 1.0], [0.3, 0.3, 0.3, 0.3], [2.0, -2.0, 0.5, -0.5]]])
    out = run("box_coder", {"PriorBox": f32([[0, 0, 2, 2], [1, 1, 3, 4]]),
                            "PriorBoxVar": f32([[0.1, 0.1, 0.2, 0.2], [0.2, 0.1, 0.3, 0.2]]), "TargetBox": target},
              dict(code_type="decode_center_size", box_normalized=False, axis=1))
    assert_values(out["OutputBox"], f32([[[0.08878374, -0.18030202, 2.2112162, 1.880302],
                                          [0.38735318, -0.12493062, 2.2126467, 2.1249306], [0, 0, 2, 2]],
                                         [[0.4, 0.7571945, 2.4, 4.6428056],
                                          [1.0387387, 0.9963267, 3.3212614, 4.2436733],
                                          [1.9572487, 0.3903252, 4.4427514, 3.009675]]]))


def test_box_coder_encodes_against_every_prior_with_the_variance_attribute():
    out = run("box_coder", {"PriorBox": f32([[0, 0, 2, 2], [1, 1, 3, 4]]), "TargetBox": f32([[0, 0, 2, 2],
                                                                                           [0.5, 1, 3, 2]])},
              dict(code_type="encode_center_size", box_normalized=True, variance=[0.1, 0.1, 0.2, 0.2]))
    assert_values(out["OutputBox"], f32([[[0, 0, 0, 0], [-5, -5, 0, -2.0273254]],
                                         [[3.75, 2.5, 1.1157178, -3.465736], [-1.25, -3.3333335, 1.1157178,
                                                                              -5.4930615]]]))


def test_box_coder_decodes_float64_with_the_variance_attribute_as_float32_does():
    """Paddle's float64 kernel reads the attribute's floats as doubles (offsets all but ignored: it gives
    [[5.2e-11, -1.3e-08, 2.0, 2.0], [1.0, 1.0, 3.0, 4.0]] here); gradc scales the offsets, as in float32."""
    prior, offsets = [[0, 0, 2, 2], [1, 1, 3, 4]], [[[0.5, -0.5, 0.2, 0.1], [1.0, 0.0, -0.3, 0.4]]]
    attrs = dict(code_type="decode_center_size", axis=0, variance=[0.1, 0.1, 0.2, 0.2])
    wide = run("box_coder", {"PriorBox": np.array(prior, np.float64), "TargetBox": np.array(offsets)}, attrs)
    narrow = run("box_coder", {"PriorBox": f32(prior), "TargetBox": f32(offsets)}, attrs)   # Paddle's values
    assert_values(narrow["OutputBox"], f32([[[0.0591892, -0.12020135, 2.140811, 1.9202013],
                                             [1.2582355, 0.8750694, 3.1417646, 4.1249304]]]))
    np.testing.assert_allclose(wide["OutputBox"], narrow["OutputBox"], rtol=1e-6)
    assert wide["OutputBox"].dtype == np.float64


def test_distribute_fpn_proposals_levels_restore_index_and_counts_per_image():
    """Scales 51, 121, 224 and 479 go to levels 2 to 5; an inverted box has area 0 (level 2); image 1 is empty."""
    rois = f32([[0, 0, 50, 50], [10, 10, 120, 130], [0, 0, 223, 223], [5, 5, 500, 460], [3, 3, 2, 9]])
    out = run("distribute_fpn_proposals", {"FpnRois": rois, "RoisNum": i32([3, 0, 2])},
              dict(min_level=2, max_level=5, refer_level=4, refer_scale=224, pixel_offset=True))
    levels = out["MultiFpnRois"]
    assert [level.tolist() for level in levels] == [[[0, 0, 50, 50], [3, 3, 2, 9]], [[10, 10, 120, 130]],
                                                     [[0, 0, 223, 223]], [[5, 5, 500, 460]]]
    assert_values(out["RestoreIndex"], i32([[0], [2], [3], [4], [1]]))
    assert [c.tolist() for c in out["MultiLevelRoIsNum"]] == [[1, 0, 1], [1, 0, 0], [1, 0, 0], [0, 0, 1]]


def test_distribute_fpn_proposals_puts_rois_of_no_finite_level_on_the_lowest_as_paddle():
    """A NaN box, an infinite one and one whose float32 area overflows have no level an int holds: Paddle's cast
    makes it INT_MIN, so they go to min_level (Paddle 3.3.1's levels and RestoreIndex)."""
    rois = f32([[0, 0, 50, 50], [0, 0, np.nan, 4], [0, 0, np.inf, np.inf], [0, 0, 1e30, 1e30], [0, 0, 500, 460]])
    out = run("distribute_fpn_proposals", {"FpnRois": rois, "RoisNum": i32([5])},
              dict(min_level=2, max_level=5, refer_level=4, refer_scale=224))
    assert [len(level) for level in out["MultiFpnRois"]] == [4, 0, 0, 1]
    np.testing.assert_array_equal(out["MultiFpnRois"][0], rois[:4])
    assert_values(out["RestoreIndex"], i32([[0], [1], [2], [3], [4]]))


def test_yolo_box_of_no_images_decodes_no_boxes():
    out = run("yolo_box", {"X": np.zeros((0, 6, 2, 2), np.float32), "ImgSize": np.zeros((0, 2), np.int32)},
              dict(anchors=[8, 12], class_num=1))
    assert out["Boxes"].shape == (0, 4, 4) and out["Scores"].shape == (0, 4, 1)


def test_float64_in_float64_out():
    out = run("multiclass_nms3", {"BBoxes": np.array([CHAIN], np.float64), "Scores": np.full((1, 2, 6), 0.5)},
              dict(score_threshold=0.1, nms_threshold=0.3))
    assert_values(out["Out"], np.array([[1, 0.5, 0, 0, 4, 4], [1, 0.5, 3, 0, 7, 4], [1, 0.5, 10, 10, 12, 12]]))
    assert_values(out["Index"], i32([[0], [3], [5]]))


@pytest.mark.parametrize("op, attrs", [("multiclass_nms3", {"nms_threshold": 0.3}), ("matrix_nms", {})])
def test_float64_scores_meet_the_threshold_paddle_holds_in_float32(op, attrs):
    """score_threshold 0.01 is 0.0099999998 as Paddle's float attribute: a float64 score of 0.0099999999 is above
    it (Paddle 3.3.1 keeps that box), though below the 0.01 of a program built in memory."""
    boxes, scores = np.array([[[0.0, 0, 1, 1], [2, 2, 3, 3]]]), np.array([[[0.0099999999, 0.5]]])
    out = run(op, {"BBoxes": boxes, "Scores": scores}, dict(attrs, score_threshold=0.01, background_label=-1))
    np.testing.assert_array_equal(out["Out"], [[0, 0.5, 2, 2, 3, 3], [0, 0.0099999999, 0, 0, 1, 1]])


def test_float32_exp_is_glibcs_expf_to_the_bit():
    """Paddle's kernels call glibc's expf, which is an ulp off the rounded exponential on ~1 input in 1,600."""
    try:
        libm = ctypes.CDLL("libm.so.6")
    except OSError:
        pytest.skip("no glibc here")
    libm.expf.restype, libm.expf.argtypes = ctypes.c_float, [ctypes.c_float]
    x = np.concatenate([np.random.default_rng(0).uniform(-104, 89, 20000),
                        [-np.inf, np.inf, 88.72283, 88.72284, -103.97207, -103.97209, 0.0]]).astype(np.float32)
    np.testing.assert_array_equal(expf(x), [libm.expf(float(v)) for v in x])


def test_libstdcxx_orders_agree_with_a_sort_where_scores_are_distinct():
    keys = f32([0.3, 0.9, 0.1, 0.5, 0.7])
    assert full_sort(keys).tolist() == partial_sort(keys, 5).tolist() == [1, 4, 3, 0, 2]
    assert sorted(nth_element(keys, 2).tolist()) == [1, 4]


def test_the_sorted_shortcut_leaves_every_tie_that_decides_a_place_to_the_replay():
    """numpy's order stands in for libstdc++'s only where no two equal keys compete for a place among the first
    ``count``: on keys with many ties, the positions are the replay's (scans_order on (-key, position))."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        keys = f32(rng.integers(0, rng.integers(1, 40), rng.integers(1, 120)))
        count = int(rng.integers(1, keys.size + 1))
        for ours, replay, args in ((partial_sort(keys, count), scans_order.partial_sort, (0, count, keys.size)),
                                   (full_sort(keys), scans_order.sort, (0, keys.size))):
            pairs = [(-key, i) for i, key in enumerate(keys.tolist())]
            replay(pairs, *args)
            assert ours.tolist() == [i for _, i in pairs[:ours.size]]


def test_bad_inputs_name_the_op():
    with pytest.raises(ProgramError, match="yolo_box.*channels"):
        run("yolo_box", {"X": np.zeros((1, 13, 2, 2), np.float32), "ImgSize": i32([[8, 8]])},
            dict(anchors=[8, 12, 4, 4], class_num=2))
    with pytest.raises(ExecutionError, match="RoisNum"):
        run("distribute_fpn_proposals", {"FpnRois": np.zeros((3, 4), np.float32), "RoisNum": i32([1, 1])})
