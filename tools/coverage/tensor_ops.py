"""Rows: tensor manipulation of the tensor API and the functions of paddle.nn.functional that no layer
wraps (grid_sample, affine_grid, temporal_shift, ...)."""

import paddle
import paddle.nn.functional as F

from .spec import const, f, ints, table, unit

MANIPULATION = table(
    "tensor_ops",
    ("masked_scatter", lambda x, v: paddle.masked_scatter(x, x > 0, v), f(2, 5), f(10)),
    ("index_fill", lambda x: paddle.index_fill(x, paddle.to_tensor([0, 2]), 1, 0.5), f(2, 4)),
    ("take", lambda x: paddle.take(x, paddle.to_tensor([[0, 3], [5, 7]])), f(2, 4)),
    ("eye_plus", lambda x: x + paddle.eye(3, 4), f(3, 4)),
    ("rot90", lambda x: paddle.rot90(x, 1, [0, 1]), f(2, 3)),
    ("tensor_split", lambda x: paddle.tensor_split(x, 3, axis=1)[1], f(2, 6)),
    ("moveaxis", lambda x: paddle.moveaxis(x, 0, 2), f(2, 3, 4)),
    ("crop", lambda x: paddle.crop(x, shape=[2, 2], offsets=[0, 1]), f(3, 4)),
    ("expand_as", lambda x, y: paddle.expand_as(x, y), f(1, 4), f(3, 4)),
    ("detach", lambda x: x.detach() * 2 + x, f(2, 3)),
    ("expand_computed_shape", lambda x, y: paddle.expand(x, [paddle.shape(y)[0], 4]), f(1, 4), f(3, 2)),
    # operands dy2static computes from shapes: PIR passes them as tensors, the legacy ops take them as inputs
    ("pad_computed", lambda x, y: F.pad(x, [0, paddle.shape(y)[0], 1, 0]), f(1, 2, 3, 4), f(2)),
    ("unsqueeze_computed_axis", lambda x, y: paddle.unsqueeze(x, paddle.shape(y)[0] - 1), f(2, 3), f(2)),
    ("split_computed_sections", lambda x, y: paddle.split(x, [paddle.shape(y)[0], -1], axis=1)[1].reshape([2, 4]),
     f(2, 6), f(2)),
    ("split_computed_axis", lambda x, y: paddle.split(x, 2, axis=paddle.shape(y)[0] - 1)[1].reshape([2, 3]),
     f(2, 6), f(2)),
    ("concat_computed_axis", lambda x, y: paddle.concat([x, 2 * x], axis=paddle.shape(y)[0] - 1).reshape([2, 6]),
     f(2, 3), f(2)),
    ("strided_slice_computed", lambda x, y: paddle.strided_slice(
        x, axes=[1], starts=[paddle.shape(y)[0] - 2], ends=[paddle.shape(y)[0] + 3], strides=[2]).reshape([2, 3]),
     f(2, 6), f(2)),
    ("gather_computed_axis", lambda x, y: paddle.gather(x, paddle.to_tensor([0, 2]), axis=paddle.shape(y)[0] - 1)
     .reshape([6]), f(3, 3), f(2)),
    ("one_hot_computed_depth", lambda x, y: F.one_hot(paddle.cast(x > 0, "int64"), paddle.shape(y)[0] + 1) * y.sum(),
     f(2, 3), f(2)),
    ("topk_computed_k", lambda x, y: paddle.topk(x, k=paddle.shape(y)[0])[0], f(2, 5), f(2)),
    ("scale_computed", lambda x, y: paddle.scale(x, scale=y.sum(), bias=1.0), f(2, 3), const(2)),
    ("slice_computed", lambda x, y: x[:, 1:paddle.shape(y)[0] + 1], f(2, 6), f(2)),
    ("broadcast_to", lambda x: paddle.broadcast_to(x, [3, 4]), f(1, 4)),
    ("flip_axes", lambda x: paddle.flip(x, [0, 1]), f(2, 3)),
    ("diagonal_scatter", lambda x, y: paddle.diagonal_scatter(x, y), f(3, 3), f(3)),
    ("select_scatter", lambda x, y: paddle.select_scatter(x, y, 0, 1), f(3, 4), f(4)),
    ("slice_scatter", lambda x, y: paddle.slice_scatter(x, y, axes=[1], starts=[0], ends=[2], strides=[1]),
     f(3, 4), f(3, 2)),
    ("index_put", lambda x, v: paddle.index_put(x, (paddle.to_tensor([0, 2]),), v), f(3, 4), f(2, 4)),
    ("cumsum_reverse", lambda x: paddle.cumsum(paddle.flip(x, [1]), axis=1), f(2, 4)),
    ("sort_values", lambda x: paddle.sort(x, axis=1), f(2, 5)),
    ("topk_values", lambda x: paddle.topk(x, 2)[0], f(2, 5)),
    ("clip_tensor", lambda x, lo: paddle.clip(x, lo, lo + 1), f(2, 5), const(1)),
)



def _ints(*values):
    return paddle.to_tensor(list(values))


DRAWS_AND_BITS = table(
    "tensor_ops",
    ("bernoulli", lambda x: x * paddle.bernoulli(paddle.full([2, 4], 0.5)), f(2, 4)),
    ("multinomial", lambda x, p: paddle.gather(x, paddle.multinomial(p, 3, replacement=True), axis=1),
     f(2, 4), unit(4, grad=False)),
    ("poisson", lambda x: x * paddle.poisson(paddle.full([2, 4], 2.0)), f(2, 4)),
    ("bitwise_and", lambda x: x * paddle.bitwise_and(_ints(3, 5), _ints(6, 4)).astype("float32"), f(3, 2)),
    ("bitwise_xor", lambda x: x * paddle.bitwise_xor(_ints(3, 5), _ints(6, 4)).astype("float32"), f(3, 2)),
    ("renorm", lambda x: paddle.renorm(x, 2.0, 0, 1.0), f(3, 4)),
    ("renorm_p1_axis1", lambda x: paddle.renorm(x, 1.0, 1, 0.5), f(3, 4)),
    ("logspace", lambda x: x * paddle.logspace(0, 1, 4, base=2.0), f(2, 4)),
    ("unique_consecutive", lambda x: paddle.gather(x, paddle.unique_consecutive(_ints(1, 1, 2, 0)), axis=1), f(2, 4)),
    ("histogram", lambda x: x * paddle.histogram(x, bins=4, min=-2, max=2).astype("float32").sum(), f(2, 4)),
    ("argmax_take", lambda x: paddle.take_along_axis(x, paddle.argmax(x, axis=1, keepdim=True), 1), f(2, 4)),
)

FUNCTIONAL = table(
    "functional",
    ("affine_grid", lambda theta: F.affine_grid(theta, [2, 1, 3, 4], align_corners=False), f(2, 2, 3)),
    ("affine_grid_corners", lambda theta: F.affine_grid(theta, [2, 1, 3, 4], align_corners=True), f(2, 2, 3)),
    ("grid_sample", lambda x, g: F.grid_sample(x, g), f(2, 1, 4, 5), unit(2, 3, 3, 2)),
    ("grid_sample_nearest_border", lambda x, g: F.grid_sample(x, g, mode="nearest", padding_mode="border"),
     f(2, 1, 4, 5), unit(2, 3, 3, 2)),
    ("grid_sample_reflection_corners", lambda x, g: F.grid_sample(x, g, padding_mode="reflection",
                                                                  align_corners=False), f(2, 2, 4, 5), f(2, 3, 3, 2)),
    ("temporal_shift", lambda x: F.temporal_shift(x, seg_num=2, shift_ratio=0.25), f(4, 4, 2, 2)),
    ("temporal_shift_nhwc", lambda x: F.temporal_shift(x, seg_num=2, data_format="NHWC"), f(4, 2, 2, 4)),
    ("normalize", lambda x: F.normalize(x, axis=1), f(3, 4)),
    ("one_hot_matmul", lambda ids, w: paddle.matmul(F.one_hot(ids, 5), w), ints(5, 3), f(5, 2)),
    ("sigmoid_focal_loss", lambda x, y: F.sigmoid_focal_loss(x, y), f(3, 4), unit(3, 4, grad=False)),
    ("dice_loss", lambda x, y: F.dice_loss(F.softmax(x), y), f(3, 4), ints(4, 3, 1)),
    ("square_error_cost", lambda x, y: F.square_error_cost(x, y), f(3, 4), f(3, 4)),
    ("npair_loss", lambda a, p, y: F.npair_loss(a, p, y), f(3, 4), f(3, 4), ints(3, 3)),
    ("zeropad2d", lambda x: F.zeropad2d(x, [1, 0, 0, 1]), f(1, 1, 2, 3)),
)

ROWS = MANIPULATION + DRAWS_AND_BITS + FUNCTIONAL
