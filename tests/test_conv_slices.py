"""A large batch's convolution goes in batch slices (bounded im2col memory). The output and the input grad are
bit for bit the one-product results on the BLAS numpy links (slices aligned to COLS_UNIT columns), with the
same memory layout; the filter grad adds the slices' products, a summation order of its own, to within float32
rounding. Max pooling over tiling windows (pool_tiles) gives the general kernels' bits."""

import numpy as np
import pytest

from gradc.executor.kernels import conv as kernels
from gradc.executor.kernels.conv import Geometry, conv, conv_filter_grad, conv_input_grad
from gradc.executor.kernels.pool_tiles import tile_sizes, tiled_max, tiled_max_grad
from gradc.executor.kernels.pool_windows import _max_pool_grad, axis_windows, max_windows

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


@pytest.mark.parametrize("trial", range(40))
def test_tiled_max_pooling_is_the_general_kernel(trial):
    rng = np.random.default_rng(trial)
    dims = 1 + trial % 3
    k = tuple(int(v) for v in rng.integers(1, 4, dims))
    out = tuple(int(v) for v in rng.integers(1, 4, dims))
    dtype = (np.float32, np.float64)[trial % 2]
    x = rng.integers(-2, 3, (2, 3, *(o * s for o, s in zip(out, k)))).astype(dtype)   # small ints: many ties
    if trial % 4 == 0:
        x.flat[rng.integers(x.size)] = np.nan
    dout = rng.standard_normal((2, 3, *out)).astype(dtype)
    dout.flat[0] = -0.0
    x.flat[rng.integers(x.size, size=x.size // 4)] = -0.0   # ties of -0.0 and +0.0: the first one wins
    bounds = [axis_windows(size, o, s, s, 0, False, True)[0] for size, o, s in zip(x.shape[2:], out, k)]
    assert tile_sizes(x, bounds) == k
    general = max_windows(x, bounds)[0].max(1).reshape(x.shape[:2] + out)
    assert tiled_max(x, k).tobytes() == general.tobytes()
    general_dx = _max_pool_grad(x, dout, bounds)
    dx = tiled_max_grad(x, dout, k)
    assert dx.dtype == general_dx.dtype and dx.tobytes() == general_dx.tobytes()


def test_overlapping_or_padded_windows_do_not_tile():
    x = np.zeros((1, 1, 6, 6), np.float32)
    overlapping = [axis_windows(6, 5, 2, 1, 0, False, True)[0]] * 2
    padded = [axis_windows(6, 4, 2, 2, 1, False, True)[0]] * 2
    assert tile_sizes(x, overlapping) is None and tile_sizes(x, padded) is None
