"""Cases for Paddle3D's PointNet++ gathers (gradc.ops.pointnet2): gather_operation, grouping_operation_batch and
grouping_operation_stack, indices repeating (their grads add), the stacked one over two batches of other sizes; then
their grad ops' makers (linear in dOut)."""

import numpy as np

from . import Case, rng
from .second_order import second_order

r = rng(83)


def randn(*shape):
    return r.standard_normal(shape)


def ints(*values) -> np.ndarray:
    return np.array(values, np.int32)


GATHER = {"points": randn(2, 3, 5), "idx": ints([0, 4, 4, 2], [1, 1, 3, 0])}
GROUP = {"points_tensor": randn(2, 3, 5), "idx_tensor": r.integers(0, 5, (2, 3, 4)).astype(np.int32)}
STACK = {"features_tensor": randn(7, 3), "features_batch_cnt_tensor": ints(3, 4),
         "idx_tensor": ints([0, 2, 2], [1, 3, 3], [3, 0, 1]), "idx_batch_cnt_tensor": ints(1, 2)}

CASES = [
    Case("gather_operation", GATHER),
    Case("grouping_operation_batch", GROUP),
    Case("grouping_operation_stack", STACK),
    second_order("gather_operation", GATHER),
    second_order("grouping_operation_batch", GROUP),
    second_order("grouping_operation_stack", STACK),
]
