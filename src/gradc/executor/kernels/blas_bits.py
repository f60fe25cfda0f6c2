"""Whether this machine's BLAS gives a product computed the other way round, (b @ a^T)^T for a @ b^T, the same bits.

The executor's fast paths for few-row products take the swapped form, which BLAS packs faster, only where it does:
OpenBLAS's kernels for Intel's Haswell and later keep the bits; its kernels for AMD's Zen differ from 8 rows on.
Each answer is measured once a process, on shapes of the range its fast path takes.
"""

from __future__ import annotations

import functools

import numpy as np


def _keeps_bits(shapes) -> bool:
    rng = np.random.default_rng(0)
    for a_shape, b_shape in shapes:
        a = rng.standard_normal(a_shape, dtype=np.float32)
        b = rng.standard_normal(b_shape, dtype=np.float32)
        if (b @ np.swapaxes(a, -1, -2)).swapaxes(-1, -2).tobytes() != (a @ np.swapaxes(b, -1, -2)).tobytes():
            return False
    return True


@functools.cache
def few_rows_times_weight() -> bool:
    """matmul's times_transposed: 2-32 float32 rows against a weight of 2^18 values."""
    return _keeps_bits([((rows, 512), (512, 512)) for rows in (2, 5, 8, 17, 32)])


@functools.cache
def filter_grad_product() -> bool:
    """conv's filter grad: 2-64 outputs a group against twice as many column rows or more, 2^22 multiply-adds."""
    return _keeps_bits([((1, 2, 32768), (1, 64, 32768)), ((1, 16, 2048), (1, 144, 2048)),
                        ((1, 64, 512), (1, 128, 512))])


def measure_all() -> None:
    """Take every measurement now (run --profile does, before it counts memory: the filter grad's alone allocates
    8 MiB once, which the first convolution's grad would otherwise seem to need)."""
    few_rows_times_weight()
    filter_grad_product()
