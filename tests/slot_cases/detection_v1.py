"""Optional inputs of the detection_v1 ops, with Paddle 3.3.1's values: collect_fpn_proposals's
MultiLevelRoIsNum splits each level's RoIs into images (without it they are one image, without a LoD)."""

import numpy as np

from . import SlotCase

LEVEL_0, LEVEL_1 = np.arange(16, dtype=np.float32).reshape(4, 4), 100 + np.arange(8, dtype=np.float32).reshape(2, 4)

CASES = [
    # equal scores (0.5) come last listed first, as Paddle's stable sort with a >= b leaves them
    SlotCase("collect_fpn_proposals", "MultiLevelRoIsNum", {
        "MultiLevelRois": [LEVEL_0, LEVEL_1],
        "MultiLevelScores": [np.array([[0.5], [0.7], [0.5], [0.9]], np.float32), np.array([[0.7], [0.2]], np.float32)],
        "MultiLevelRoIsNum": [np.array([3, 1], np.int32), np.array([0, 2], np.int32)]},
        {"FpnRois": np.concatenate([LEVEL_0[[1, 2, 0, 3]], LEVEL_1]), "RoisNum": np.array([3, 3], np.int32)},
        {"post_nms_topN": 10}, overrides=False),
]
