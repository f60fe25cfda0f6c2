"""cumprod (exclusive, reversed, negative dim, zeros in x), broadcast_tensors and index_put (int indices,
broadcast together or fewer than x's rank, a bool mask; accumulate or not). paddle.index_put builds only a PIR
op in 3.3.1 and paddle.cumprod takes neither exclusive nor reverse, so those ops are appended directly."""

import numpy as np
import paddle
from paddle.base.layer_helper import LayerHelper

from . import FEED, Case, data, ints


def _op(op_type: str, inputs: dict, attrs: dict, out_slot: str):
    out = LayerHelper(op_type).create_variable_for_type_inference("float64")
    LayerHelper(op_type).append_op(type=op_type, inputs=inputs, outputs={out_slot: out}, attrs=attrs)
    return out


def with_zeros(name: str):
    var = data(name, 3, 5)
    FEED[name][0, 1] = FEED[name][1, 2:4] = 0.0
    return var


def cumprod(dim: int, exclusive: bool, reverse: bool):
    return lambda: [_op("cumprod", {"X": with_zeros("x")}, {"dim": dim, "exclusive": exclusive, "reverse": reverse},
                        "Out")]


def index_put(indices, value_shape, accumulate: bool):
    def build():
        x = data("x", 3, 4)
        picks = [ints(f"i{n}", index, "int64") if np.asarray(index).dtype != bool else
                 data(f"i{n}", grad=False, dtype="bool", value=index) for n, index in enumerate(indices)]
        return [_op("index_put", {"x": x, "indices": picks, "value": data("value", *value_shape)},
                    {"accumulate": accumulate}, "out")]
    return build


MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])
CASES = [
    *[Case(f"cumprod_dim{dim}{'_exclusive' if exclusive else ''}{'_reverse' if reverse else ''}",
           cumprod(dim, exclusive, reverse))
      for dim in (1, -2) for exclusive in (False, True) for reverse in (False, True)],
    Case("broadcast_tensors", lambda: paddle.broadcast_tensors([data("a", 2, 1, 3), data("b", 4, 1), data("c", 3)])),
    Case("index_put_rows", index_put([[2, 0]], (2, 4), False)),
    Case("index_put_rows_accumulate", index_put([[2, 0]], (4,), True)),
    Case("index_put_broadcast_indices", index_put([[[0], [2]], [1, 3, 0]], (3,), False)),
    Case("index_put_repeats_accumulate", index_put([[0, 2, 0], [1, 3, 1]], (1,), True)),
    Case("index_put_mask", index_put([MASK], (1,), False)),
    Case("index_put_mask_accumulate", index_put([MASK], (6,), True)),
]
