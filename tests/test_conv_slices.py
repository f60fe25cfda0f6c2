"""A large batch's convolution goes in batch slices (bounded im2col memory). The output and the input grad are
bit for bit each slice's own one-product result, laid out as the whole batch's, and within float32 rounding of the
whole batch's product (bit for bit where BLAS computes a column independently of its place in the product); the
filter grad adds the slices' products, a summation order of its own, to within float32 rounding. Max pooling on
strided views (pool_taps) gives the general kernels' bits, and the input grad added by phase and channels last gives
plain col2im's."""

import itertools
import math

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from gradc.executor.kernels import blas_bits
from gradc.executor.kernels import conv as kernels
from gradc.executor.kernels import conv_columns as columns
from gradc.executor.kernels.conv import Geometry, conv, conv_filter_grad, conv_input_grad
from gradc.executor.kernels.pool_taps import tap_geometry, taps_max, taps_max_grad
from gradc.executor.kernels.pool_windows import _max_pool_grad, axis_windows, max_windows
from gradc.ops.conv import conv_out_sizes, pool_geometry

CASES = [  # x, w, strides, pads (before, after per dim), groups; outputs of 144, 64, 64, 32, 64 positions
    ((96, 1, 12, 12), (6, 1, 5, 5), (1, 1), (2, 2, 2, 2), 1),
    ((64, 6, 10, 10), (16, 6, 3, 3), (1, 1), (0, 0, 0, 0), 1),
    ((48, 4, 16, 16), (8, 2, 3, 3), (2, 2), (1, 1, 1, 1), 2),
    ((64, 3, 32), (4, 3, 3), (1,), (1, 1), 1),
    ((40, 64, 8, 8), (128, 64, 3, 3), (1, 1), (1, 1, 1, 1), 1),   # fewer outputs than columns / 4: the batch's product
]


@pytest.mark.parametrize("x_shape, w_shape, strides, pads, groups", CASES)
def test_sliced_convolution_matches_one_product(monkeypatch, x_shape, w_shape, strides, pads, groups):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(x_shape, dtype=np.float32), rng.standard_normal(w_shape, dtype=np.float32)
    geo = Geometry(strides, pads, (1,) * len(strides), groups)
    whole = conv(x, w, geo)
    dy = rng.standard_normal(whole.shape, dtype=np.float32)
    whole_dx, whole_dw = conv_input_grad(dy, w, x.shape[2:], geo), conv_filter_grad(x, dy, w.shape, geo)
    half_batch = x.shape[0] // 2 * whole[0].size // w.shape[0] * w[0].size * x.itemsize   # columns of half the batch
    # each slice's one product, made before the budget shrinks: the bits the sliced kernels must give
    slices = kernels._batch_slices(x, w.shape[2:], geo)
    assert len(slices) == 1
    monkeypatch.setattr(kernels, "COLS_BUDGET", half_batch)
    slices = kernels._batch_slices(x, w.shape[2:], geo)
    assert len(slices) > 1 and slices[0].start == 0 and slices[-1].stop >= x.shape[0]
    assert all(a.stop == b.start for a, b in zip(slices, slices[1:]))
    monkeypatch.setattr(kernels, "COLS_BUDGET", 1 << 40)
    by_slice = np.concatenate([conv(x[part], w, geo) for part in slices])
    by_slice_dx = np.concatenate([conv_input_grad(dy[part], w, x.shape[2:], geo) for part in slices])
    monkeypatch.setattr(kernels, "COLS_BUDGET", half_batch)
    sliced, dx, dw = conv(x, w, geo), conv_input_grad(dy, w, x.shape[2:], geo), conv_filter_grad(x, dy, w.shape, geo)
    for ours, own_products, reference in ((sliced, by_slice, whole), (dx, by_slice_dx, whole_dx)):
        assert ours.dtype == reference.dtype and ours.strides == reference.strides
        assert ours.tobytes() == own_products.tobytes()
        # OpenBLAS on AMD's Zen gives a column other bits by its place in the product (its blocking follows the
        # product's width and thread split), so the slices and the whole batch agree to float32 rounding only
        np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-5 * np.abs(reference).max())
    assert dw.dtype == np.float32
    np.testing.assert_allclose(dw, whole_dw, rtol=1e-5, atol=1e-5 * np.abs(whole_dw).max())


def _pool_case(seed: int):
    """Random windows (1-3 spatial dims, overlapping or apart, padded, ceil_mode), small-int data full of ties of
    -0.0 and +0.0, some NaN and -inf, scaled to far-apart magnitudes; grads over 60 decades (float64 sums inexact)."""
    rng = np.random.default_rng(seed)
    dims = 1 + seed % 3
    k, strides = [int(v) for v in rng.integers(1, 4, dims)], [int(v) for v in rng.integers(1, 4, dims)]
    pads = [int(min(p, c - 1)) for p, c in zip(rng.integers(0, 3, dims), k)]
    attrs = {"ksize": k, "strides": strides, "paddings": pads, "padding_algorithm": "EXPLICIT",
             "global_pooling": seed % 17 == 0, "adaptive": False, "ceil_mode": seed % 5 == 0}
    sizes = [int(v) for v in rng.integers(2, 9, dims)]
    try:
        ksize, pads, out = pool_geometry(sizes, attrs)
    except ValueError:
        return None
    dtype = (np.float32, np.float64)[seed % 2]
    x = rng.integers(-2, 3, (2, 3, *sizes)).astype(dtype)
    x.flat[rng.integers(x.size, size=x.size // 4)] = -0.0
    if seed % 4 == 0:
        x.flat[rng.integers(x.size)] = np.nan
    if seed % 7 == 0:
        x.flat[rng.integers(x.size)] = -np.inf
    if seed % 3 == 0:
        x = (x * 10.0 ** float(rng.integers(-20, 20))).astype(dtype)
    dout = (rng.standard_normal((2, 3, *out)) * 10.0 ** rng.integers(-30, 30, (2, 3, *out))).astype(dtype)
    dout.flat[0] = -0.0
    bounds = [axis_windows(size, o, c, s, pads[2 * i], False, True)[0]
              for i, (size, o, c, s) in enumerate(zip(sizes, out, ksize, strides))]
    return x, dout, bounds, tap_geometry(x, ksize, strides, pads, out)


def test_max_pooling_on_taps_is_the_general_kernel():
    compared = grads = 0
    for seed in range(400):
        case = _pool_case(seed)
        if case is None or case[3] is None:
            continue
        x, dout, bounds, taps = case
        general = max_windows(x, bounds)[0].max(1).reshape(x.shape[:2] + taps.out)
        assert taps_max(x, taps).tobytes() == general.tobytes(), seed
        compared += 1
        dx = taps_max_grad(x, dout, taps)
        if dx is None:   # a window with nothing above the fill value: the general kernel's case
            assert not np.all(general > x.dtype.type(-np.finfo(np.float32).max)), seed
            continue
        general_dx = _max_pool_grad(x, dout, bounds)
        assert dx.dtype == general_dx.dtype and dx.strides == general_dx.strides, seed
        assert dx.tobytes() == general_dx.tobytes(), seed
        assert taps_max_grad(x, dout, taps, general).tobytes() == dx.tobytes(), seed   # the forward's Out given
        grads += 1
    assert compared > 250 and grads > 150


@pytest.mark.parametrize("strides", [(2, 2), (3, 3)])   # overlapping windows, and windows apart
def test_max_pool_grad_takes_the_maxima_from_x_where_out_is_not_xs(strides):
    """An Out with a window holding no equal value (not the forward's of this x) is not trusted: the maxima are
    taken again, so the grad is x's own."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    ksize, pads, out = pool_geometry([9, 9], {"ksize": [3, 3], "strides": list(strides), "paddings": [1, 1],
                                              "padding_algorithm": "EXPLICIT", "global_pooling": False,
                                              "adaptive": False, "ceil_mode": False})
    taps = tap_geometry(x, ksize, strides, pads, out)
    dout = rng.standard_normal((2, 3, *out)).astype(np.float32)
    own = taps_max_grad(x, dout, taps)
    stale = taps_max(x, taps)
    stale[0, 0, 0, 0] += 1.0
    assert own.tobytes() == taps_max_grad(x, dout, taps, stale).tobytes()
    assert own.tobytes() == taps_max_grad(x, dout, taps, stale[..., :-1]).tobytes()   # misshapen: not read


def test_a_window_of_more_than_255_cells_picks_its_first_maximum():
    """Windows of 17 x 17 = 289 cells (a pick wider than a byte), overlapping, with ties: the general kernel's
    grad, bit for bit."""
    rng = np.random.default_rng(0)
    x = rng.integers(-2, 3, (2, 2, 40, 40)).astype(np.float32)
    dout = rng.standard_normal((2, 2, 4, 4)).astype(np.float32)
    ksize, pads, out = pool_geometry([40, 40], {"ksize": [17, 17], "strides": [7, 7], "paddings": [0, 0],
                                                "padding_algorithm": "EXPLICIT", "global_pooling": False,
                                                "adaptive": False, "ceil_mode": False})
    taps = tap_geometry(x, ksize, [7, 7], pads, out)
    bounds = [axis_windows(40, o, 17, 7, 0, False, True)[0] for o in out]
    assert taps_max_grad(x, dout, taps).tobytes() == _max_pool_grad(x, dout, bounds).tobytes()


def test_windows_without_a_whole_one_along_an_axis_take_the_general_kernel():
    """Windows of 2 every 2 from 1 before a 2-cell axis are each cut to 1 cell: the general kernel fills none of
    them (it pads to the longest window), so -inf stays -inf where a padded view would give the fill value."""
    x = np.array([[[-np.inf, 1.0]]], np.float32)
    ksize, pads, out = pool_geometry([2], {"ksize": [2], "strides": [2], "paddings": [1], "global_pooling": False,
                                           "padding_algorithm": "EXPLICIT", "adaptive": False, "ceil_mode": False})
    assert tap_geometry(x, ksize, [2], pads, out) is None
    assert tap_geometry(np.ones((1, 1, 2), np.int32), [1], [1], [0, 0], [2]) is None   # integer data
    assert tap_geometry(x, [1], [1], [0, 0], [2]) is not None


@pytest.mark.parametrize("seed", range(6))
def test_windows_and_pointwise_columns_are_numpys(seed):
    """im2col's one as_strided view holds sliding_window_view's windows every stride, cells every dilation (and a
    window that does not fit raises numpy's error); a pointwise convolution's columns are im2col's, bit for bit and
    in its layout, for channels-first and channels-last input."""
    rng = np.random.default_rng(seed)
    for _ in range(60):
        dims = 1 + int(rng.integers(3))
        k, s, d = (tuple(int(v) for v in rng.integers(1, hi, dims)) for hi in (4, 4, 3))
        geo = Geometry(s, tuple(int(v) for v in rng.integers(0, 3, 2 * dims)), d, 1)
        x = rng.standard_normal((int(rng.integers(1, 3)), 2, *rng.integers(1, 7, dims))).astype(np.float32)
        xp = np.pad(x, [(0, 0), (0, 0), *zip(geo.pads[0::2], geo.pads[1::2])])
        spans = [(kk - 1) * dd + 1 for kk, dd in zip(k, d)]
        try:
            windows = sliding_window_view(xp, spans, axis=tuple(range(2, 2 + dims)))
        except ValueError as numpy_error:
            with pytest.raises(ValueError, match=str(numpy_error)):
                columns.windows(xp, k, geo)
            continue
        windows = windows[(slice(None), slice(None), *(slice(None, None, v) for v in s + d))]
        ours = columns.windows(xp, k, geo)
        assert ours.shape == windows.shape and ours.tobytes() == windows.tobytes()
    for last in (False, True):
        x = rng.standard_normal((int(rng.integers(1, 3)), 6, 4, 5)).astype(np.float32)
        x = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1) if last else x
        geo = Geometry((1, 1), (0, 0, 0, 0), (1, 1), 1 + seed % 3)
        (cols, out), (general, general_out) = columns.columns(x, (1, 1), geo), columns.im2col(x, (1, 1), geo)
        assert out == general_out and cols.strides == general.strides and cols.tobytes() == general.tobytes()


def _plain_input_grad(dy, w, sizes, geo: Geometry):
    """The input grad as col2im was first written: each kernel position's columns (a depthwise filter's products,
    else W^T @ dy's, each sample's or the whole batch's as the kernel makes them) added into its strided window of
    the zeroed padded input."""
    (n, o), (cg, *k_sizes), groups, dims = dy.shape[:2], w.shape[1:], geo.groups, len(sizes)
    if o == groups and cg == 1:
        taps = w.reshape(groups, *k_sizes)
        tap = lambda offset: dy * taps[(slice(None), *offset)].reshape(groups, *[1] * dims)  # noqa: E731
    elif kernels._by_sample(int(np.prod(dy.shape[2:])), cg * int(np.prod(k_sizes))):
        cols = w.reshape(groups, o // groups, -1).transpose(0, 2, 1) @ dy.reshape(n, groups, o // groups, -1)
        cols = cols.reshape(n, groups * cg, *k_sizes, *dy.shape[2:])
        tap = lambda offset: cols[(slice(None), slice(None), *offset)]  # noqa: E731
    else:
        cols = (w.reshape(groups, o // groups, -1).transpose(0, 2, 1) @ columns.grouped(dy, groups))
        cols = cols.reshape(groups * cg, *k_sizes, n, *dy.shape[2:])
        tap = cols.transpose(*range(1, dims + 1), dims + 1, 0, *range(dims + 2, 2 * dims + 2)).__getitem__
    padded = [size + geo.pads[2 * i] + geo.pads[2 * i + 1] for i, size in enumerate(sizes)]
    xp = np.zeros((n, groups * cg, *padded), np.result_type(dy, w))
    for offset in itertools.product(*map(range, k_sizes)):
        xp[(slice(None), slice(None), *(slice(i * d, i * d + (m - 1) * s + 1, s)
                                         for i, d, m, s in zip(offset, geo.dilations, dy.shape[2:], geo.strides)))] \
            += tap(offset)
    return xp[(slice(None), slice(None), *(slice(geo.pads[2 * i], geo.pads[2 * i] + size)
                                           for i, size in enumerate(sizes)))]


@pytest.mark.parametrize("seed", range(4))
def test_input_grads_added_by_phase_and_channels_last_are_plain_col2ims(seed):
    """A strided convolution's taps go into one grid per phase, a depthwise one's channels last where output rows
    are short: each input cell still sums its taps in the same order, so the bits (NaN, inf and -0.0 included) and
    the view of a padded buffer are plain col2im's, for grouped, depthwise and dilated filters in 1-3 dims."""
    rng = np.random.default_rng(seed)
    compared = 0
    for case in range(120):
        dims, depthwise = 1 + case % 3, case % 2 == 0
        n, groups = int(rng.integers(1, 4)), int(rng.integers(4, 40)) if depthwise else int(rng.integers(1, 3))
        per_group, outs = (1, 1) if depthwise else (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        sizes, k_sizes = [int(v) for v in rng.integers(2, 9, dims)], [int(v) for v in rng.integers(1, 4, dims)]
        strides, pads, dilations = (tuple(int(v) for v in rng.integers(1, hi, count))
                                    for hi, count in ((4, dims), (3, 2 * dims), (3, dims)))
        geo = Geometry(strides, pads, dilations, groups)
        if any(size + pads[2 * i] + pads[2 * i + 1] < (k - 1) * d + 1
               for i, (size, k, d) in enumerate(zip(sizes, k_sizes, geo.dilations))):
            continue
        dtype = (np.float32, np.float64)[case % 4 == 1]
        x = rng.standard_normal((n, groups * per_group, *sizes)).astype(dtype)
        w_shape = (groups * outs, per_group, *k_sizes)
        w = (rng.standard_normal(w_shape) * 10.0 ** rng.integers(-8, 8, w_shape)).astype(dtype)
        y_shape = conv(x, w, geo).shape
        dy = (rng.standard_normal(y_shape) * 10.0 ** rng.integers(-20, 20, y_shape)).astype(dtype)
        if (groups > 1 or kernels._few_outputs(w, geo)) and kernels._full_correlation(dy, w, geo) is not None:
            continue   # a convolution: the next test's
        dy.flat[0], dy.flat[-1] = -0.0, (np.nan, np.inf, 1.0)[case % 3]
        with np.errstate(invalid="ignore", over="ignore"):   # inf times a mixed-sign column
            ours, plain = conv_input_grad(dy, w, x.shape[2:], geo), _plain_input_grad(dy, w, sizes, geo)
        assert ours.dtype == plain.dtype and ours.strides == plain.strides, case
        assert ours.tobytes() == plain.tobytes(), case
        compared += 1
    assert compared > 80


@pytest.mark.parametrize("seed", range(3))
def test_unit_stride_grouped_input_grad_is_a_full_correlation(seed):
    """With unit strides and padding within the kernel's span, a grouped (depthwise too) filter's input grad, and an
    ungrouped one's of few outputs, is the convolution of dy with the flipped filter: float64's plain col2im to within
    float32 rounding, for 1-3 dims, dilations and uneven padding; padding beyond the span or a stride leaves it to
    the taps."""
    rng = np.random.default_rng(seed)
    for case in range(40):
        dims, groups = 1 + case % 3, int(rng.integers(1, 9))
        per_group, outs = (1, 1) if case % 2 == 0 else (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        k_sizes = [int(v) for v in rng.integers(1, 4, dims)]
        dilations = tuple(int(v) for v in rng.integers(1, 3, dims))
        pads = tuple(int(rng.integers(0, (k - 1) * d + 1)) for k, d in zip(k_sizes, dilations) for _ in range(2))
        sizes = [int(v) for v in rng.integers(5, 9, dims)]   # at least the widest span, 5
        geo = Geometry((1,) * dims, pads, dilations, groups)
        x = rng.standard_normal((2, groups * per_group, *sizes)).astype(np.float32)
        w = rng.standard_normal((groups * outs, per_group, *k_sizes)).astype(np.float32)
        dy = rng.standard_normal(conv(x, w, geo).shape).astype(np.float32)
        ours = kernels._full_correlation(dy, w, geo)
        exact = _plain_input_grad(dy.astype(np.float64), w.astype(np.float64), sizes, geo)
        assert ours.shape == x.shape and ours.dtype == np.float32, case
        np.testing.assert_allclose(ours, exact, rtol=1e-5, atol=1e-5 * np.abs(exact).max())
        if groups > 1 or kernels._few_outputs(w, geo):   # the kernel's path; other ungrouped filters' is col2im
            assert conv_input_grad(dy, w, sizes, geo).tobytes() == ours.tobytes(), case
    w = np.ones((4, 1, 3, 3), np.float32)
    dy = np.ones((1, 4, 5, 5), np.float32)
    assert kernels._full_correlation(dy, w, Geometry((1, 1), (3, 0, 0, 0), (1, 1), 4)) is None   # beyond the span
    assert conv_input_grad(dy, w, [4, 7], Geometry((1, 1), (3, 0, 0, 0), (1, 1), 4)).shape == (1, 4, 4, 7)
    assert kernels._full_correlation(dy, w, Geometry((2, 1), (0, 0, 0, 0), (1, 1), 4)) is None   # strided


def test_an_ungrouped_filter_of_few_outputs_takes_the_full_correlation():
    """DenseNet's 3x3 layers (32 outputs of 128 inputs) in small: the kernel's input grad is the convolution of dy,
    within float32's dot-product bound of float64's col2im; more outputs, or a stride, keep col2im."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 16, 9, 9)).astype(np.float32)
    w = rng.standard_normal((4, 16, 3, 3)).astype(np.float32)
    geo = Geometry((1, 1), (1, 1, 1, 1), (1, 1), 1)
    dy = rng.standard_normal(conv(x, w, geo).shape).astype(np.float32)
    ours = conv_input_grad(dy, w, x.shape[2:], geo)
    assert ours.tobytes() == kernels._full_correlation(dy, w, geo).tobytes()
    exact = _plain_input_grad(dy.astype(np.float64), w.astype(np.float64), [9, 9], geo)
    terms = _plain_input_grad(np.abs(dy).astype(np.float64), np.abs(w).astype(np.float64), [9, 9], geo)
    assert np.all(np.abs(ours - exact) <= 4 * 9 * 2.0 ** -24 * terms)
    for shape in ((9, 16, 3, 3), (65, 130, 3, 3), (4, 16, 1, 1)):   # more outputs; over 64; pointwise
        assert not kernels._few_outputs(np.zeros(shape), geo)
    strided = Geometry((2, 2), (1, 1, 1, 1), (1, 1), 1)
    dy = rng.standard_normal(conv(x, w, strided).shape).astype(np.float32)
    assert kernels._full_correlation(dy, w, strided) is None
    assert conv_input_grad(dy, w, x.shape[2:], strided).tobytes() == _plain_input_grad(dy, w, [9, 9], strided).tobytes()


@pytest.mark.parametrize("x_shape, k_sizes, pads", [
    ((2, 24, 14, 14), (3, 3), (1, 1, 1, 1)), ((3, 5, 9, 6), (5, 5), (2, 2, 2, 2)),
    ((1, 4, 7, 11), (1, 3), (0, 0, 1, 1)), ((2, 3, 6, 6), (3, 2), (2, 0, 0, 1)), ((2, 6, 5, 5), (3, 3), (0, 0, 0, 0))])
def test_depthwise_columns_on_the_padded_width_are_im2cols(monkeypatch, x_shape, k_sizes, pads):
    """A small depthwise layer's columns on the padded width (runs of the flattened image, extra cells dropped):
    im2col's output, in its layout, within float32's dot-product bound (k * 2^-24 of the sum of the terms' sizes)
    of float64's. BLAS may add a column's k products in another order than for im2col's columns (the last bit of
    13% of random shapes; the same bits on every committed program)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal((x_shape[1], 1, *k_sizes)).astype(np.float32)
    geo = Geometry((1, 1), pads, (1, 1), x_shape[1])
    out = conv_out_sizes(x_shape[2:], k_sizes, (1, 1), pads, (1, 1))
    assert kernels._wide(x, w, geo, out)
    wide = conv(x, w, geo)
    monkeypatch.setattr(kernels, "WIDE_PLANE", 0)
    assert not kernels._wide(x, w, geo, out)
    regular, exact = conv(x, w, geo), conv(x.astype(np.float64), w.astype(np.float64), geo)
    terms = conv(np.abs(x).astype(np.float64), np.abs(w).astype(np.float64), geo)
    assert wide.shape == regular.shape and wide.dtype == regular.dtype and wide.flags.c_contiguous
    assert np.all(np.abs(wide - exact) <= math.prod(k_sizes) * 2.0 ** -24 * terms)


def test_the_padded_width_is_only_for_small_unit_stride_depthwise_layers(monkeypatch):
    x, w = np.zeros((2, 8, 10, 10), np.float32), np.zeros((8, 1, 3, 3), np.float32)
    depthwise, out = Geometry((1, 1), (1, 1, 1, 1), (1, 1), 8), (10, 10)
    assert kernels._wide(x, w, depthwise, out)
    assert not kernels._wide(x, w, Geometry((2, 2), (1, 1, 1, 1), (1, 1), 8), (5, 5))       # strides
    assert not kernels._wide(x, w, Geometry((1, 1), (2, 2, 2, 2), (2, 2), 8), (10, 10))     # dilations
    assert not kernels._wide(x, np.zeros((8, 2, 3, 3), np.float32), Geometry((1, 1), (1, 1, 1, 1), (1, 1), 4),
                             out)                                                            # groups of 2 channels
    assert not kernels._wide(np.zeros((2, 8, 40, 40), np.float32), w, depthwise, (40, 40))  # a large plane
    monkeypatch.setattr(kernels, "COLS_BUDGET", 2 * 8 * 9 * 10 * 12 * 4 - 1)                # columns over budget
    assert not kernels._wide(x, w, depthwise, out)


def test_the_filter_grads_swapped_product_is_taken_only_where_this_machines_blas_keeps_the_bits(monkeypatch):
    rng = np.random.default_rng(6)
    dy_rows = rng.standard_normal((1, 16, 4096), dtype=np.float32)
    cols = rng.standard_normal((1, 144, 4096), dtype=np.float32)
    for keeps in (True, False):
        monkeypatch.setattr(blas_bits, "filter_grad_product", lambda keeps=keeps: keeps)
        swapped = (cols @ dy_rows.transpose(0, 2, 1)).transpose(0, 2, 1)
        expected = swapped if keeps else dy_rows @ cols.transpose(0, 2, 1)
        assert kernels._times_columns(dy_rows, cols).tobytes() == np.ascontiguousarray(expected).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_filter_grad_of_few_outputs_multiplied_the_other_way_round_keeps_the_bits(dtype):
    """A float32 filter grad's product for 2-64 outputs a group, taken as (cols @ dy^T)^T: numpy's dy @ cols^T bit
    for bit, a C-ordered [O, C/g, *kernel] array; float64, one output, fewer column rows or a small product keep
    dy @ cols^T."""
    rng = np.random.default_rng(5)
    shapes = [(1, 32, 1152, 3136), (2, 6, 75, 30000), (1, 64, 160, 7000), (1, 64, 32, 9000), (1, 1, 9, 1 << 19)]
    for groups, outs, rows, length in shapes:
        dy_rows = rng.standard_normal((groups, outs, length)).astype(dtype)
        cols = rng.standard_normal((groups, rows, length)).astype(dtype)
        product = kernels._times_columns(dy_rows, cols)
        assert product.flags.c_contiguous and product.tobytes() == (dy_rows @ cols.transpose(0, 2, 1)).tobytes()
    x = rng.standard_normal((2, 16, 40, 40)).astype(dtype)
    geo = Geometry((1, 1), (1, 1, 1, 1), (1, 1), 1)
    dy = rng.standard_normal((2, 32, 40, 40)).astype(dtype)
    cols = columns.im2col(x, (3, 3), geo)[0]
    expected = (columns.grouped(dy, 1) @ cols.transpose(0, 2, 1)).reshape(32, 16, 3, 3)
    assert conv_filter_grad(x, dy, (32, 16, 3, 3), geo).tobytes() == expected.tobytes()
