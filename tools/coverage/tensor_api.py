"""Rows: PIR rows' witnesses: tensor-API functions whose legacy ops gradc has but whose PIR ops it did not map."""

import paddle
import paddle.nn.functional as F

from .spec import Input, f, given, ints, soft, table, unit


def _ints(*values):
    return paddle.to_tensor(list(values))


def _rotate_half(x):
    first, second = paddle.split(x, 2, axis=-1)
    return paddle.concat([-second, first], axis=-1)


TRIGONOMETRY_AND_SHAPES = table(
    "tensor_api",
    ("sin", lambda x: paddle.sin(x), f(2, 5)),
    ("cos", lambda x: paddle.cos(x), f(2, 5)),
    ("rotary_embedding", lambda x, t: x * paddle.cos(t) + _rotate_half(x) * paddle.sin(t), f(2, 3, 4), f(3, 4)),
    ("tril", lambda x: paddle.tril(x), f(3, 4)),
    ("tril_diagonal", lambda x: paddle.tril(x, diagonal=1), f(3, 4)),
    ("triu", lambda x: paddle.triu(x), f(3, 4)),
    ("triu_diagonal", lambda x: paddle.triu(x, diagonal=-1), f(3, 4)),
    ("any", lambda x: x * paddle.any(x > 0, axis=1, keepdim=True).astype("float32"), f(3, 4)),
    ("any_all", lambda x: x * paddle.any(x > 1).astype("float32"), f(3, 4)),
    ("diag_vector", lambda x: paddle.diag(x), f(3)),
    ("diag_vector_offset", lambda x: paddle.diag(x, offset=1, padding_value=0.5), f(3)),
    ("diag_matrix", lambda x: paddle.diag(x, offset=-1), f(3, 4)),
    ("roll", lambda x: paddle.roll(x, 1, axis=1), f(3, 4)),
    ("roll_flat", lambda x: paddle.roll(x, -2), f(3, 4)),
    ("roll_axes", lambda x: paddle.roll(x, [1, 2], axis=[0, 1]), f(3, 4)),
    ("unbind", lambda x: paddle.unbind(x, axis=1), f(3, 2)),
    ("meshgrid", lambda x, y: paddle.meshgrid(x, y), f(3), f(4)),
    ("repeat_interleave", lambda x: paddle.repeat_interleave(x, 2, axis=1), f(2, 3)),
    ("repeat_interleave_flat", lambda x: paddle.repeat_interleave(x, 2), f(2, 3)),
    ("repeat_interleave_tensor", lambda x: paddle.repeat_interleave(x, _ints(1, 0, 2), axis=1), f(2, 3)),
    ("kthvalue", lambda x: paddle.kthvalue(x, 2, axis=1)[0], f(3, 5)),
    ("kthvalue_keepdim", lambda x: paddle.kthvalue(x, 3, axis=0, keepdim=True)[0], f(3, 5)),
    ("masked_select", lambda x, m: paddle.masked_select(x, m > 0).sum(), f(3, 4), f(3, 4)),
    ("put_along_axis", lambda x, v: paddle.put_along_axis(x, _ints([0], [2]), v, 1), f(2, 4), f(2, 1)),
    ("put_along_axis_add", lambda x, v: paddle.put_along_axis(x, _ints([0, 1], [2, 2]), v, 1, reduce="add"),
     f(2, 4), f(2, 2)),
    ("put_along_axis_mul", lambda x, v: paddle.put_along_axis(x, _ints([1], [3]), v, 1, reduce="mul",
                                                              include_self=False), f(2, 4), f(2, 1)),
    ("index_add", lambda x, v: paddle.index_add(x, _ints(0, 2), 0, v), f(3, 4), f(2, 4)),
    ("index_add_axis1", lambda x, v: paddle.index_add(x, _ints(3, 1, 3), 1, v), f(2, 4), f(2, 3)),
)

INTEGER_RESULTS = table(
    "tensor_api",
    ("bincount", lambda x, i: x * paddle.bincount(i, minlength=5).astype("float32"), f(5), ints(5, 7)),
    ("searchsorted", lambda x, s, v: paddle.gather(x, paddle.searchsorted(s, v)),
     f(6), given([0.0, 1.0, 2.0, 3.0, 4.0], "float32"), given([0.5, 2.0, 4.5], "float32")),
    ("searchsorted_right", lambda x, s, v: paddle.gather(x, paddle.searchsorted(s, v, right=True)),
     f(6), given([0.0, 1.0, 2.0, 3.0, 4.0], "float32"), given([0.5, 2.0, 3.5], "float32")),
    ("bucketize", lambda x, v: paddle.gather(x, paddle.bucketize(v, _ints(1.0, 2.0, 3.0), out_int32=True)),
     f(4), given([0.5, 2.0, 3.5], "float32")),
    ("unique", lambda x: paddle.gather(x, paddle.unique(_ints(3, 1, 3, 0)), axis=1), f(2, 4)),
    ("unique_all", lambda x: _unique_all(x, _ints(3, 1, 3, 0)), f(2, 4)),
    ("gather_tree", lambda x: x * F.gather_tree(_ints([[2, 1]], [[0, 2]]), _ints([[0, 0]], [[1, 0]]))
     .astype("float32"), f(2, 1, 2)),
    ("shard_index", lambda x, i: x * paddle.shard_index(i, 10, 2, 1).astype("float32"), f(4, 1), ints(10, 4, 1)),
    ("accuracy", lambda x, y: x * paddle.metric.accuracy(x, y, k=2), f(4, 5), ints(5, 4, 1)),
    ("linspace", lambda x: x * paddle.linspace(0, 1, 4), f(2, 4)),
    ("arange", lambda x: x * paddle.arange(4).astype("float32"), f(2, 4)),
    ("arange_float", lambda x: x * paddle.arange(0.5, 2.5, 0.5, dtype="float32"), f(2, 4)),
)


def _unique_all(x, values):
    out, index, inverse, counts = paddle.unique(values, return_index=True, return_inverse=True, return_counts=True)
    picked = paddle.gather(x, out, axis=1) * counts.astype("float32")
    return picked.sum() + paddle.gather(x, inverse, axis=1).sum() + paddle.gather(x, index, axis=1).sum()


def _relu_grad(x, v):
    """relu's gradient at x times v, differentiated again: relu_double_grad. Taken at a copy of x, so that the
    var x@GRAD is the loss's gradient, not this first one."""
    at = paddle.scale(x, 1.0)
    return paddle.static.gradients(F.relu(at), at, target_gradients=v)[0]


def _grads_times(fn, v, *xs):
    """fn's gradients at xs, each times v (flattened, joined), to be differentiated again: Paddle's backward
    writes its second-derivative op of fn's (tanh_double_grad, matmul_double_grad, ...). Taken at copies, as
    _relu_grad."""
    at = [paddle.scale(x, 1.0) for x in xs]
    grads = paddle.static.gradients(fn(*at), at, target_gradients=v)
    return paddle.concat([grad.flatten() for grad in grads])


LOSSES_AND_DRAWS = table(
    "tensor_api",
    ("identity_loss_mean", lambda x: paddle.incubate.identity_loss(x, reduction="mean"), f(3, 4)),
    ("identity_loss_sum", lambda x: paddle.incubate.identity_loss(x, reduction="sum"), f(3, 4)),
    ("identity_loss_none", lambda x: paddle.incubate.identity_loss(x, reduction="none"), f(3, 4)),
    ("log_loss", lambda p, y: F.log_loss(p, y), unit(4, 1), unit(4, 1, grad=False)),
    ("log_loss_eps", lambda p, y: F.log_loss(p, y, epsilon=0.01), unit(4, 1), unit(4, 1, grad=False)),
    ("label_smooth", lambda y: F.label_smooth(y, epsilon=0.2), Input((3, 4), "soft")),
    ("label_smooth_prior", lambda y, p: F.label_smooth(y, p, epsilon=0.1), Input((3, 4), "soft"), soft(1, 4)),
    ("pad_constant", lambda x: F.pad(x, [1, 0, 0, 2], mode="constant", value=0.5), f(3, 4)),
    ("squared_l2_norm", lambda x: x * paddle._C_ops.squared_l2_norm(x), f(3, 4)),
    ("relu_double_grad", lambda x, v: _relu_grad(x, v), f(3, 4), f(3, 4)),
    ("tanh_double_grad", lambda x, v: _grads_times(paddle.tanh, v, x), f(3, 4), f(3, 4)),
    ("sigmoid_double_grad", lambda x, v: _grads_times(F.sigmoid, v, x), f(3, 4), f(3, 4)),
    ("matmul_double_grad", lambda x, y, v: _grads_times(paddle.matmul, v, x, y), f(2, 3), f(3, 4), f(2, 4)),
    ("matmul_double_grad_x_only", lambda x, y, v: _grads_times(lambda a: paddle.matmul(a, paddle.scale(y, 1.0)), v, x),
     f(2, 3), f(3, 4), f(2, 4)),   # y at a copy too: the first gradients also write y@GRAD (legacy names collide)
    ("add_double_grad", lambda x, y, v: _grads_times(paddle.add, v, x, y), f(3, 4), f(4), f(3, 4)),
    ("multiply_double_grad", lambda x, y, v: _grads_times(paddle.multiply, v, x, y), f(3, 4), f(4), f(3, 4)),
    ("randint", lambda x: x * paddle.randint(0, 3, [2, 4]).astype("float32"), f(2, 4)),
    ("randperm", lambda x: paddle.gather(x, paddle.randperm(4), axis=1), f(2, 4)),
    ("gumbel_softmax", lambda x: F.gumbel_softmax(x), f(3, 4)),
    ("gumbel_softmax_hard", lambda x: F.gumbel_softmax(x, hard=True, axis=0), f(3, 4)),
)

ROWS = TRIGONOMETRY_AND_SHAPES + INTEGER_RESULTS + LOSSES_AND_DRAWS
