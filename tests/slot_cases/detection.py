"""Optional inputs of the detection ops, with Paddle 3.3.1's values (the cases of tests/test_detection.py):
box_coder's PriorBoxVar scales the decoded offsets per prior; multiclass_nms3's and distribute_fpn_proposals's
RoisNum split the boxes into images (without it they are one image: the counts alone show it is read)."""

import numpy as np

from . import SlotCase

CHAIN = [[0, 0, 4, 4], [1, 0, 5, 4], [2, 0, 6, 4], [3, 0, 7, 4], [4, 0, 8, 4], [10, 10, 12, 12]]
OFFSETS = np.array([[[0.5, -0.5, 0.2, 0.1], [1.0, 0.0, -0.3, 0.4], [0.0, 0.0, 0.0, 0.0]],
                    [[-1.0, 0.5, 0.0, 1.0], [0.3, 0.3, 0.3, 0.3], [2.0, -2.0, 0.5, -0.5]]], np.float32)
DECODED = np.array([[[0.08878374, -0.18030202, 2.2112162, 1.880302], [0.38735318, -0.12493062, 2.2126467, 2.1249306],
                     [0, 0, 2, 2]],
                    [[0.4, 0.7571945, 2.4, 4.6428056], [1.0387387, 0.9963267, 3.3212614, 4.2436733],
                     [1.9572487, 0.3903252, 4.4427514, 3.009675]]], np.float32)
ROIS = np.array([[0, 0, 50, 50], [10, 10, 120, 130], [0, 0, 223, 223], [5, 5, 500, 460]], np.float32)   # a level each

CASES = [
    SlotCase("box_coder", "PriorBoxVar", {
        "PriorBox": np.array([[0, 0, 2, 2], [1, 1, 3, 4]], np.float32),
        "PriorBoxVar": np.array([[0.1, 0.1, 0.2, 0.2], [0.2, 0.1, 0.3, 0.2]], np.float32), "TargetBox": OFFSETS},
        {"OutputBox": DECODED}, {"code_type": "decode_center_size", "box_normalized": False, "axis": 1}),
    SlotCase("multiclass_nms3", "RoisNum", {
        "BBoxes": np.stack([CHAIN, np.add(CHAIN, 0.5)], axis=1).astype(np.float32),
        "Scores": np.array([[0.9, 0.2], [0.8, 0.7], [0.3, 0.7], [0.6, 0.1], [0.5, 0.9], [0.4, 0.4]], np.float32),
        "RoisNum": np.array([4, 0, 2], np.int32)},
        {"Index": np.array([[0], [6], [3], [8], [10], [9], [11]], np.int32),
         "NmsRoisNum": np.array([3, 0, 4], np.int32)},
        {"score_threshold": 0.25, "nms_threshold": 0.5, "background_label": -1}, overrides=False),
    SlotCase("distribute_fpn_proposals", "RoisNum", {"FpnRois": ROIS, "RoisNum": np.array([3, 0, 1], np.int32)},
             {"MultiFpnRois": [ROIS[[0]], ROIS[[1]], ROIS[[2]], ROIS[[3]]],
              "MultiLevelRoIsNum": [np.array(c, np.int32) for c in ([1, 0, 0], [1, 0, 0], [1, 0, 0], [0, 0, 1])]},
             {"min_level": 2, "max_level": 5, "refer_level": 4, "refer_scale": 224}, overrides=False),
]
