"""Cases for PaddleNLP's GPU-only fused ops (gradc.ops.fused_rope, ...). fused_rotary_position_embedding's sin and
cos get no gradient (as in Paddle): its cases check q, k and v, with tables whose sin and cos are not partners."""

import numpy as np

from . import Case, rng
from .second_order import second_order

r = rng(61)


def randn(*shape):
    return r.standard_normal(shape)


def rope(heads=(2, 1, 3), d=4, rows=3, four_d=False, positions=None):
    tables = {"sin": randn(rows, d), "cos": randn(rows, d)}
    if four_d:
        tables = {name: value[None, :, None] for name, value in tables.items()}
    inputs = {slot: randn(2, 3, h, d) for slot, h in zip("qkv", heads)}
    return {**inputs, **tables, **({} if positions is None else {"position_ids": np.array(positions, np.int64)})}


CASES = [
    Case("fused_rotary_position_embedding", rope()),
    Case("fused_rotary_position_embedding", rope(four_d=True), {"use_neox_rotary_style": False}),
    Case("fused_rotary_position_embedding", rope(heads=(2,), rows=5, positions=[[4, 0, 2], [1, 1, 3]]),
         {"use_neox_rotary_style": False}, outputs={"out_q": 1}),
    Case("fused_rotary_position_embedding", {"q": randn(3, 2, 2, 6), "k": randn(3, 2, 1, 6), "v": randn(3, 2, 1, 6)},
         {"time_major": True}),
    second_order("fused_rotary_position_embedding", rope(), grad_type="fused_rotary_position_embedding_grad"),
    second_order("fused_rotary_position_embedding", rope(heads=(2, 1), rows=4, positions=[[3, 0, 2], [1, 1, 0]]),
                 {"use_neox_rotary_style": False}, {"out_v": 0}, grad_type="fused_rotary_position_embedding_grad"),
]


def positive(*shape):
    return r.uniform(0.5, 1.5, shape)


NORMS = [
    Case("fast_ln", {"x": randn(2, 3, 4), "scale": positive(4), "bias": randn(4)}, {"epsilon": 1e-5}),
    Case("fast_rms_norm", {"x": randn(3, 5), "scale": positive(5)}, {"epsilon": 1e-5}),
    Case("fused_rms_norm_ext", {"x": randn(2, 3, 4), "scale": positive(4)}, {"epsilon": 1e-5}),
    Case("rms_norm", {"x": randn(2, 3, 4), "scale": positive(3, 4)}, {"normalized_shape": [3, 4]}),
    Case("rms_norm", {"x": randn(3, 4)}, {"normalized_shape": [4]}),
    second_order("fast_ln", {"x": randn(2, 3, 4), "scale": positive(4), "bias": randn(4)}, {"epsilon": 1e-5}),
    second_order("fast_rms_norm", {"x": randn(3, 5), "scale": positive(5)}, {"epsilon": 1e-5}),
    second_order("fused_rms_norm_ext", {"x": randn(2, 3, 4), "scale": positive(4)}, {"epsilon": 1e-5}),
    second_order("rms_norm", {"x": randn(2, 3, 4), "scale": positive(3, 4)}, {"normalized_shape": [3, 4]}),
    second_order("rms_norm", {"x": randn(3, 4)}, {"normalized_shape": [4]}),
]
CASES += NORMS


def bdr(bias=True, weights=True):
    inputs = {"X": randn(2, 3, 4), "Residual": randn(2, 3, 4)}
    if bias:
        inputs["Bias"] = randn(4)
    if weights:
        inputs |= {"LnScale": positive(4), "LnBias": randn(4)}
    return inputs


CASES += [
    Case("fused_bias_dropout_residual_layer_norm", bdr(), {"is_test": True, "dropout_rate": 0.3}),
    Case("fused_bias_dropout_residual_layer_norm", bdr(weights=False), {"dropout_rate": 0.0}),
    second_order("fused_bias_dropout_residual_layer_norm", bdr(), {"is_test": True, "dropout_rate": 0.3}),
    second_order("fused_bias_dropout_residual_layer_norm", bdr(bias=False),
                 {"dropout_rate": 0.0, "dropout_implementation": "upscale_in_train"}),
]


def weight_only(arch=80, weight_dtype="int8"):
    """x with a weight packed by gradc's weight_quantize (int8, not differentiated) and its scale."""
    from gradc.executor.kernels.weight_quant import pack, quantize
    bits = 8 if weight_dtype == "int8" else 4
    q, scale = quantize(randn(64, 8), bits, -1, np.float64)
    return {"x": randn(2, 64), "weight": pack(q, bits, arch, False), "bias": randn(8), "weight_scale": scale}


CASES += [
    Case("weight_only_linear", weight_only(), wrt=["x"]),
    Case("weight_only_linear", weight_only(70, "int4"), {"weight_dtype": "int4", "arch": 70}, wrt=["x"]),
    second_order("weight_only_linear", weight_only(), wrt=["x"], grad_type="weight_only_linear_grad"),
]


def ffn(pre=True, biases=True, norms=True, d=4, hidden=6):
    """fused_feedforward's inputs: X [2, 3, d], the linears' weights (and biases), the used layer norm's weights."""
    inputs = {"X": randn(2, 3, d), "Linear1Weight": randn(d, hidden) * 0.5, "Linear2Weight": randn(hidden, d) * 0.5}
    if biases:
        inputs |= {"Linear1Bias": randn(hidden), "Linear2Bias": randn(d)}
    if norms:
        ln = "Ln1" if pre else "Ln2"
        inputs |= {f"{ln}Scale": positive(d), f"{ln}Bias": randn(d)}
    return inputs


FFN_TEST = {"is_test": True, "dropout1_rate": 0.2, "dropout2_rate": 0.3}
CASES += [
    Case("fused_feedforward", ffn(), {"pre_layer_norm": True, **FFN_TEST}),
    Case("fused_feedforward", ffn(pre=False), {"act_method": "relu", "dropout1_rate": 0.0, "dropout2_rate": 0.0,
                                               "dropout1_implementation": "upscale_in_train"}),
    Case("fused_feedforward", ffn(biases=False, norms=False), {"pre_layer_norm": True, "add_residual": False,
                                                               **FFN_TEST}),
    second_order("fused_feedforward", ffn(), {"pre_layer_norm": True, **FFN_TEST}),
    second_order("fused_feedforward", ffn(pre=False, biases=False), {"dropout1_rate": 0.0, "dropout2_rate": 0.0}),
]


def attention(pre=True, transposed=False, mask=True, biases=True, e=4, nh=2):
    """fused_attention's inputs: X [2, 3, e], QKVW ([3, nh, e / nh, e] or [e, 3e]), the out linear, the used norm."""
    dh = e // nh
    inputs = {"X": randn(2, 3, e), "QKVW": randn(e, 3 * e) * 0.5 if transposed else randn(3, nh, dh, e) * 0.5,
              "OutLinearW": randn(e, e) * 0.5}
    if biases:
        inputs |= {"QKVBias": randn(3 * e) if transposed else randn(3, nh, dh), "OutLinearBias": randn(e)}
    if mask:
        inputs["SrcMask"] = randn(2, 1, 3, 3)
    ln = "Ln" if pre else "Ln2"
    return inputs | {f"{ln}Scale": positive(e), f"{ln}Bias": randn(e)}


ATTENTION_TEST = {"is_test": True, "attn_dropout_rate": 0.2, "dropout_rate": 0.3}
ATTENTION_TRAIN = {"attn_dropout_rate": 0.0, "dropout_rate": 0.0}
CASES += [
    Case("fused_attention", attention(), {"pre_layer_norm": True, **ATTENTION_TEST}),
    Case("fused_attention", attention(pre=False, transposed=True), {"transpose_qkv_wb": True, "num_heads": 2,
                                                                    **ATTENTION_TRAIN}),
    Case("fused_attention", attention(mask=False, biases=False), {"pre_layer_norm": True, "add_residual": False,
                                                                  "attn_dropout_implementation": "downgrade_in_infer",
                                                                  **ATTENTION_TEST}),
    second_order("fused_attention", attention(), {"pre_layer_norm": True, **ATTENTION_TEST},
                 grad_type="fused_attention_grad"),
    second_order("fused_attention", attention(pre=False, transposed=True, biases=False),
                 {"transpose_qkv_wb": True, "num_heads": 2, **ATTENTION_TRAIN}, grad_type="fused_attention_grad"),
]

CASES += [
    Case("fused_dropout_add", {"x": randn(2, 3), "y": randn(2, 3)}, {"p": 0.3, "is_test": True,
                                                                   "mode": "downscale_in_infer"}),
    Case("fused_dropout_add", {"x": randn(2, 3), "y": randn(2, 3)}, {"p": 1.0}),
    second_order("fused_dropout_add", {"x": randn(2, 3), "y": randn(2, 3)}, {"p": 0.3, "is_test": True,
                                                                             "mode": "downscale_in_infer"}),
    second_order("fused_dropout_add", {"x": randn(2, 3), "y": randn(2, 3)}, {"p": 0.0}),
]
