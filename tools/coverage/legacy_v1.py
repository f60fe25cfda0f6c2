"""Rows: ops of Paddle 1.x and 2.x programs that Paddle 3.3.1's Python API no longer writes (v1 expand, flatten2,
top_k, reshape, transpose, crop, fill_constant_batch_size_like, the v1 interpolations, fc, hinge_loss, l1_norm);
saved models still hold them. Each row appends the op itself (legacy_shim.append), as those versions' layers did."""

import paddle

from .legacy_shim import append
from .spec import Input, f, given, table

SHAPE = table("legacy_v1")


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
