"""Rows: arguments given as a Tensor where the op takes an attribute. Paddle's legacy program then names the
Tensor's var in the attribute (wire type VAR, or VARS for a list of Tensors; Paddle's support_tensor), and its PIR
program takes the value as an operand: the op reads it when it runs."""

import paddle
import paddle.nn.functional as F

from .spec import const, f, ints, table, unit


def _t(value, dtype="int64"):
    return paddle.full([1], value, dtype)


ROWS = table(
    "tensor_attrs",
    ("mean_axis_tensor", lambda x: paddle.mean(x, axis=_t(1)), f(3, 4)),
    ("max_axis_tensor", lambda x: paddle.max(x, axis=_t(0)), f(3, 4)),
    ("prod_axis_tensor", lambda x: paddle.prod(x, axis=_t(1)), f(3, 4)),
    ("cumsum_axis_tensor", lambda x: paddle.cumsum(x, axis=_t(1)), f(3, 4)),
    ("pad_value_tensor", lambda x: F.pad(x, [1, 2], value=_t(0.5, "float32")), f(3, 4)),
    ("eye_tensor_sizes", lambda x: x * paddle.eye(_t(3), _t(4)), f(3, 4)),
    ("full_like_value_tensor", lambda x: x * paddle.full_like(x, _t(2.5, "float32")), f(3, 4)),
    ("bincount_minlength_tensor", lambda x, i: x * paddle.bincount(i, minlength=_t(7)).astype("float32"),
     f(7), ints(5, 6)),
    ("frobenius_norm_axes_tensors", lambda x: paddle.linalg.norm(x, p="fro", axis=[_t(0), _t(2)]), f(2, 3, 4)),
    ("conv2d_transpose_output_size_tensors",
     lambda x, w: F.conv2d_transpose(x, w, stride=2, output_size=[_t(10, "int32"), _t(9, "int32")]),
     f(1, 2, 4, 4), f(2, 3, 3, 3)),
    ("lstsq_rcond_tensor", lambda w, a, b: w * paddle.linalg.lstsq(a, b, rcond=_t(1e-5, "float32"))[0],
     f(3, 2), const(4, 3), const(4, 2)),
    ("uniform_bounds_tensors", lambda x: x * paddle.uniform([3, 4], min=_t(-2.0, "float32"), max=_t(0.5, "float32")),
     f(3, 4)),
    ("multinomial_samples_tensor",
     lambda p: paddle.gather(p, paddle.multinomial(p, num_samples=_t(2)).flatten(), axis=1), unit(1, 4)),
)
