"""The cases of tools/paddle_onednn_ops.py: oneDNN-only legacy ops written into a ProgramDesc with their OpProto's
slots and attributes (tools/paddle_gpu_inference_ops.py's spec format: feeds, ops, optional draw), which Paddle
3.3.1's CPU build runs with its oneDNN kernels (the only kernels these ops have)."""

from __future__ import annotations

import numpy as np

F32 = "float32"
ROWS = 4
# the attributes Paddle's translator requires of a oneDNN op, at the values of a float32 run
ONEDNN_FLOAT32 = {"mkldnn_data_type": "float32", "onednn_data_type": "", "force_fp32_output": False}
# Paddle's executor runs a fused op's oneDNN kernel only with use_mkldnn (a bool): without it fused_elementwise_*
# runs the plain elementwise kernel and drops fuse_activation and fused_output_scale
ONEDNN = ("_set_bool_attr", True)


def _draw(rng, name, shape, dtype, *lod):
    """Floats spread over the quantized range with exact ties of the scale 40 and values past both ends; int8 and
    uint8 feeds take every value of their type."""
    if dtype == "int8":
        return np.resize(np.arange(-128, 128), shape).astype(np.int8)
    if dtype == "uint8":
        return np.resize(np.arange(0, 256), shape).astype(np.uint8)
    if name == "y":   # a divisor away from zero
        return rng.uniform(0.5, 2.0, shape).astype(dtype)
    if name != "x" or len(shape) != 2:
        return rng.standard_normal(shape).astype(dtype)
    values = rng.uniform(-3.5, 3.5, shape).astype(np.float32).ravel()
    values[:64] = (np.arange(-32, 32) + np.float32(0.5)) / np.float32(40)   # halfway cases of x * 40
    values[64:66] = (1e6, -1e6)
    return values.reshape(shape)


def _quant(name: str, shift: float, negative: bool, declared: str) -> tuple:
    return ("quantize", {"Input": ["x"]}, {"Output": (name, [ROWS, 128], declared)},
            {"Scale": 40.0, "Shift": shift, "is_negative_input": negative, "output_format": "NCHW",
             "bfloat16": False})


def _dequant(source: str, name: str, scale: float, shift: float) -> tuple:
    return ("dequantize", {"Input": [source]}, {"Output": (name, [ROWS, 128])}, {"Scale": scale, "Shift": shift})


def _requant(source: str, name: str, declared: str, scale_in: float, scale_out: float, shift_in: float,
             shift_out: float) -> tuple:
    return ("requantize", {"Input": [source]}, {"Output": (name, [ROWS, 128], declared)},
            {"Scale_in": scale_in, "Scale_out": scale_out, "Shift_in": shift_in, "Shift_out": shift_out})


def _quantize_chain(shift: float, negative: bool, declared: str) -> dict:
    """x quantized with Scale 40, dequantized, and requantized to a scale of 25.3 (keeping the shift)."""
    return {"feeds": {"x": ([ROWS, 128], F32)}, "draw": _draw,
            "ops": [_quant("q", shift, negative, declared), _dequant("q", "y", 40.0, shift),
                    _requant("q", "r", "uint8" if shift else declared, 40.0, 25.3, shift, shift)]}


def _requantize(dtype: str, scale_in: float, scale_out: float, shift_in: float, shift_out: float) -> dict:
    """Every int8 / uint8 value requantized."""
    declared = "uint8" if shift_in or shift_out else dtype
    return {"feeds": {"q": ([ROWS, 128], dtype)}, "draw": _draw,
            "ops": [_requant("q", "r", declared, scale_in, scale_out, shift_in, shift_out)]}


def _bfloat16() -> dict:
    """x * 3 rounded to bfloat16, dequantized back to float32 with Scale 3."""
    quantize = ("quantize", {"Input": ["x"]}, {"Output": ("q", [ROWS, 128], "bfloat16")},
                {"Scale": 3.0, "Shift": 0.0, "is_negative_input": True, "output_format": "NCHW", "bfloat16": True})
    return {"feeds": {"x": ([ROWS, 128], F32)}, "draw": _draw, "ops": [quantize, _dequant("q", "y", 3.0, 0.0)]}


def _elementwise_div(activation: str, alpha: float, scale: float, y: list[int], axis: int) -> dict:
    op = ("fused_elementwise_div", {"X": ["x"], "Y": ["y"]}, {"Out": ("out", [2, 3, 4])},
          {"axis": axis, "fuse_activation": activation, "fuse_alpha": alpha, "fuse_beta": 0.0,
           "fused_output_scale": scale, "fused_unsqueeze2_axes": ("_set_int32s_attr", []), "scale_x": 1.0,
           "scale_y": 1.0, "scale_out": 1.0, "use_mkldnn": ONEDNN})
    return {"feeds": {"x": ([2, 3, 4], F32), "y": (y, F32)}, "ops": [op], "draw": _draw}


def _conv3d(activation: str, residual: bool) -> dict:
    feeds = {"x": ([1, 2, 4, 5, 5], F32), "w": ([3, 2, 3, 3, 3], F32), "b": ([3], F32)}
    ins = {"Input": ["x"], "Filter": ["w"], "Bias": ["b"]}
    if residual:
        feeds["r"] = ([1, 3, 4, 5, 5], F32)
        ins["ResidualData"] = ["r"]
    op = ("fused_conv3d", ins, {"Output": ("out", [1, 3, 4, 5, 5])},
          {"strides": [1, 1, 1], "paddings": [1, 1, 1], "dilations": [1, 1, 1], "groups": 1, "data_format": "NCDHW",
           "padding_algorithm": "EXPLICIT", "fuse_activation": activation, "fuse_alpha": 0.0, "fuse_beta": 0.0,
           "fuse_residual_connection": residual, **ONEDNN_FLOAT32, "Scale_in": 1.0, "Scale_out": 1.0,
           "Scale_in_eltwise": 1.0, "Scale_weights": ("_set_float32s_attr", [1.0]), "use_mkldnn": ONEDNN})
    return {"feeds": feeds, "ops": [op]}


def _conv_transpose_bias(groups: int, activation: str, plain_pir: bool) -> dict:
    """The op has oneDNN kernels only (use_mkldnn); ``plain_pir``: translated without use_mkldnn, which makes
    Paddle's translator write pd_op.conv2d_transpose_bias instead of onednn_op's."""
    feeds = {"x": ([1, 4, 4, 5], F32), "w": ([4, 6 // groups, 3, 3], F32), "b": ([6], F32)}
    op = ("conv2d_transpose_bias", {"Input": ["x"], "Filter": ["w"], "Bias": ["b"]}, {"Output": ("out", [1, 6, 8, 10])},
          {"strides": [2, 2], "paddings": [1, 1], "output_padding": [1, 1], "dilations": [1, 1], "groups": groups,
           "data_format": "NCHW", "padding_algorithm": "EXPLICIT", "is_test": True, "fuse_activation": activation,
           "fuse_relu": False, "fuse_alpha": 0.0, "fuse_beta": 0.0, "output_size": ("_set_int32s_attr", []),
           "use_mkldnn": ONEDNN, **ONEDNN_FLOAT32})
    return {"feeds": feeds, "ops": [op], "plain_pir": plain_pir}


def _mul(x: list[int], y: list[int], x_cols: int, out: list[int]) -> dict:
    op = ("mul", {"X": ["x"], "Y": ["y"]}, {"Out": ("out", out)},
          {"x_num_col_dims": x_cols, "y_num_col_dims": 1, "use_mkldnn": ONEDNN, "scale_x": 1.0,
           "scale_y": ("_set_float32s_attr", [1.0]), "scale_out": 1.0, "force_fp32_output": False})
    return {"feeds": {"x": (x, F32), "y": (y, F32)}, "ops": [op]}


CASES = {
    "quantize_int8": _quantize_chain(0.0, True, "int8"),
    "quantize_uint8": _quantize_chain(0.0, False, "uint8"),
    "quantize_shift_128": _quantize_chain(128.0, True, "uint8"),
    "quantize_fractional_shift": _quantize_chain(3.7, True, "uint8"),
    "quantize_bfloat16": _bfloat16(),
    "requantize_int8": _requantize("int8", 40.0, 63.3, 0.0, 0.0),
    "requantize_int8_to_shifted": _requantize("int8", 7.0, 3.0, 0.0, 100.0),
    "requantize_uint8_shifted": _requantize("uint8", 40.0, 20.0, 128.0, 128.0),
    "requantize_shift_clipped": _requantize("uint8", 20.0, 40.0, 128.0, 128.0),
    "requantize_shift_rounded": _requantize("uint8", 40.0, 37.0, 3.0, 5.0),
    "fused_elementwise_div_relu": _elementwise_div("relu", 0.0, 1.0, [2, 3, 4], -1),
    "fused_elementwise_div_broadcast_leaky": _elementwise_div("leaky_relu", 0.2, 0.5, [3, 1], -1),
    "fused_conv3d_relu": _conv3d("relu", False),
    "fused_conv3d_residual": _conv3d("", True),
    "conv2d_transpose_bias": _conv_transpose_bias(1, "", True),
    "conv2d_transpose_bias_groups_relu": _conv_transpose_bias(2, "relu", False),
    "matmul_with_flatten": _mul([2, 3, 4], [4, 5], 2, [2, 3, 5]),
}
