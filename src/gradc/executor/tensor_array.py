"""The value of a DENSE_TENSOR_ARRAY var (Paddle's LoDTensorArray): a list of tensors, some positions
possibly unwritten (None). A type of its own, so the executor never mistakes it for the list of
values a kernel returns for a multi-var output slot."""

from __future__ import annotations

import numpy as np


class TensorArray(list):
    """``lods``: the LoD of each written position that had one when written (read_from_array gives it back with
    the value; beam_search_decode reads the LoDs of a search's steps)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.lods: dict[int, tuple] = {}

    def map(self, fn) -> TensorArray:
        """fn applied to each written position (keeping its LoD); unwritten ones stay None."""
        out = TensorArray(None if t is None else fn(t) for t in self)
        out.lods.update(self.lods)
        return out

    @staticmethod
    def sum(arrays: list[TensorArray]) -> TensorArray:
        """Position by position; an unwritten position adds nothing (a gradient array's zeros)."""
        out = TensorArray([None] * max(map(len, arrays)))
        for array in arrays:
            for i, t in enumerate(array):
                if t is not None:
                    out[i] = np.array(t, copy=True) if out[i] is None else out[i] + t
            out.lods = {**array.lods, **out.lods}   # a position's LoD: the first addend's that has one
        return out
