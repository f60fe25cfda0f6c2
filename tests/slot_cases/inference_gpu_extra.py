"""qkv_unpack_mha's CUDA kernel never reads src_mask: with zero q and k the weights are even over the two steps
(each 1 / (2 + 1e-6), the kernel's sum + 1e-6), whatever mask is fed."""

import numpy as np

from . import SlotCase

V = np.array([[[[1.0, 0.0]], [[0.0, 3.0]]]])   # [B 1, S 2, N 1, H 2]

CASES = [
    SlotCase("qkv_unpack_mha", "src_mask",
             {"q": np.zeros((1, 1, 1, 2)), "k": np.zeros((1, 2, 1, 2)), "v": V,
              "src_mask": np.array([[[[0.0, -1e4]]]])},
             {"out": np.array([[[[1.0, 3.0]]]]) / (2 + 1e-6)}, overrides=False),
]
