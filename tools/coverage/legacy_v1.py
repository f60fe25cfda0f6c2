"""Rows: ops of Paddle 1.x and 2.x programs that Paddle 3.3.1's Python API no longer writes (v1 expand, flatten2,
top_k, reshape, transpose, crop, fill_constant_batch_size_like, the v1 interpolations, fc, hinge_loss, l1_norm);
saved models still hold them. Each row appends the op itself (legacy_shim.append), as those versions' layers did."""

import paddle

from .legacy_shim import _outputs, append
from .spec import Input, const, f, given, table


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


def _fc(x, w, bias, in_num_col_dims, activation_type=""):
    """fc: the legacy op, or in PIR mode (where legacy ops cannot be appended) pd_op.fc. Paddle has no fc grad,
    so the rows differentiate no input and check the values only."""
    if paddle.framework.in_pir_mode():
        return paddle._C_ops.fc(x, w, bias, in_num_col_dims, activation_type, False)
    inputs = {"Input": x, "W": w} if bias is None else {"Input": x, "W": w, "Bias": bias}
    return append("fc", inputs, {"in_num_col_dims": in_num_col_dims, "activation_type": activation_type})

NN = table("legacy_v1",
    ("bilinear_interp_v1", lambda x: append("bilinear_interp", {"X": x}, {
        "out_h": 5, "out_w": 7, "interp_method": "bilinear", "align_corners": False, "align_mode": 0}), f(1, 2, 3, 4)),
    ("bilinear_interp_v1_scale", lambda x: append("bilinear_interp", {"X": x}, {
        "scale": 1.5, "interp_method": "bilinear", "align_corners": False, "align_mode": 1}), f(1, 2, 3, 5)),
    ("bilinear_interp_v1_corners", lambda x: append("bilinear_interp", {"X": x}, {
        "out_h": 4, "out_w": 6, "interp_method": "bilinear", "align_corners": True}), f(2, 1, 3, 4)),
    ("bilinear_interp_v1_nhwc", lambda x: append("bilinear_interp", {"X": x}, {
        "out_h": 2, "out_w": 5, "interp_method": "bilinear", "align_corners": False, "align_mode": 0,
        "data_layout": "NHWC"}), f(2, 3, 4, 2)),
    ("bilinear_interp_v1_outsize", lambda x: append("bilinear_interp", {
        "X": x, "OutSize": paddle.to_tensor([4, 6], dtype="int32")}, {
        "out_h": 9, "out_w": 9, "scale": 1.5, "interp_method": "bilinear", "align_corners": False}), f(1, 2, 3, 4)),
    ("nearest_interp_v1", lambda x: append("nearest_interp", {"X": x}, {
        "out_h": 6, "out_w": 7, "interp_method": "nearest", "align_corners": False}), f(1, 2, 3, 4)),
    ("nearest_interp_v1_scale", lambda x: append("nearest_interp", {"X": x}, {
        "scale": 1.7, "interp_method": "nearest", "align_corners": True}), f(1, 2, 3, 5)),
    ("fc_relu", lambda x, w, b: _fc(x, w, b, in_num_col_dims=2, activation_type="relu"),
     Input((2, 3, 4), grad=False), Input((4, 5), grad=False), Input((5,), grad=False)),
    ("fc_plain", lambda x, w: _fc(x, w, None, in_num_col_dims=1),
     Input((2, 3, 2), grad=False), Input((6, 4), grad=False)),
    ("hinge_loss", lambda x, y: append("hinge_loss", {"Logits": x, "Labels": y}, out_slot="Loss"),
     f(5, 1), given([[0.0], [1.0], [1.0], [0.0], [1.0]], "float32")),
    ("l1_norm", lambda x: append("l1_norm", {"X": x}), f(3, 4)),
)

ROWS = SHAPE + NN
