"""A large batch's convolution goes in batch slices (bounded im2col memory). The output and the input grad are
bit for bit the one-product results on the BLAS numpy links (slices aligned to COLS_UNIT columns), with the
same memory layout; the filter grad adds the slices' products, a summation order of its own, to within float32
rounding. Max pooling on strided views (pool_taps) gives the general kernels' bits."""

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from gradc.executor.kernels import conv as kernels
from gradc.executor.kernels.conv import Geometry, conv, conv_filter_grad, conv_input_grad
from gradc.executor.kernels.pool_taps import tap_geometry, taps_max, taps_max_grad
from gradc.executor.kernels.pool_windows import _max_pool_grad, axis_windows, max_windows
from gradc.ops.conv import pool_geometry

CASES = [  # x, w, strides, pads (before, after per dim), groups; outputs of 144, 64, 64, 32 positions
    ((96, 1, 12, 12), (6, 1, 5, 5), (1, 1), (2, 2, 2, 2), 1),
    ((64, 6, 10, 10), (16, 6, 3, 3), (1, 1), (0, 0, 0, 0), 1),
    ((48, 4, 16, 16), (8, 2, 3, 3), (2, 2), (1, 1, 1, 1), 2),
    ((64, 3, 32), (4, 3, 3), (1,), (1, 1), 1),
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
    monkeypatch.setattr(kernels, "COLS_BUDGET", half_batch)
    assert len(kernels._batch_slices(x, w.shape[2:], geo)) > 1
    sliced, dx, dw = conv(x, w, geo), conv_input_grad(dy, w, x.shape[2:], geo), conv_filter_grad(x, dy, w.shape, geo)
    for ours, reference in ((sliced, whole), (dx, whole_dx)):
        assert ours.dtype == reference.dtype and ours.strides == reference.strides
        assert ours.tobytes() == reference.tobytes()
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
        grads += 1
    assert compared > 250 and grads > 150


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
                kernels._windows(xp, k, geo)
            continue
        windows = windows[(slice(None), slice(None), *(slice(None, None, v) for v in s + d))]
        ours = kernels._windows(xp, k, geo)
        assert ours.shape == windows.shape and ours.tobytes() == windows.tobytes()
    for last in (False, True):
        x = rng.standard_normal((int(rng.integers(1, 3)), 6, 4, 5)).astype(np.float32)
        x = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1) if last else x
        geo = Geometry((1, 1), (0, 0, 0, 0), (1, 1), 1 + seed % 3)
        (cols, out), (general, general_out) = kernels._columns(x, (1, 1), geo), kernels.im2col(x, (1, 1), geo)
        assert out == general_out and cols.strides == general.strides and cols.tobytes() == general.tobytes()
