"""The detection_v1 family against Paddle 3.3.1: values its CPU kernels computed (pasted here: the tests do not
import Paddle), at the places that are easy to get wrong: layouts, ties, thresholds, rounding."""

from pathlib import Path

import numpy as np
import pytest

from gradc import ExecutionError, Executor, LoDTensor, Scope, append_backward
from gradc.layers import ProgramBuilder
from one_op import run


def f32(values):
    return np.array(values, np.float32)


def run_with_lod(op_type, inputs, attrs, slot):
    """The output ``slot`` of one op with its LoD (a LoDTensor), its declared shape unchecked."""
    net = ProgramBuilder()
    arrays = {name: getattr(value, "array", value) for name, value in inputs.items()}   # a LoDTensor's or the array
    feed = {net.data(name.lower(), list(arrays[name].shape), arrays[name].dtype.name): value
            for name, value in inputs.items()}
    net.op(op_type, dict(zip(inputs, ([name] for name in feed))), attrs)
    out = net.block.ops[-1].outputs[slot][0]
    return Executor().run(net.program, feed, [out], Scope(), return_lod=True)[0]


def test_affine_channel_reads_any_layout_but_nchw_as_channel_last():
    x = np.arange(2 * 4 * 2 * 3, dtype=np.float32).reshape(2, 4, 2, 3)
    scale, bias = f32([1, 2, 3]), f32([0.5] * 3)
    for layout in ("AnyLayout", "NHWC"):
        out = run("affine_channel", {"X": x, "Scale": scale, "Bias": bias}, {"data_layout": layout})["Out"]
        np.testing.assert_array_equal(out.reshape(-1)[:8], f32([0.5, 2.5, 6.5, 3.5, 8.5, 15.5, 6.5, 14.5]))
    out = run("affine_channel", {"X": x, "Scale": f32([1, 2, 3, 4]), "Bias": f32([0.5] * 4)},
              {"data_layout": "NCHW"})["Out"]
    np.testing.assert_array_equal(out.reshape(-1)[:8], f32([0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 12.5, 14.5]))


def test_shuffle_channel_float64_moves_whole_channels():
    """Paddle 3.3.1's float64 kernels copy sizeof(int) bytes per value (half of each channel): gradc moves all."""
    x = np.arange(6 * 2, dtype=np.float64).reshape(1, 6, 1, 2)
    out = run("shuffle_channel", {"X": x}, {"group": 2})["Out"]
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out[0, :, 0, 0], [0, 6, 2, 8, 4, 10])   # Paddle's float32 result
    np.testing.assert_array_equal(out[0, :, 0, 1], [1, 7, 3, 9, 5, 11])


def test_shuffle_channel_grad_undoes_the_shuffle():
    """Paddle 3.3.1's grad shuffles dOut forward again: [0, 2, 4, 1, 3, 5] here, wrong for 3 groups of 6."""
    net = ProgramBuilder()
    x, weights = net.data("x", [1, 6, 1, 1], "float32"), net.data("w", [1, 6, 1, 1], "float32")
    net.block.var(x).is_parameter = True
    out = net.op("shuffle_channel", {"X": x}, {"group": 3})[0]
    loss = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": out, "Y": weights})[0]},
                  {"reduce_all": True})[0]
    append_backward(net.program, loss)
    dout = np.arange(6, dtype=np.float32).reshape(1, 6, 1, 1)
    (dx,) = Executor().run(net.program, {x: np.zeros_like(dout), weights: dout}, [f"{x}@GRAD"], Scope())
    np.testing.assert_array_equal(dx.reshape(-1), [0, 3, 1, 4, 2, 5])


def test_add_position_encoding_sines_then_cosines_of_one_frequency():
    """With one sine per position (feature size 2) the rate is 1 / 10000, not 10000^(-k / (half - 1))."""
    out = run("add_position_encoding", {"X": np.zeros((1, 3, 2), np.float32)}, {"beta": 2.0})["Out"]
    np.testing.assert_allclose(out[0], f32([[0, 2], [2e-4, 2], [4e-4, 2]]), rtol=1e-6)
    out = run("add_position_encoding", {"X": np.ones((1, 2, 6), np.float32)}, {"alpha": 0.5})["Out"]
    np.testing.assert_allclose(out[0, 1], 0.5 + np.float32([0.84147096, 9.9998331e-03, 9.9999997e-05,
                                                               0.54030228, 0.99995, 1.0]), rtol=1e-6)


def test_add_position_encoding_needs_a_one_level_lod_for_2d_rows():
    with pytest.raises(ExecutionError, match="without a LoD"):
        run("add_position_encoding", {"X": np.zeros((5, 4), np.float32)})
    x = LoDTensor(np.zeros((5, 2), np.float32), [[0, 1, 2], [0, 2, 5]])   # Paddle 3.3.1 refuses 2 levels too
    with pytest.raises(ExecutionError, match="with 2 LoD levels"):
        run_with_lod("add_position_encoding", {"X": x}, {}, "Out")


def test_anchor_generator_centres_and_rounded_base_sizes():
    out = run("anchor_generator", {"Input": np.zeros((1, 2, 2, 3), np.float32)},
              {"anchor_sizes": [32.0, 64.0], "aspect_ratios": [0.5, 1.0, 2.0], "variances": [0.1, 0.1, 0.2, 0.2],
               "stride": [16.0, 8.0]})
    assert out["Anchors"].shape == (2, 3, 6, 4)
    np.testing.assert_array_equal(out["Anchors"][0, 1], f32([[8, -12, 39, 19], [-8, -28, 55, 35],
                                                             [13, -18, 34, 25], [2, -40, 45, 47],
                                                             [16, -28, 31, 35], [8, -60, 39, 67]]))
    np.testing.assert_array_equal(out["Variances"][1, 2, 0], f32([0.1, 0.1, 0.2, 0.2]))


def test_box_clip_rounds_the_scaled_image_size_half_away_from_zero():
    boxes = f32([[-3, 2, 50, 7.6], [1, -1, 9.2, 70]])
    out = run("box_clip", {"Input": boxes, "ImInfo": f32([[40, 30, 1.5]])})["Output"]
    np.testing.assert_array_equal(out, f32([[0, 2, 19, 7.6], [1, 0, 9.2, 26]]))   # 40 / 1.5 = 26.67 -> 27
    out = run("box_clip", {"Input": boxes, "ImInfo": f32([[5, 5, 2]])})["Output"]   # 2.5 -> 3, not 2
    np.testing.assert_array_equal(out, f32([[0, 2, 2, 2], [1, 0, 2, 2]]))


DIST = f32([[0.5, 0.9, 0.9, 0.2], [0.9, 0.1, 0.9, 0.6], [0.0, 0.3, 0.3, 0.3]])


def test_bipartite_match_greedy_ties_to_the_first_column_then_row():
    out = run("bipartite_match", {"DistMat": DIST}, {"dist_threshold": 0.25})
    np.testing.assert_array_equal(out["ColToRowMatchIndices"], [[1, 0, 2, -1]])
    np.testing.assert_array_equal(out["ColToRowMatchDist"], f32([[0.9, 0.9, 0.3, 0]]))
    out = run("bipartite_match", {"DistMat": DIST}, {"match_type": "per_prediction", "dist_threshold": 0.25})
    np.testing.assert_array_equal(out["ColToRowMatchIndices"], [[1, 0, 2, 1]])
    np.testing.assert_array_equal(out["ColToRowMatchDist"], f32([[0.9, 0.9, 0.3, 0.6]]))


def test_bipartite_match_leaves_distances_below_1e_6_unmatched():
    dist = np.zeros((2, 3), np.float32)
    dist[1, 2] = 1e-7
    out = run("bipartite_match", {"DistMat": dist})
    np.testing.assert_array_equal(out["ColToRowMatchIndices"], [[-1, -1, -1]])


def test_bipartite_match_of_130_rows_or_more_follows_paddles_std_sort_among_ties():
    """From 130 rows on Paddle sorts every pair with std::sort: equal distances match in libstdc++'s order."""
    dist = (np.random.default_rng(5).integers(0, 4, (140, 6)) / 4).astype(np.float32)
    out = run("bipartite_match", {"DistMat": dist})
    np.testing.assert_array_equal(out["ColToRowMatchIndices"], [[46, 109, 108, 38, 42, 45]])
    out = run("bipartite_match", {"DistMat": np.full((130, 3), 0.5, np.float32)})
    np.testing.assert_array_equal(out["ColToRowMatchIndices"], [[89, 85, 88]])


NAN_MATCHES = Path(__file__).parent / "data" / "paddle" / "bipartite_match_nan.npz"


def test_bipartite_match_with_nan_distances_matches_paddles_std_sort():
    """A NaN distance compares false both ways in Paddle's comparator (a > b): its std::sort leaves the NaN pairs, and
    the numbers beside them, where libstdc++'s steps land them, which gradc replays (it put NaN last: 2 of these 6
    matrices matched Paddle's). Paddle's outputs: tools/paddle_bipartite_nan_reference.py."""
    cases = np.load(NAN_MATCHES)
    for i in range(len(cases.files) // 3):
        out = run("bipartite_match", {"DistMat": cases[f"dist{i}"]})
        np.testing.assert_array_equal(out["ColToRowMatchIndices"], cases[f"indices{i}"])
        np.testing.assert_array_equal(out["ColToRowMatchDist"], cases[f"matched{i}"])


def test_multiclass_nms_keeping_nothing_gives_one_row_of_minus_one():
    boxes = f32([[[0, 0, 2, 2], [3, 3, 4, 4]]])
    out = run_with_lod("multiclass_nms", {"BBoxes": boxes, "Scores": f32([[[0.2, 0.3], [0.4, 0.1]]])},
                       {"score_threshold": 0.5}, "Out")
    np.testing.assert_array_equal(out.array, f32([[-1]]))
    assert out.lod == ((0, 1),)
    out = run_with_lod("multiclass_nms", {"BBoxes": np.concatenate([boxes, boxes]),
                                          "Scores": f32([[[0.2, 0.3], [0.4, 0.9]], [[0.1] * 2, [0.2] * 2]])},
                       {"score_threshold": 0.35}, "Out")
    np.testing.assert_array_equal(out.array, f32([[1, 0.9, 3, 3, 4, 4], [1, 0.4, 0, 0, 2, 2]]))
    assert out.lod == ((0, 2, 2),)


def test_multiclass_nms2_is_multiclass_nms_with_multiclass_nms3s_index():
    """Paddle 2.x's multiclass_nms2 (in a quantized YOLO model from GitHub): Out as multiclass_nms, Index each row's
    box across the batch as multiclass_nms3's, both with the LoD; nothing kept gives both empty, not [[-1]]."""
    rng = np.random.default_rng(3)
    corners = rng.uniform(0, 8, (2, 6, 2)).astype(np.float32)
    boxes = np.concatenate([corners, corners + rng.uniform(1, 4, (2, 6, 2)).astype(np.float32)], axis=2)
    inputs = {"BBoxes": boxes, "Scores": rng.uniform(0, 1, (2, 3, 6)).astype(np.float32)}
    attrs = {"score_threshold": 0.3, "nms_threshold": 0.4, "keep_top_k": 4, "background_label": -1}
    out, index = (run_with_lod("multiclass_nms2", inputs, attrs, slot) for slot in ("Out", "Index"))
    expected = run_with_lod("multiclass_nms", inputs, attrs, "Out")
    np.testing.assert_array_equal(out.array, expected.array)
    assert out.lod == index.lod == expected.lod and len(out.array) == 8
    np.testing.assert_array_equal(index.array, run("multiclass_nms3", inputs, attrs)["Index"])
    nothing = {**attrs, "score_threshold": 2.0}
    out, index = (run_with_lod("multiclass_nms2", inputs, nothing, slot) for slot in ("Out", "Index"))
    assert out.array.shape == (0, 6) and index.array.shape == (0, 1) and out.lod == ((0, 0, 0),)


def test_generate_proposals_compares_min_size_with_the_size_over_the_image_scale():
    """One anchor [0, 0, 7, 7] (8 pixels wide), unmoved: kept at scale 1 with min_size 8, dropped at scale 2."""
    inputs = {"Scores": f32([[[[0.9]]]]), "BboxDeltas": np.zeros((1, 4, 1, 1), np.float32),
              "Anchors": f32([[[[0, 0, 7, 7]]]]), "Variances": np.ones((1, 1, 1, 4), np.float32)}
    attrs = {"min_size": 8.0, "pre_nms_topN": 10, "post_nms_topN": 10}
    kept = run("generate_proposals", {**inputs, "ImInfo": f32([[16, 16, 1]])}, attrs)
    np.testing.assert_array_equal(kept["RpnRois"], f32([[0, 0, 7, 7]]))
    dropped = run("generate_proposals", {**inputs, "ImInfo": f32([[16, 16, 2]])}, attrs)
    np.testing.assert_array_equal(dropped["RpnRois"], np.zeros((1, 4), np.float32))   # Paddle's empty proposal
    np.testing.assert_array_equal(dropped["RpnRoiProbs"], np.zeros((1, 1), np.float32))



def test_generate_proposals_without_nms_keeps_std_nth_elements_order():
    """nms_thresh 0: Paddle returns the pre_nms_topN picked by std::nth_element in its (partial) order, unsorted."""
    scores = f32([0.1, 0.5, 0.3, 0.9, 0.7, 0.2, 0.8, 0.4]).reshape(1, 1, 1, 8)
    anchors = f32([[i * 4, 0, i * 4 + 3, 3] for i in range(8)]).reshape(1, 8, 1, 4)
    out = run("generate_proposals", {"Scores": scores, "BboxDeltas": np.zeros((1, 4, 1, 8), np.float32),
                                     "ImInfo": f32([[64, 64, 1]]), "Anchors": anchors,
                                     "Variances": np.ones((1, 8, 1, 4), np.float32)},
              {"pre_nms_topN": 5, "nms_thresh": 0.0})
    np.testing.assert_array_equal(out["RpnRoiProbs"].reshape(-1), f32([0.5, 0.8, 0.7, 0.9, 0.4]))
    np.testing.assert_array_equal(out["RpnRois"][:, 0], f32([4, 24, 16, 12, 28]))

def test_collect_fpn_proposals_keeps_each_rois_image_after_an_empty_one():
    """Paddle 3.3.1 counts RoI 2 (the first of image 2) to the empty image 1: RoisNum [2, 1, 2]."""
    rois, scores = np.arange(20, dtype=np.float32).reshape(5, 4), f32([[0.5], [0.7], [0.6], [0.9], [0.1]])
    out = run("collect_fpn_proposals", {"MultiLevelRois": [rois], "MultiLevelScores": [scores],
                                        "MultiLevelRoIsNum": [np.array([2, 0, 3], np.int32)]}, {"post_nms_topN": 10})
    np.testing.assert_array_equal(out["RoisNum"], [2, 0, 3])
    np.testing.assert_array_equal(out["FpnRois"], rois[[1, 0, 3, 2, 4]])


def test_collect_fpn_proposals_lod_keeps_a_last_image_without_rois():
    """post_nms_topN 1 keeps image 0's RoI: the LoD still has image 1 (Paddle 3.3.1 stops it at [0, 1])."""
    rois, scores = np.arange(12, dtype=np.float32).reshape(3, 4), f32([[0.9], [0.2], [0.3]])
    out = run_with_lod("collect_fpn_proposals", {"MultiLevelRois": LoDTensor(rois, [[0, 1, 3]]),
                                                 "MultiLevelScores": LoDTensor(scores, [[0, 1, 3]])},
                       {"post_nms_topN": 1}, "FpnRois")
    np.testing.assert_array_equal(out.array, rois[:1])
    assert out.lod == ((0, 1, 1),)
