"""Optional inputs of gradc.ops.yolo_loss: GTScore weighs a gt box's terms and is the objectness mask of its cell.
Expected by construction: X 0 makes every sigmoid cross entropy log 2, and the box (centre of the one cell, the
anchor's size) makes the L1 targets 0, so the loss is score * log 2 * ((2 - w h) 2 + 1 class + 1 objectness)."""

import numpy as np

from . import SlotCase

SCORE = 0.5
YOLO = {"anchors": [4, 4], "anchor_mask": [0], "class_num": 1, "downsample_ratio": 8, "use_label_smooth": False}
INPUTS = {"X": np.zeros((1, 6, 1, 1)), "GTBox": np.array([[[0.5, 0.5, 0.5, 0.5]]]),
          "GTLabel": np.zeros((1, 1), np.int32), "GTScore": np.array([[SCORE]])}

CASES = [
    SlotCase("yolov3_loss", "GTScore", INPUTS,
             {"Loss": np.array([SCORE * np.log(2) * ((2 - 0.25) * 2 + 2)]),
              "ObjectnessMask": np.full((1, 1, 1, 1), SCORE), "GTMatchMask": np.zeros((1, 1), np.int32)}, YOLO),
]
