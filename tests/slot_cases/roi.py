"""Optional inputs of gradc.ops.roi: RoisNum puts the one box on image 1 of two (without it gradc refuses X of
two images, so the slot has no attribute to override). X is 0..17 over [2, 1, 3, 3]: image 1 holds 9..17.
Expected by construction: roi_align's one sample of the box (0, 0, 2, 2) is pixel (1, 1); roi_pool's and
psroi_pool's bin over the box (0, 0, 1, 1) is pixels (0..1, 0..1): 9, 10, 12, 13."""

import numpy as np

from . import SlotCase

X = np.arange(18.0).reshape(2, 1, 3, 3)
ON_IMAGE_1 = np.array([0, 1], np.int32)

CASES = [
    SlotCase("roi_align", "RoisNum", {"X": X, "ROIs": np.array([[0.0, 0.0, 2.0, 2.0]]), "RoisNum": ON_IMAGE_1},
             {"Out": np.array([[[[13.0]]]])}, {"sampling_ratio": 1}, overrides=False),
    SlotCase("roi_pool", "RoisNum", {"X": X, "ROIs": np.array([[0.0, 0.0, 1.0, 1.0]]), "RoisNum": ON_IMAGE_1},
             {"Out": np.array([[[[13.0]]]]), "Argmax": np.array([[[[4]]]])}, overrides=False),
    SlotCase("psroi_pool", "RoisNum", {"X": X, "ROIs": np.array([[0.0, 0.0, 1.0, 1.0]]), "RoisNum": ON_IMAGE_1},
             {"Out": np.array([[[[11.0]]]])}, {"output_channels": 1}, overrides=False),
]
