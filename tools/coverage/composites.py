"""Rows: tensor-API and paddle.nn.functional functions that Paddle writes in Python from other ops (distances,
quantiles, stacking, scatter variants, integer maths, attention), none of which has an op of its own."""

import paddle
import paddle.nn.functional as F

from .spec import f, given, ints, pos, table


def _ints(*values):
    return paddle.to_tensor(list(values))


def _nan_where_big(x):
    return paddle.where(x > 1.0, paddle.full_like(x, float("nan")), x)


DISTANCES_AND_QUANTILES = table(
    "composites",
    ("cdist", lambda x, y: paddle.cdist(x, y), f(3, 4), f(5, 4)),
    ("cdist_p1", lambda x, y: paddle.cdist(x, y, p=1.0), f(3, 4), f(5, 4)),
    ("cdist_p3_batched", lambda x, y: paddle.cdist(x, y, p=3.0), f(2, 3, 4), f(2, 5, 4)),
    ("cdist_inf", lambda x, y: paddle.cdist(x, y, p=float("inf")), f(3, 4), f(5, 4)),
    ("pdist", lambda x: paddle.pdist(x), f(4, 3)),
    ("pdist_p1", lambda x: paddle.pdist(x, p=1.0), f(4, 3)),
    ("quantile", lambda x: paddle.quantile(x, 0.3, axis=1), f(3, 5)),
    ("quantile_list_keepdim", lambda x: paddle.quantile(x, [0.25, 0.75], axis=0, keepdim=True), f(4, 3)),
    ("quantile_all", lambda x: paddle.quantile(x, 0.6), f(3, 4)),
    ("quantile_nearest", lambda x: paddle.quantile(x, 0.4, axis=1, interpolation="nearest"), f(3, 6)),
    ("quantile_lower", lambda x: paddle.quantile(x, 0.4, axis=1, interpolation="lower"), f(3, 6)),
    ("quantile_higher", lambda x: paddle.quantile(x, 0.4, axis=1, interpolation="higher"), f(3, 6)),
    ("quantile_midpoint", lambda x: paddle.quantile(x, 0.4, axis=1, interpolation="midpoint"), f(3, 6)),
    ("nanquantile", lambda x: paddle.nanquantile(_nan_where_big(x), 0.5, axis=1), f(4, 6)),
    ("nanmedian_nans", lambda x: paddle.nanmedian(_nan_where_big(x), axis=1), f(4, 5)),
)

PRODUCTS_AND_ATTENTION = table(
    "composites",
    ("tensordot", lambda x, y: paddle.tensordot(x, y, axes=1), f(3, 4), f(4, 5)),
    ("tensordot_pairs", lambda x, y: paddle.tensordot(x, y, axes=[[0, 2], [1, 0]]), f(2, 3, 4), f(4, 2, 5)),
    ("tensordot_zero", lambda x, y: paddle.tensordot(x, y, axes=0), f(2, 3), f(4)),
    ("ger", lambda x, y: paddle.ger(x, y), f(3), f(4)),
    ("vecdot", lambda x, y: paddle.linalg.vecdot(x, y), f(3, 4), f(3, 4)),
    ("vecdot_axis0", lambda x, y: paddle.linalg.vecdot(x, y, axis=0), f(3, 4), f(3, 4)),
    ("sdpa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v), f(2, 5, 2, 8), f(2, 5, 2, 8), f(2, 5, 2, 8)),
    ("sdpa_causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     f(2, 4, 2, 8), f(2, 4, 2, 8), f(2, 4, 2, 8)),
    ("sdpa_mask", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
     f(2, 4, 2, 8), f(2, 6, 2, 8), f(2, 6, 2, 8), f(2, 2, 4, 6)),
)

STACKING_AND_SPLITTING = table(
    "composites",
    ("hstack", lambda x, y: paddle.hstack([x, y]), f(2, 3), f(2, 4)),
    ("vstack", lambda x, y: paddle.vstack([x, y]), f(3), f(3)),
    ("dstack", lambda x, y: paddle.dstack([x, y]), f(2, 3), f(2, 3)),
    ("column_stack", lambda x, y: paddle.column_stack([x, y]), f(3), f(3, 2)),
    ("row_stack", lambda x, y: paddle.row_stack([x, y]), f(2, 3), f(3)),
    ("hsplit", lambda x: paddle.hsplit(x, 2)[1], f(3, 4)),
    ("vsplit", lambda x: paddle.vsplit(x, [1])[1], f(3, 4)),
    ("dsplit", lambda x: paddle.dsplit(x, 2)[0], f(2, 2, 4)),
    ("atleast_1d", lambda x: paddle.atleast_1d(x.sum()) * x, f(2, 3)),
    ("atleast_2d", lambda x: paddle.atleast_2d(x), f(3)),
    ("atleast_3d", lambda x: paddle.atleast_3d(x), f(2, 3)),
    ("block_diag", lambda x, y: paddle.block_diag([x, y]), f(2, 2), f(1, 3)),
    ("cartesian_prod", lambda x, y: paddle.cartesian_prod([x, y]), f(2), f(3)),
    ("diagflat", lambda x: paddle.diagflat(x), f(2, 2)),
    ("diagflat_offset", lambda x: paddle.diagflat(x, offset=-1), f(3)),
    ("vander", lambda x: paddle.vander(x), f(3)),
    ("vander_increasing", lambda x: paddle.vander(x, n=4, increasing=True), f(3)),
    ("swapdims", lambda x: paddle.swapdims(x, 0, 2), f(2, 3, 4)),
    ("msort", lambda x: paddle.msort(x), f(4, 3)),
    ("take_along_dim", lambda x, i: paddle.take_along_dim(x, i, axis=1), f(3, 4), ints(4, 3, 2)),
    ("argwhere", lambda x: paddle.gather_nd(x, paddle.argwhere(x > 0)), f(3, 4)),
)

SCATTERS = table(
    "composites",
    ("scatter_add", lambda x, v: paddle.scatter_add(x, 1, _ints([0, 2], [1, 1]), v), f(2, 4), f(2, 2)),
    ("scatter_reduce_sum", lambda x, v: paddle.scatter_reduce(x, 1, _ints([0, 2], [1, 1]), v, "sum"),
     f(2, 4), f(2, 2)),
    ("scatter_reduce_amax", lambda x, v: paddle.scatter_reduce(x, 1, _ints([0, 2], [1, 1]), v, "amax"),
     f(2, 4), f(2, 2)),
    ("scatter_reduce_mean", lambda x, v: paddle.scatter_reduce(x, 1, _ints([3, 3], [0, 2]), v, "mean",
                                                                include_self=False), f(2, 4), f(2, 2)),
    ("scatter_nd", lambda v: paddle.scatter_nd(_ints([1], [3], [1]), v, [4, 2]), f(3, 2)),
    ("index_fill_axis1", lambda x: paddle.index_fill(x, _ints(1), 1, -1.0), f(3, 4)),
    ("index_put_inplace", lambda x, v: paddle.scale(x, 1.0).index_put_((_ints(0, 2),), v), f(3, 4), f(4)),
)

ELEMENTWISE = table(
    "composites",
    ("sinc", lambda x: paddle.sinc(x), f(3, 4)),
    ("ldexp", lambda x, e: paddle.ldexp(x, e), f(3, 4), ints(5, 3, 4, dtype="int32")),
    ("frexp", lambda x: x * paddle.frexp(x)[0] + x * paddle.frexp(x)[1], f(3, 4)),
    ("rad2deg", lambda x: paddle.rad2deg(x), f(3)),
    ("multigammaln", lambda x: paddle.multigammaln(x, 3), pos(3, 4)),
    ("trapezoid", lambda y: paddle.trapezoid(y), f(3, 4)),
    ("trapezoid_x", lambda y, x: paddle.trapezoid(y, x=x, axis=0), f(3, 4), f(3, 4)),
    ("cumulative_trapezoid", lambda y: paddle.cumulative_trapezoid(y, dx=0.5), f(3, 4)),
    ("isreal", lambda x: x * paddle.isreal(x).astype("float32"), f(3, 4)),
    ("polar", lambda r, t: paddle.abs(paddle.polar(r, t) + 1.0), pos(3), f(3)),
    ("gcd", lambda x, a, b: x * paddle.gcd(a, b).astype("float32"), f(4), ints(12, 4), ints(12, 4)),
    ("lcm", lambda x, a, b: x * paddle.lcm(a, b).astype("float32"), f(4), ints(9, 4), ints(9, 4)),
    ("isin", lambda x, t: x * paddle.isin(t, _ints(1, 3)).astype("float32"), f(5), ints(4, 5)),
    ("histogramdd", lambda x, s: x * paddle.histogramdd(s, bins=2)[0].astype("float32").sum(), f(2),
     given([[0.1, 0.2], [0.9, 0.3], [0.5, 0.8]], "float32")),
)

ROWS = DISTANCES_AND_QUANTILES + PRODUCTS_AND_ATTENTION + STACKING_AND_SPLITTING + SCATTERS + ELEMENTWISE
