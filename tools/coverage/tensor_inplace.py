"""Rows: the public APIs that write the PIR ops of Tensor methods gradc lacked (docs/pir-sweep.md, "PIR ops of
the Tensor API gradc lacked"): paddle.divide's trunc and floor modes, Tensor.divide_ with one, paddle.range (legacy
and PIR range_v2) and uniform_random_batch_size_like. Tensor.fill_ / zero_ / fill_diagonal_ / normal_ / uniform_
refuse a static value (their pir_sweep rows record it); the _C_ops rows below build what those methods would write
(pd_op.fill_, fill_diagonal_), on an op's result, as PIR refuses an in-place op on a fed input."""

import paddle

from .spec import f, pos, table


def _copy(x):
    return x * 1.0


ROWS = table(
    "tensor_inplace",
    ("divide_trunc", lambda x, y: x * paddle.divide(x * 3.0, y + 0.5, rounding_mode="trunc"), f(2, 3), pos(2, 3)),
    ("divide_floor", lambda x, y: x * paddle.divide(x * 3.0, y + 0.5, rounding_mode="floor"), f(2, 3), pos(2, 3)),
    ("divide_trunc_", lambda x, y: x * (x * 3.0).divide_(y + 0.5, rounding_mode="trunc"), f(2, 3), pos(2, 3)),
    ("range_inclusive", lambda x: x * paddle.range(1, 3.5, 0.5), f(2, 6)),
    ("range_tensor_bounds", lambda x: x * paddle.range(paddle.full([1], 4.0), paddle.full([1], 0.0),
                                                       paddle.full([1], -1.0)), f(5)),
    ("uniform_random_batch_size_like", lambda x: x * paddle.tensor.random.uniform_random_batch_size_like(
        x, [1, 3], min=2.0, max=2.0), f(4, 3)),
    ("C_ops_fill_", lambda x: x * paddle._C_ops.fill_(_copy(x), 2.5), f(2, 3)),
    ("C_ops_fill_diagonal_", lambda x: x * paddle._C_ops.fill_diagonal_(_copy(x), 2.5, 1, True), f(5, 3)),
)
