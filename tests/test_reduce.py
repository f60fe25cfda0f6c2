"""reduce_sum's dtypes: inference and kernel agree on Out's (Paddle 3.3.1's rule)."""

from __future__ import annotations

import numpy as np
import pytest

from gradc.errors import ProgramError
from one_op import kernel_run, run


@pytest.mark.parametrize("dtype, out_dtype", [("int8", "int8"), ("int16", "int16"), ("uint8", "uint8"),
                                              ("int32", "int64"), ("bool", "int64"), ("float32", "float32")])
def test_reduce_sum_kernel_gives_the_inferred_dtype(dtype, out_dtype):
    x = (np.arange(6).reshape(2, 3) * 50).astype(dtype)
    assert kernel_run("reduce_sum", {"X": x}, {"dim": [1]})["Out"].dtype == out_dtype


def test_reduce_sum_of_int8_wraps_as_paddle():
    x = (np.arange(6).reshape(2, 3) * 50).astype("int8")
    assert run("reduce_sum", {"X": x}, {"dim": [1]})["Out"].tolist() == [-106, 88]   # Paddle 3.3.1's values


def test_reduce_sum_refuses_an_unknown_out_dtype():
    with pytest.raises(ProgramError, match=r"reduce_sum.*out_dtype 77 is neither -1"):
        run("reduce_sum", {"X": np.ones((2, 3), "float32")}, {"dim": [1], "out_dtype": 77})
