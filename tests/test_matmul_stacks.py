"""A stack of matrices times one matrix (a transformer's linear layers): the forward and X's grad as one product of
the stack's rows, each value a dot product as close to float64's as numpy's product per matrix; Y's grad summed as
the stack's products are made, bit for bit numpy's products summed over the stack."""

import numpy as np
import pytest

from gradc.executor.kernels import matmul

SHAPES = [((8, 128, 256), 300), ((2, 3, 5, 7), 4), ((1, 4, 9), 6), ((3, 1, 33), 17), ((4, 2, 16, 64), 96)]


def _stack(shape, dtype, layout, rng):
    a = rng.standard_normal(shape).astype(dtype)
    if layout == "transposed":   # the same values, stored with the last two axes swapped (trans_x's operand)
        return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    if layout == "sliced":
        return np.concatenate([a, a], axis=-1)[..., ::2]
    return a


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("shape, n", SHAPES)
def test_products_of_a_stack_and_one_matrix(shape, n, layout, dtype, monkeypatch):
    rng = np.random.default_rng(len(shape) * n)
    x = _stack(shape, dtype, layout, rng)
    y = rng.standard_normal((shape[-1], n)).astype(dtype)
    dout = rng.standard_normal((*shape[:-1], n)).astype(dtype)
    for a, b in ((x, y), (dout, y.T)):
        product, exact = matmul._product(a, b), a.astype(np.float64) @ b.astype(np.float64)
        assert product.shape == exact.shape and product.dtype == dtype
        bound = a.shape[-1] * np.finfo(dtype).eps * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
        assert np.all(np.abs(product - exact) <= bound)   # a dot product's rounding bound, value by value
    lead = tuple(range(len(shape) - 2))
    expected = (np.swapaxes(x, -1, -2) @ dout).sum(axis=lead)
    summed = matmul._batch_sum_of_products(np.swapaxes(x, -1, -2), dout)
    assert summed.dtype == expected.dtype and summed.tobytes() == expected.tobytes()
    monkeypatch.setattr(matmul, "LOOP_PRODUCT", 0)
    assert matmul._summed_by_loop(x, dout)
    monkeypatch.setattr(matmul, "LOOP_PRODUCT", shape[-2] * shape[-1] * n + 1)
    assert not matmul._summed_by_loop(x, dout)
