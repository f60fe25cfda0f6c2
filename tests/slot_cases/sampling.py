"""The optional input of affine_grid: the OutputShape tensor replaces the output_shape attribute. Expected by
construction: the identity Theta maps each pixel to its own coordinates, which for a 2 x 3 grid with
align_corners are x in (-1, 0, 1) and y in (-1, 1) (the attribute asks for another shape, so overrides=False)."""

import numpy as np

from . import SlotCase

IDENTITY = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])

CASES = [
    SlotCase("affine_grid", "OutputShape", {"Theta": IDENTITY, "OutputShape": np.array([1, 1, 2, 3], np.int32)},
             {"Output": np.array([[[[-1.0, -1.0], [0.0, -1.0], [1.0, -1.0]], [[-1.0, 1.0], [0.0, 1.0], [1.0, 1.0]]]])},
             attrs={"output_shape": [1, 1, 2, 2], "align_corners": True}, overrides=False),
]
