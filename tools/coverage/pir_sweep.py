"""Rows: a sweep, in Paddle 3.3.1's default PIR mode, of the public modules api_sweep.py left out
(paddle.incubate and its nn / autograd, paddle.nn.quant, paddle.audio.functional,
paddle.distribution's transforms and newer distributions, the Tensor methods and in-place variants) for callables
no other row's code holds. Paddle builds the last rows in neither mode: they record its error
(docs/pir-sweep.md lists what the sweep found)."""

import paddle
import paddle.audio.functional as AF
import paddle.distribution as D
import paddle.incubate.autograd as IA
import paddle.incubate.nn as IN
import paddle.incubate.nn.functional as IF
import paddle.nn.functional as F

from .spec import Input, f, given, ints, pos, table, unit


def _copy(x):
    """An in-place method changes an op's result, not a fed input (Paddle refuses that in PIR)."""
    return x * 1.0


def _tanh_times(a):
    return paddle.tanh(a) * a


INCUBATE = table(
    "pir_sweep",
    ("incubate_segment_sum", lambda x: paddle.incubate.segment_sum(x, paddle.to_tensor([0, 0, 1, 2])), f(4, 3)),
    ("incubate_segment_mean", lambda x: paddle.incubate.segment_mean(x, paddle.to_tensor([0, 1, 1, 1])), f(4, 3)),
    ("incubate_segment_max", lambda x: paddle.incubate.segment_max(x, paddle.to_tensor([0, 0, 1, 1])), f(4, 3)),
    ("incubate_segment_min", lambda x: paddle.incubate.segment_min(x, paddle.to_tensor([0, 1, 1, 2])), f(4, 3)),
    ("incubate_graph_send_recv", lambda x, src, dst: paddle.incubate.graph_send_recv(x, src, dst, "mean"), f(3, 2),
     given([0, 1, 2, 0], "int64"), given([1, 2, 0, 0], "int64")),
    ("fused_dropout_add_eval", lambda x, y: IF.fused_dropout_add(x, y, p=0.3, training=False), f(2, 3), f(2, 3)),
    ("FusedDropoutAdd_eval", lambda x, y: IN.FusedDropoutAdd(p=0.0)(x, y), f(2, 3), f(2, 3)),
    ("incubate_vjp", lambda x, v: IA.vjp(_tanh_times, x, v)[1], f(2, 3), f(2, 3)),
    ("incubate_jvp", lambda x, v: IA.jvp(_tanh_times, x, v)[1], f(2, 3), f(2, 3)),
    ("incubate_Jacobian", lambda x: IA.Jacobian(lambda a: paddle.tanh(a) * 2.0, x)[:], f(3)),
    ("incubate_Hessian_square", lambda x: IA.Hessian(lambda a: paddle.sum(paddle.square(paddle.tanh(a))), x)[:],
     f(3)),
)

AUDIO = table(
    "pir_sweep",
    ("audio_hz_to_mel", lambda x: AF.hz_to_mel(x * 100.0 + 900.0), pos(2, 3)),
    ("audio_hz_to_mel_htk", lambda x: AF.hz_to_mel(x * 100.0 + 200.0, htk=True), pos(2, 3)),
    ("audio_mel_to_hz", lambda x: AF.mel_to_hz(x * 10.0 + 20.0), pos(2, 3)),
    ("audio_mel_frequencies", lambda x: x * AF.mel_frequencies(4, 0.0, 800.0), f(4)),
    ("audio_fft_frequencies", lambda x: x * AF.fft_frequencies(16000, 6), f(4)),
    ("audio_fbank_matrix", lambda x: paddle.matmul(AF.compute_fbank_matrix(16000, 16, n_mels=4), x), f(9, 2)),
    ("audio_create_dct", lambda x: paddle.matmul(x, AF.create_dct(4, 5)), f(2, 5)),
    ("audio_get_window", lambda x: x * AF.get_window("hann", 4, dtype="float32"), f(4)),
    ("audio_get_window_gaussian", lambda x: x * AF.get_window(("gaussian", 1.5), 5, fftbins=False, dtype="float32"),
     f(5)),
)

DISTRIBUTIONS = table(
    "pir_sweep",
    ("Multinomial_log_prob", lambda p: D.Multinomial(3, F.softmax(p)).log_prob(paddle.to_tensor([1.0, 2.0, 0.0])),
     f(3)),
    ("Multinomial_entropy", lambda p: D.Multinomial(3, F.softmax(p)).entropy(), f(3)),
    ("Binomial_log_prob", lambda p: D.Binomial(paddle.to_tensor(5.0), p).log_prob(paddle.to_tensor(2.0)), unit(2)),
    ("Binomial_entropy", lambda p: D.Binomial(paddle.to_tensor(4.0), p).entropy(), unit(2)),
    ("LKJCholesky_log_prob", lambda x: D.LKJCholesky(3, 1.5).log_prob(
        paddle.linalg.cholesky(paddle.matmul(x, x, transpose_y=True) + 3.0 * paddle.eye(3)) / 2.0), f(3, 3)),
    ("TanhTransform", lambda x: D.TanhTransform().forward(x) + D.TanhTransform().forward_log_det_jacobian(x),
     f(2, 3)),
    ("TanhTransform_inverse", lambda x: D.TanhTransform().inverse(paddle.tanh(x) * 0.9), f(2, 3)),
    ("SoftmaxTransform", lambda x: D.SoftmaxTransform().forward(x), f(2, 3)),
    ("StickBreakingTransform", lambda x: D.StickBreakingTransform().forward(x), f(3)),
    ("StickBreakingTransform_log_det", lambda x: D.StickBreakingTransform().forward_log_det_jacobian(x), f(3)),
    ("AbsTransform", lambda x: D.AbsTransform().forward(x), f(2, 3)),
    ("ChainTransform", lambda x: D.ChainTransform([D.TanhTransform(), D.AbsTransform()]).forward(x), f(2, 3)),
    ("ReshapeTransform", lambda x: D.ReshapeTransform([2, 3], [3, 2]).forward(x), f(2, 3)),
    ("StackTransform", lambda x: D.StackTransform([D.TanhTransform(), D.AbsTransform()], 1).forward(x), f(2, 2)),
    ("IndependentTransform", lambda x: D.IndependentTransform(D.TanhTransform(), 1).forward_log_det_jacobian(x),
     f(2, 3)),
)

TENSOR_METHODS = table(
    "pir_sweep",
    ("index_put_", lambda x, v, i: _copy(x).index_put_((i,), v), f(4, 3), f(2, 3), given([3, 1], "int64")),
    ("trunc_", lambda x: _copy(x * 3.0).trunc_() * x, f(2, 3)),
    ("cumsum_", lambda x: _copy(x).cumsum_(1), f(2, 3)),
    ("cumprod_", lambda x: _copy(x).cumprod_(1), f(2, 3)),
    ("combinations", lambda x: paddle.combinations(x, 2), f(4)),
    ("combinations_with_replacement", lambda x: paddle.combinations(x, 2, with_replacement=True), f(3)),
    ("split_with_sizes", lambda x: x.split_with_sizes([1, 3], 1), f(2, 4)),
    ("type_as", lambda x, y: x.type_as(y) * y, f(2, 3), f(2, 3)),
    ("new_full", lambda x: x * x.new_full([2, 3], 2.0), f(2, 3)),
    ("masked_fill_", lambda x, m: _copy(x).masked_fill_(m > 0.5, 0.5), f(2, 3), unit(2, 3, grad=False)),
    ("masked_scatter_", lambda x, m, v: _copy(x).masked_scatter_(m > 0.5, v), f(2, 3), unit(2, 3, grad=False),
     f(6)),
    ("index_fill_", lambda x, i: _copy(x).index_fill_(i, 0, 2.0), f(3, 3), given([2, 0], "int64")),
    ("index_add_", lambda x, i, v: _copy(x).index_add_(i, 0, v), f(3, 3), given([2, 0], "int64"), f(2, 3)),
    ("scatter_add_", lambda x, i, v: _copy(x).scatter_add_(1, i, v), f(2, 3), ints(3, 2, 2), f(2, 2)),
    ("put_along_axis_", lambda x, i, v: _copy(x).put_along_axis_(i, v, 1), f(2, 3), given([[2], [0]], "int64"),
     f(2, 1)),
    ("renorm_", lambda x: _copy(x).renorm_(2.0, 0, 1.0), f(2, 3)),
    ("nan_to_num_", lambda x: _copy(x).nan_to_num_(), f(2, 3)),
    ("t_", lambda x: _copy(x).t_(), f(2, 3)),
    ("transpose_", lambda x: _copy(x).transpose_([1, 0]), f(2, 3)),
    ("unsqueeze_", lambda x: _copy(x).unsqueeze_(0), f(2, 3)),
    ("squeeze_", lambda x: _copy(x).squeeze_(0), f(1, 3)),
    ("flatten_", lambda x: _copy(x).flatten_(), f(2, 3)),
    ("reshape_", lambda x: _copy(x).reshape_([3, 2]), f(2, 3)),
    ("copysign_", lambda x, y: _copy(x).copysign_(y), f(2, 3), f(2, 3)),
    ("hypot_", lambda x, y: _copy(x).hypot_(y), f(2, 3), f(2, 3)),
    ("i0_", lambda x: _copy(x).i0_(), f(2, 3)),
    ("polygamma_", lambda x: _copy(x).polygamma_(1), pos(2, 3)),
    ("multigammaln_", lambda x: _copy(x + 3.0).multigammaln_(2), pos(2, 3)),
    ("lerp_", lambda x, y: _copy(x).lerp_(y, 0.3), f(2, 3), f(2, 3)),
    ("erfinv_", lambda x: _copy(x).erfinv_(), unit(2, 3)),
    ("logit_", lambda x: _copy(x).logit_(), unit(2, 3)),
    ("sinc_", lambda x: _copy(x).sinc_(), f(2, 3)),
    ("gammaln_", lambda x: _copy(x).gammaln_(), pos(2, 3)),
    ("addmm_", lambda a, x, y: _copy(a).addmm_(x, y, beta=0.5, alpha=2.0), f(2, 2), f(2, 3), f(3, 2)),
    ("baddbmm_", lambda a, x, y: _copy(a).baddbmm_(x, y), f(1, 2, 2), f(1, 2, 3), f(1, 3, 2)),
    ("remainder_", lambda x, y: _copy(x).remainder_(y + 2.0), f(2, 3), pos(2, 3)),
    ("pow_", lambda x: _copy(x).pow_(3.0), f(2, 3)),
    ("tril_", lambda x: _copy(x).tril_(), f(3, 3)),
    ("clip_", lambda x: _copy(x).clip_(-0.5, 0.5), f(2, 3)),
    ("scatter_", lambda x, i, u: _copy(x).scatter_(i, u), f(3, 2), given([2, 0], "int64"), f(2, 2)),
    ("cast_", lambda x: _copy(x * 2.0).cast_("float64").astype("float32"), f(2, 3)),
    ("where_", lambda x, y: paddle.where_(x > 0.5, _copy(x), _copy(y)), f(2, 3), f(2, 3)),
)

TOP_LEVEL = table(
    "pir_sweep",
    ("bitwise_left_shift", lambda x, i: x * paddle.bitwise_left_shift(i, i).astype("float32"), f(2, 3),
     ints(4, 2, 3, dtype="int32")),
    ("bitwise_right_shift", lambda x, i: x * paddle.bitwise_right_shift(i * 8, i).astype("float32"), f(2, 3),
     ints(4, 2, 3, dtype="int32")),
    ("logical_xor", lambda x, y: x * paddle.logical_xor(x > 0.5, y > 0.5).astype("float32"), f(2, 3), f(2, 3)),
    ("argsort", lambda x: x * paddle.argsort(x, 1).astype("float32"), f(2, 3)),
    ("nonzero", lambda x: x * paddle.nonzero(x > 0.5).sum().astype("float32"), f(2, 3)),
    ("floor_divide", lambda x, y: x * paddle.floor_divide(x, y + 2.0), f(2, 3), pos(2, 3)),
    ("tile", lambda x: paddle.tile(x, [2, 1]), f(2, 3)),
    ("clamp", lambda x: paddle.clamp(x, -0.5, 0.5), f(2, 3)),
    ("neg", lambda x: paddle.neg(x), f(2, 3)),
    ("unstack", lambda x: paddle.unstack(x, 0), f(2, 3)),
    ("reverse", lambda x: paddle.reverse(x, 0), f(2, 3)),
    ("broadcast_tensors", lambda x, y: paddle.broadcast_tensors([x, y]), f(2, 3), f(1, 3)),
    ("scatter_nd_add", lambda x, i, u: paddle.scatter_nd_add(x, i, u), f(3, 4), given([[2], [0]], "int64"), f(2, 4)),
    ("index_sample", lambda x, i: paddle.index_sample(x, i), f(2, 4), ints(4, 2, 3)),
    ("empty_like", lambda x: x + paddle.empty_like(x) * 0.0, f(2, 3)),
)

# in-place unary methods of Tensor, on inputs in their domain ((0.5, 2): log, sqrt, digamma, ...)
INPLACE_UNARY = table(
    "pir_sweep",
    *[(name, lambda x, name=name: getattr(_copy(x), name)(), pos(2, 3)) for name in (
        "abs_", "sin_", "cos_", "tan_", "sinh_", "cosh_", "tanh_", "asinh_", "atan_", "exp_", "expm1_", "sqrt_",
        "rsqrt_", "reciprocal_", "square_", "sigmoid_", "log_", "log2_", "log10_", "log1p_", "digamma_", "lgamma_",
        "erf_", "frac_", "neg_")],
    ("acosh_", lambda x: _copy(x + 1.0).acosh_(), pos(2, 3)),
    ("asin_acos_atanh_", lambda x: _copy(x).asin_() + _copy(x).acos_() + _copy(x).atanh_(), unit(2, 3)),
    ("round_floor_ceil_", lambda x: (_copy(x * 3.0).round_() + _copy(x * 3.0).floor_() + _copy(x * 3.0).ceil_()) * x,
     f(2, 3)),
    ("clamp_", lambda x: _copy(x).clamp_(-0.5, 0.5), f(2, 3)),
    ("triu_", lambda x: _copy(x).triu_(1), f(3, 3)),
    ("gammainc_gammaincc_", lambda a, x: _copy(a).gammainc_(x) + _copy(a).gammaincc_(x), pos(2, 3),
     Input((2, 3), "positive", grad=False)),
)

ARITHMETIC = table(
    "pir_sweep",
    ("add_sub_mul_div_", lambda x, y: _copy(x).add_(y).sub_(y * 0.5).mul_(y).div_(y * y + 1.0), f(2, 3), f(2, 3)),
    ("multiply_subtract_", lambda x, y: _copy(x).multiply_(y).subtract_(y), f(2, 3), f(2, 3)),
    ("divide_subtract", lambda x, y: paddle.divide(x, y + 3.0) - paddle.subtract(x, y), f(2, 3), pos(2, 3)),
    ("pow_tensor", lambda x, y: paddle.pow(x, y), pos(2, 3), f(2, 3)),
    ("mod_floor_mod_", lambda x, y: paddle.mod(x, y + 2.0) + _copy(x).floor_mod_(y + 2.0), f(2, 3), pos(2, 3)),
    ("floor_divide_", lambda x, y: x * _copy(x).floor_divide_(y + 2.0), f(2, 3), pos(2, 3)),
    ("scale_", lambda x: _copy(x).scale_(2.0, 0.5), f(2, 3)),
    ("gcd_lcm_", lambda x, a, b: x * ((a + 1).gcd_(b) + (a + 1).lcm_(b)).astype("float32"), f(2, 3),
     ints(12, 2, 3), ints(12, 2, 3)),
    ("comparisons", lambda x, y: x * (paddle.eq(x, y).astype("float32") + paddle.ne(x, y).astype("float32")
                                      + paddle.lt(x, y).astype("float32") + paddle.le(x, y).astype("float32")
                                      + paddle.ge(x, y).astype("float32") + paddle.greater(x, y).astype("float32")
                                      + paddle.less(x, y).astype("float32")), f(2, 3), f(2, 3)),
    ("comparisons_", lambda x, y: x * (_copy(x).greater_equal_(y).astype("float32")
                                       + _copy(x).less_equal_(y).astype("float32")
                                       + _copy(x).not_equal_(y).astype("float32")
                                       + _copy(x).equal_(y).astype("float32")), f(2, 3), f(2, 3)),
    ("logical_and_or_not_", lambda x, y: x * paddle.logical_or(paddle.logical_and(x > 0, y > 0),
                                                               paddle.logical_not(x > y)).astype("float32"),
     f(2, 3), f(2, 3)),
    ("bitwise_not_or", lambda x, a, b: x * paddle.bitwise_or(paddle.bitwise_not(a), b).astype("float32"), f(2, 3),
     ints(8, 2, 3, dtype="int32"), ints(8, 2, 3, dtype="int32")),
)

SHAPES = table(
    "pir_sweep",
    ("permute", lambda x: paddle.permute(x, [2, 0, 1]), f(2, 3, 4)),
    ("ravel", lambda x: paddle.ravel(x), f(2, 3)),
    ("repeat", lambda x: x.repeat(2, 1), f(2, 3)),
    ("cat", lambda x, y: paddle.cat([x, y], 1), f(2, 3), f(2, 2)),
    ("cumprod_top_level", lambda x: paddle.cumprod(x, 0), f(3, 2)),
    ("numel_ones_like", lambda x: x * paddle.numel(x).astype("float32") + paddle.ones_like(x), f(2, 3)),
    ("assign", lambda x: paddle.assign(x) * 2.0, f(2, 3)),
    ("new_zeros_ones_empty", lambda x: x + x.new_zeros([2, 3]) + x.new_ones([2, 3]) + x.new_empty([2, 3]) * 0.0,
     f(2, 3)),
    ("fill_diagonal_tensor", lambda x, y: x.fill_diagonal_tensor(y), f(3, 3), f(3)),
    ("windows", lambda x: x * (paddle.hann_window(4) + paddle.hamming_window(4) + paddle.blackman_window(4)
                               + paddle.bartlett_window(4) + paddle.kaiser_window(4)), f(4)),
    ("log_normal", lambda x: x * paddle.log_normal(shape=[2, 3]), f(2, 3)),
    ("randn_like", lambda x: x * paddle.randn_like(x), f(2, 3)),
)

# the rest of the in-place comparisons, logic and bit ops, dtype casts, and random draws (no numbers: program only)
MORE_METHODS = table(
    "pir_sweep",
    ("less_", lambda x, y: x * _copy(x).less_(y).astype("float32"), f(2, 3), f(2, 3)),
    ("comparisons_inplace", lambda x, y: x * (_copy(x).less_than_(y).astype("float32")
                                              + _copy(x).greater_than_(y).astype("float32")
                                              + paddle.less_equal(x, y).astype("float32")
                                              + paddle.greater_equal(x, y).astype("float32")
                                              + paddle.not_equal(x, y).astype("float32")), f(2, 3), f(2, 3)),
    ("logical_inplace", lambda x, y: x * (x > 0).logical_and_(y > 0).logical_or_(x > y).logical_xor_(
        y > 0.5).logical_not_().astype("float32"), f(2, 3), f(2, 3)),
    ("bitwise_inplace", lambda x, a, b: x * (a + 0).bitwise_and_(b).bitwise_or_(b).bitwise_xor_(a).bitwise_not_(
        ).astype("float32"), f(2, 3), ints(8, 2, 3, dtype="int32"), ints(8, 2, 3, dtype="int32")),
    ("shifts_inplace", lambda x, a, b: x * (a + 0).bitwise_left_shift_(b).bitwise_right_shift_(b).astype("float32"),
     f(2, 3), ints(8, 2, 3, dtype="int32"), ints(3, 2, 3, dtype="int32")),
    ("divide_mod_", lambda x, y: _copy(x).divide_(y + 2.0) + _copy(x).mod_(y + 2.0), f(2, 3), pos(2, 3)),
    ("dtype_casts", lambda x: x.double().float16().astype("float32") + x.half().astype("float32")
     + x.bfloat16().astype("float32") + x.long().astype("float32") * x.short().astype("float32"), f(2, 3)),
    ("rand_randn_like", lambda x: x * (paddle.rand([2, 3]) + paddle.randn([2, 3]) + paddle.rand_like(x)
                                       + paddle.randint_like(x, 0, 3)), f(2, 3)),
    ("pca_lowrank", lambda x: paddle.linalg.pca_lowrank(x, q=2)[1], f(4, 3)),
    ("svd_lowrank", lambda x: paddle.linalg.svd_lowrank(x, q=2)[1], f(4, 3)),
    ("uniform_", lambda x: x * paddle.zeros_like(x).uniform_(), f(2, 3)),
    ("fill_zero_", lambda x: _copy(x).fill_(2.0) + _copy(x).zero_(), f(2, 3)),
    ("incubate_graph_reindex", lambda w, x, nb, c: [w * out.astype("float32").sum() for out in
                                                   paddle.incubate.graph_reindex(x, nb, c)], f(1),
     given([0, 5, 9], "int64"), given([5, 7, 0, 9, 3], "int64"), given([2, 1, 2], "int32")),
)

# Paddle 3.3.1 builds none of these in a static program: they record its error (the last two have GPU kernels only,
# which gradc follows: tests/test_pir_sweep.py)
PADDLE_CANNOT = table(
    "pir_sweep",
    ("view_shape", lambda x: x.view([3, 2]), f(2, 3)),
    ("view_as", lambda x, y: x.view_as(y), f(2, 3), f(3, 2)),
    ("as_strided", lambda x: paddle.as_strided(x, [2, 2], [1, 2]), f(2, 3)),
    ("tensor_unfold", lambda x: x.unfold(1, 2, 1), f(2, 4)),
    ("narrow", lambda x: paddle.narrow(x, 1, 1, 2), f(2, 4)),
    ("ldexp_", lambda x, e: _copy(x).ldexp_(e), f(2, 3), ints(3, 2, 3, dtype="int32")),
    ("normal_", lambda x: x * paddle.zeros_like(x).normal_(), f(2, 3)),
    ("fill_diagonal_", lambda x: _copy(x).fill_diagonal_(2.0), f(3, 3)),
    ("fused_linear", lambda x, w, b: IF.fused_linear(x, w, b), f(2, 4), f(4, 3), f(3)),
    ("softmax_mask_fuse_upper_triangle", lambda x: paddle.incubate.softmax_mask_fuse_upper_triangle(x), f(1, 1, 4, 4)),
)

ROWS = (INCUBATE + AUDIO + DISTRIBUTIONS + TENSOR_METHODS + TOP_LEVEL + INPLACE_UNARY + ARITHMETIC + SHAPES
        + MORE_METHODS + PADDLE_CANNOT)
