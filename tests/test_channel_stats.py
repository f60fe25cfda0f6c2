"""Batch norm's per-channel sums by BLAS (gradc.executor.kernels.channel_stats): the sums over all but the channel
axis, as close to float64's as numpy's pairwise sums, and numpy's own sums, bit for bit, where BLAS does not take the
array (a channels-last view, float16)."""

import numpy as np
import pytest

from gradc.executor.kernels.channel_stats import channel_dots, channel_sums, not_channel

SHAPES = [(5, 3), (2, 4, 7), (2, 6, 5, 3), (3, 2, 4, 3, 2), (1, 8, 40, 40), (0, 3, 4, 4), (2, 3, 0, 4)]   # 2 empty


def _reference(a, b=None):
    """The sums in float64 over all but axis 1."""
    product = a.astype(np.float64) if b is None else a.astype(np.float64) * b.astype(np.float64)
    return product.sum(axis=not_channel(a))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-6), (np.float64, 1e-13)])
def test_sums_and_dots_are_per_channel(shape, dtype, rtol):
    rng = np.random.default_rng(len(shape))
    a, b = (rng.standard_normal(shape) + 0.5).astype(dtype), rng.standard_normal(shape).astype(dtype)
    sums, dots = channel_sums(a), channel_dots(a, b)
    assert sums.dtype == dots.dtype == dtype and sums.shape == dots.shape == (shape[1],)
    scale = np.abs(a).astype(np.float64).sum(axis=not_channel(a))   # the sums' condition: no cancellation bound
    np.testing.assert_array_less(np.abs(sums - _reference(a)), rtol * scale + 1e-30)
    scale = np.abs(a.astype(np.float64) * b).sum(axis=not_channel(a))
    np.testing.assert_array_less(np.abs(dots - _reference(a, b)), rtol * scale + 1e-30)


def test_as_close_to_float64_as_numpys_pairwise_sums():
    """A BatchNorm layer's [2, 64, 112, 112], values around 3 (no cancellation to hide behind): the error of each
    sum against float64 is within 3x numpy's."""
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((2, 64, 112, 112)) * 2 + 3).astype(np.float32)
    b = rng.standard_normal(a.shape).astype(np.float32)
    for ours, numpys, exact in ((channel_sums(a), a.sum(axis=(0, 2, 3)), _reference(a)),
                                (channel_dots(a, b), (a * b).sum(axis=(0, 2, 3)), _reference(a, b)),
                                (channel_dots(a, a), (a * a).sum(axis=(0, 2, 3)), _reference(a, a))):
        size = np.abs(exact).max()
        assert np.abs(ours - exact).max() / size <= 3 * np.abs(numpys - exact).max() / size + 1e-8


@pytest.mark.parametrize("case", ["channels last", "float16", "mixed dtypes"])
def test_arrays_blas_does_not_take_get_numpys_sums(case):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 5, 6, 7)).astype(np.float32), rng.standard_normal((2, 5, 6, 7)).astype(np.float32)
    if case == "channels last":   # an NHWC array seen channels first: strided, reshaping it would copy
        a, b = np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 1, -1)), -1, 1), np.moveaxis(
            np.ascontiguousarray(np.moveaxis(b, 1, -1)), -1, 1)
    elif case == "float16":
        a, b = a.astype(np.float16), b.astype(np.float16)
    else:
        b = b.astype(np.float64)
    axes = (0, 2, 3)
    assert channel_dots(a, b).tobytes() == (a * b).sum(axis=axes).tobytes()
    if case != "mixed dtypes":
        assert channel_sums(a).tobytes() == a.sum(axis=axes).tobytes()
