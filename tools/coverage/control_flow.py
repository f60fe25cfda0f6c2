"""Rows: paddle.static.nn's control flow (cond, case, switch_case, while_loop), the conditional_block and while
ops they build, with the values the branches and loop bodies compute differentiated through them."""

import paddle
from paddle.static import nn

from .spec import f, given, table


def _loop(x, w, steps: int):
    """h <- tanh(h @ w), ``steps`` times."""
    def body(i, h):
        return [i + 1, paddle.tanh(paddle.matmul(h, w))]
    return nn.while_loop(lambda i, h: i < steps, body, [paddle.full([1], 0, "int64"), x])[1]


def _array_loop(x):
    """Each step's x * (i + 1) written to a tensor array, then stacked from it."""
    array = paddle.tensor.create_array("float32")
    def body(i, array):
        paddle.tensor.array_write(x * paddle.cast(i + 1, "float32"), i, array)
        return [i + 1, array]
    i, array = nn.while_loop(lambda i, array: i < 3, body, [paddle.full([1], 0, "int64"), array])
    return paddle.stack([paddle.tensor.array_read(array, paddle.full([1], k, "int64")) for k in range(3)])


ROWS = table(
    "control_flow",
    ("cond_true", lambda x: nn.cond(paddle.mean(x) > -10.0, lambda: x * 2.0, lambda: paddle.exp(x)), f(3, 4)),
    ("cond_false", lambda x: nn.cond(paddle.mean(x) > 10.0, lambda: x * 2.0, lambda: paddle.exp(x)), f(3, 4)),
    ("cond_two_outputs", lambda x, y: paddle.add(*nn.cond(paddle.sum(x) < paddle.sum(y), lambda: (x * y, y),
                                                              lambda: (x, x + y))), f(3), f(3)),
    ("cond_nested", lambda x: nn.cond(paddle.mean(x) > -10.0, lambda: nn.cond(
        paddle.max(x) > 10.0, lambda: x, lambda: paddle.tanh(x)), lambda: x * 3.0), f(2, 3)),
    ("case", lambda x: nn.case([(paddle.mean(x) > 10.0, lambda: x * 2.0), (paddle.mean(x) > -10.0, lambda: x * x)],
                               default=lambda: x), f(3, 4)),
    ("switch_case", lambda x, i: nn.switch_case(i, {0: lambda: x + 1.0, 1: lambda: paddle.sin(x), 2: lambda: x * x}),
     f(3, 4), given([1], "int32")),
    ("switch_case_default", lambda x, i: nn.switch_case(i, {0: lambda: x + 1.0, 1: lambda: paddle.sin(x)},
                                                        default=lambda: paddle.cos(x)), f(3, 4), given([5], "int32")),
    ("while_loop", lambda x, w: _loop(x, w, 3), f(2, 4), f(4, 4)),
    ("while_loop_array", lambda x: _array_loop(x), f(2, 3)),
)
