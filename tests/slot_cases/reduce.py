"""Optional inputs of gradc.ops.reduce: the axes of reduce_all / reduce_any / reduce_amax / reduce_amin as tensors,
which override dim
(Paddle 3.3.1's kernels ignore them; gradc reads them as the slots say). keep_dim keeps the results with
and without the slot comparable."""

import numpy as np

from . import SlotCase

B = np.random.default_rng(2).random((2, 3, 4)) > 0.25
F = np.random.default_rng(3).standard_normal((2, 3, 4))


def _cases(op, fn, x=B):
    return [
        SlotCase(op, "AxisTensor", {"X": x, "AxisTensor": np.array([2, 0], np.int64)},
                 {"Out": fn(x, axis=(0, 2), keepdims=True)}, {"dim": [1], "keep_dim": True}),
        SlotCase(op, "AxisTensorList", {"X": x, "AxisTensorList": [np.array([-1], np.int32), np.array([1], np.int32)]},
                 {"Out": fn(x, axis=(1, 2), keepdims=True)}, {"dim": [0], "keep_dim": True}),
    ]


CASES = (_cases("reduce_all", np.all) + _cases("reduce_any", np.any) + _cases("reduce_amax", np.max, F)
         + _cases("reduce_amin", np.min, F))
