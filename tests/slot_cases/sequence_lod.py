"""Optional inputs of gradc.ops.sequence_lod. sequence_conv's PaddingData fills the context rows past a
sequence's ends (row 0's context [pad 0, x0, x1] and row 1's [x0, x1, pad 1], summed by a filter of ones).
lod_reset's Y gives the LoD (the values pass through: tests/test_sequence_lod.py checks the LoD); im2sequence's Y
gives each image's real size, so the smaller image yields fewer patches."""

import numpy as np

from gradc import LoDTensor

from . import SlotCase

IMAGES = np.arange(18, dtype=np.float64).reshape(2, 1, 3, 3)


def patches(image: np.ndarray, rows: int, cols: int) -> np.ndarray:
    return np.array([image[0, a:a + 2, b:b + 2].reshape(-1) for a in range(rows) for b in range(cols)])


CASES = [
    SlotCase("sequence_conv", "PaddingData",
             {"X": LoDTensor([[1.0], [2.0]], [[0, 2]]), "PaddingData": np.array([[10.0], [20.0]]),
              "Filter": np.ones((3, 1))},
             {"Out": np.array([[13.0], [23.0]])},
             {"contextLength": 3, "contextStart": -1, "paddingTrainable": True}, overrides=False),
    SlotCase("lod_reset", "Y", {"X": np.array([[1.0], [2.0], [3.0]]), "Y": np.array([0, 1, 3], np.int32)},
             {"Out": np.array([[1.0], [2.0], [3.0]])}, overrides=False),
    SlotCase("im2sequence", "Y", {"X": IMAGES, "Y": np.array([[2.0, 2.0], [3.0, 3.0]], np.float32)},
             {"Out": np.concatenate([patches(IMAGES[0], 1, 1), patches(IMAGES[1], 2, 2)])},
             {"kernels": [2, 2]}, overrides=False),
]
