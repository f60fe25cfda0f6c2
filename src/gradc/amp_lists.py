"""Paddle 3.3.1's automatic mixed precision lists (paddle/amp/amp_lists.py, paddle/static/amp/fp16_lists.py), as
paddle.static.amp.decorate uses them by default on a CUDA build: white ops compute in float16 / bfloat16, black ops
in float32, gray ops follow the op that wrote their inputs; and the slots of normalisation ops that stay float32."""

from __future__ import annotations

WHITE = frozenset({"conv2d", "einsum", "matmul", "matmul_v2", "linear_v2", "max_pool2d_with_index", "mul",
                   "fused_gemm_epilogue", "fused_rotary_position_embedding", "flash_attn"})
# float16 only: fake quantization, the fused transformer ops, and two fused ops of ResNet
WHITE_FLOAT16 = WHITE | {"fake_quantize_dequantize_abs_max", "fake_quantize_dequantize_moving_average_abs_max",
                         "fused_attention", "fused_feedforward", "resnet_unit", "fused_bn_add_activation"}
BLACK_DEFAULT = frozenset({
    "tan", "acos", "asin", "sinh", "cosh", "atanh", "tanh_shrink", "erfinv", "exp", "expm1", "log", "log10", "log2",
    "reciprocal", "rsqrt", "pow", "square", "reduce_sum", "mean", "reduce_mean", "reduce_prod", "cumprod", "cumsum",
    "dist", "pnorm", "frobenius_norm", "renorm", "group_norm", "layer_norm", "softmax", "softmin", "softplus",
    "log_softmax", "softmax_with_cross_entropy", "sigmoid_cross_entropy_with_logits", "c_softmax_with_cross_entropy",
    "c_softmax_with_multi_label_cross_entropy", "cross_entropy", "cross_entropy2", "nll_loss", "huber_loss",
    "triplet_margin_loss", "log_loss", "hsigmoid_loss", "margin_cross_entropy"})
# black at every level: O2 computes everything else in the low format
BLACK_ALWAYS = frozenset({"linear_interp_v2", "nearest_interp_v2", "bilinear_interp_v2", "bicubic_interp_v2",
                          "trilinear_interp_v2", "lookup_table", "lookup_table_v2", "scatter"})
GRAY = frozenset({
    "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "elementwise_max", "elementwise_min",
    "elementwise_pow", "elementwise_mod", "elementwise_floordiv", "batch_norm", "layer_norm", "tanh", "sigmoid",
    "top_k", "pool2d", "pool3d", "dropout", "relu", "relu6", "leaky_relu", "soft_relu", "flatten2", "stack",
    "unstack", "uniform_random", "uniform_random_batch_size_like", "gaussian_random", "slice", "rank", "scale",
    "transpose2", "reshape2", "gather", "fill_constant", "get_tensor_from_selected_rows", "sign", "cast",
    "fused_bn_add_activation", "c_identity", "c_concat", "all_reduce", "concat", "split", "fused_feedforward",
    "fused_attention", "fused_multi_transformer"})


def white_list(dtype: str) -> frozenset[str]:
    return WHITE_FLOAT16 if dtype == "float16" else WHITE


def black_list(level: str) -> frozenset[str]:
    return BLACK_DEFAULT | BLACK_ALWAYS if level == "O1" else BLACK_ALWAYS


def keeps_float32_input(op_type: str, slot: str) -> bool:
    """A slot of a normalisation op that stays float32 (its scale, bias and statistics) whatever the op's format."""
    if op_type in ("batch_norm", "layer_norm", "instance_norm"):
        return slot != "X"
    if op_type == "fused_bn_add_activation":
        return slot not in ("X", "Z")
    if op_type == "resnet_unit":
        return slot not in ("X", "FilterX", "Z", "FilterZ")
    if op_type in ("fused_attention", "fused_feedforward"):
        return slot in ("LnScale", "LnBias", "Ln2Scale", "Ln2Bias", "Ln1Scale", "Ln1Bias")
    if op_type == "fused_multi_transformer":
        return slot in ("LnScale", "LnBias", "FFNLnScale", "FFNLnBias")
    return False


def keeps_float32_output(op_type: str, slot: str) -> bool:
    """An output slot that stays float32: the statistics of batch and layer norm, the fused ops' norms'."""
    if op_type in ("batch_norm", "fused_bn_add_activation", "layer_norm"):
        return slot != "Y"
    if op_type == "resnet_unit":
        return slot not in ("Y", "ConvX", "ConvZ")
    if op_type in ("fused_attention", "fused_feedforward"):
        return slot in ("LnMean", "LnVariance", "Ln2Mean", "Ln2Variance", "Ln1Mean", "Ln1Variance")
    return False
