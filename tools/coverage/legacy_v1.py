"""Rows: ops of Paddle 1.x and 2.x programs that Paddle 3.3.1's Python API no longer writes (v1 expand, flatten2,
top_k, reshape, transpose, crop, fill_constant_batch_size_like, the v1 interpolations, fc, hinge_loss, l1_norm);
saved models still hold them. Each row appends the op itself (legacy_shim.append), as those versions' layers did."""

import paddle

from .legacy_shim import _outputs, append
from .spec import const, f, given, table


def _tiled(out, shape: list[int]):
    """Paddle 3.3.1 declares expand's output with expand_v2's rule (the times read as a target shape) while its
    kernel tiles: the var is given the tiled shape, as Paddle 2.x declared it."""
    out.desc.set_shape(shape)
    return out


SHAPE = table(
    "legacy_v1",
    ("expand_v1", lambda x: _tiled(append("expand", {"X": x}, {"expand_times": [2, 1, 3]}), [4, 3, 3]), f(2, 3, 1)),
    ("expand_v1_tensor", lambda x, times: _tiled(append("expand", {"X": x, "ExpandTimes": times}), [4, 3]), f(2, 3),
     given([2, 1], "int32")),
    ("flatten2_v1", lambda x: _outputs("flatten2", {"X": x}, {"Out": x.dtype, "XShape": x.dtype}, {"axis": 2})[0],
     f(2, 3, 4)),
    ("top_k_v1", lambda x: _outputs("top_k", {"X": x}, {"Out": x.dtype, "Indices": paddle.int64}, {"k": 2})[0],
     f(3, 5)),
    ("top_k_v1_tensor", lambda x, k: _outputs("top_k", {"X": x, "K": k}, {"Out": x.dtype, "Indices": paddle.int64},
                                              {"k": 1})[0], f(3, 5), given([3], "int32")),
    ("reshape_v1", lambda x: append("reshape", {"X": x}, {"shape": [0, -1, 2]}), f(2, 3, 4)),
    ("reshape_v1_tensor", lambda x, shape: append("reshape", {"X": x, "Shape": shape}, {"shape": [-1, 3, 2]}),
     f(2, 3, 4), given([4, 0, 2], "int32")),
    ("transpose_v1", lambda x: append("transpose", {"X": x}, {"axis": [2, 0, 1]}), f(2, 3, 4)),
    ("crop_v1", lambda x: append("crop", {"X": x}, {"shape": [2, 2], "offsets": [1, 1]}), f(3, 4)),
    ("crop_v1_offsets", lambda x, offsets: append("crop", {"X": x, "Offsets": offsets}, {"shape": [2, 3]}), f(3, 4),
     given([1, 0], "int32")),
    ("crop_v1_like", lambda x, y: append("crop", {"X": x, "Y": y}, {"offsets": [0, 1]}), f(3, 4), const(2, 3)),
    ("fill_constant_batch_size_like_v1", lambda x: x * append(
        "fill_constant_batch_size_like", {"Input": x}, {"shape": [-1, 3], "value": 1.5, "dtype": 5}), f(2, 3)),
)

NN = table("legacy_v1")

ROWS = SHAPE + NN
