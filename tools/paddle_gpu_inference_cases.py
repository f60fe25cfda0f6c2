"""The cases of tools/paddle_gpu_inference_ops.py: per case the feeds ({name: (shape, dtype[, LoD offsets])}), the
legacy ops written (type, inputs, outputs {slot: (name, shape[, dtype]) or a list of them}, attributes), and for an op
Paddle's CPU build has no kernel for, ``reference``: the unfused layers it replaces, as Paddle dygraph ops on the
float64 feeds."""

from __future__ import annotations

import paddle
import paddle.nn.functional as F

F32 = "float32"


def _elemwise(op: str, functors: list[str], x: list[int], y: list[int], axis: int = -1, scale: float = 0.0,
              save: bool = True) -> dict:
    """A fused_elemwise_(add_)activation and its grad op at a fed dout."""
    binary_first = functors[0].startswith("elementwise_")
    out_shape = x
    middle = y if binary_first else x   # IntermediateOut: Unary(Y), or Binary(X, Y)
    feeds = {"x": (x, F32), "y": (y, F32), "dout": (out_shape, F32)}
    attrs = {"functor_list": functors, "axis": axis, "scale": scale, "save_intermediate_out": ("_set_bool_attr", save)}
    outs = {"Out": ("out", out_shape), "IntermediateOut": ("middle", middle)}
    grad_ins = {"X": ["x"], "Y": ["y"], "Out": ["out"], "IntermediateOut": ["middle"], "Out@GRAD": ["dout"]}
    grads = {"X@GRAD": ("x@GRAD", x), "Y@GRAD": ("y@GRAD", y), "IntermediateOut@GRAD": []}   # the translator wants it
    forward = (op, {"X": ["x"], "Y": ["y"]}, outs, attrs)
    return {"feeds": feeds, "ops": [forward, (f"{op}_grad", grad_ins, grads, attrs)],
            "unfetched": () if save else ("middle",)}


def _squared_mat_sub() -> dict:
    feeds = {"x": ([3, 4], F32), "y": ([4, 5], F32)}
    outs = {"SquaredX": ("squared_x", [3, 4]), "SquaredY": ("squared_y", [4, 5]), "SquaredXY": ("squared_xy", [3, 5]),
            "Out": ("out", [3, 5])}
    return {"feeds": feeds, "ops": [("fusion_squared_mat_sub", {"X": ["x"], "Y": ["y"]}, outs, {"scalar": 0.5})]}


def _seqpool_concat(pooltype: str) -> dict:
    feeds = {"x0": ([5, 4], F32, [0, 2, 5]), "x1": ([5, 4], F32, [0, 2, 5])}   # the kernel wants one width
    op = ("fusion_seqpool_concat", {"X": ["x0", "x1"]}, {"Out": ("out", [2, 8])}, {"pooltype": pooltype, "axis": 1})
    return {"feeds": feeds, "ops": [op]}


def _self_dp_attention() -> dict:
    feeds = {"x": ([2, 3, 3, 2, 4], F32)}
    op = ("self_dp_attention", {"X": ["x"]}, {"Out": ("out", [2, 3, 2, 4])}, {"alpha": 0.5, "head_number": 2})
    return {"feeds": feeds, "ops": [op]}


def _attention(q, k, v, alpha, mask=None):
    """softmax(alpha q k^T + mask) v over [batch, heads, seq, dim], back to [batch, seq, heads * dim]."""
    scores = alpha * paddle.matmul(q, k, transpose_y=True)
    weights = F.softmax(scores if mask is None else scores + mask)
    context = paddle.matmul(weights, v).transpose([0, 2, 1, 3])
    return context.reshape([context.shape[0], context.shape[1], -1])


def _multihead_matmul(mask: list[int] | None) -> dict:
    """multihead_matmul_fuse_pass's op over Input [2, 3, 8], 2 heads of 4: W [hidden, 3, all_head_size], Bias
    [3, all_head_size], BiasQK the attention mask (full or broadcast)."""
    feeds = {"input": ([2, 3, 8], F32), "w": ([8, 3, 8], F32), "bias": ([3, 8], F32)}
    ins = {"Input": ["input"], "W": ["w"], "Bias": ["bias"]}
    if mask:
        feeds["bias_qk"], ins["BiasQK"] = (mask, F32), ["bias_qk"]
    attrs = {"alpha": 0.5, "head_number": 2, "transpose_Q": False, "transpose_K": True, "transpose_V": False}

    def reference(t):
        qkv = paddle.matmul(t["input"], t["w"].reshape([8, 24])) + t["bias"].reshape([24])
        q, k, v = qkv.reshape([2, 3, 3, 2, 4]).transpose([2, 0, 3, 1, 4]).unbind(0)
        return {"out": _attention(q, k, v, 0.5, t["bias_qk"] if mask else None)}

    return {"feeds": feeds, "ops": [("multihead_matmul", ins, {"Out": ("out", [2, 3, 8])}, attrs)],
            "reference": reference}


def _layer_norm_stats(h):
    return paddle.mean(h, -1).reshape([-1]), paddle.var(h, -1, unbiased=False).reshape([-1])


def _skip_layernorm() -> dict:
    feeds = {"x": ([2, 3, 8], F32), "y": ([2, 3, 8], F32), "scale": ([8], F32), "bias": ([8], F32)}
    op = ("skip_layernorm", {"X": ["x"], "Y": ["y"], "Scale": ["scale"], "Bias": ["bias"]}, {"Out": ("out", [2, 3, 8])},
          {"epsilon": 1e-5, "begin_norm_axis": 2})
    return {"feeds": feeds, "ops": [op], "reference": lambda t: {
        "out": F.layer_norm(t["x"] + t["y"], [8], t["scale"], t["bias"], 1e-5)}}


def _embedding_eltwise_layernorm() -> dict:
    feeds = {"ids0": ([2, 3], "int64"), "ids1": ([2, 3], "int64"), "ids2": ([2, 3], "int64"), "emb0": ([5, 8], F32),
             "emb1": ([4, 8], F32), "emb2": ([6, 8], F32), "bias": ([8], F32), "scale": ([8], F32)}
    ins = {"Ids": ["ids0", "ids1", "ids2"], "Embs": ["emb0", "emb1", "emb2"], "Bias": ["bias"], "Scale": ["scale"]}

    def reference(t):
        summed = sum(F.embedding(t[f"ids{i}"], t[f"emb{i}"]) for i in range(3))
        return {"out": F.layer_norm(summed, [8], t["scale"], t["bias"], 1e-3)}

    op = ("fused_embedding_eltwise_layernorm", ins, {"Out": ("out", [2, 3, 8])}, {"epsilon": 1e-3})
    return {"feeds": feeds, "ops": [op], "reference": reference}


def _fc_elementwise_layernorm(activation: str) -> dict:
    """fc_elementwise_layernorm_fuse_pass's op: layer_norm(act(X W + Bias0) + Y) over X [2, 3, 4] with x_num_col_dims
    2, so the fc's rows are the 6 tokens."""
    feeds = {"x": ([2, 3, 4], F32), "w": ([4, 8], F32), "bias0": ([8], F32), "y": ([2, 3, 8], F32), "scale": ([8], F32),
             "bias1": ([8], F32)}
    ins = {"X": ["x"], "W": ["w"], "Bias0": ["bias0"], "Y": ["y"], "Scale": ["scale"], "Bias1": ["bias1"]}
    outs = {"Out": ("out", [2, 3, 8]), "Mean": ("mean", [6]), "Variance": ("variance", [6])}
    attrs = {"x_num_col_dims": 2, "activation_type": activation, "epsilon": 1e-5, "begin_norm_axis": 2}

    def reference(t):
        h = paddle.matmul(t["x"], t["w"]) + t["bias0"]
        h = (F.relu(h) if activation == "relu" else h) + t["y"]
        mean, variance = _layer_norm_stats(h)
        return {"out": F.layer_norm(h, [8], t["scale"], t["bias1"], 1e-5), "mean": mean, "variance": variance}

    return {"feeds": feeds, "ops": [("fused_fc_elementwise_layernorm", ins, outs, attrs)], "reference": reference}


def _conv2d_add_act(activation: str, split: list[int]) -> dict:
    """conv2d_fusion_layout_transfer / conv_elementwise_add_act_fuse_pass's op: act(conv2d(Input) + Bias +
    ResidualData), split along channels into Outputs when split_channels is set."""
    feeds = {"input": ([1, 2, 5, 5], F32), "filter": ([4, 2, 3, 3], F32), "bias": ([4], F32),
             "residual": ([1, 4, 5, 5], F32)}
    ins = {"Input": ["input"], "Filter": ["filter"], "Bias": ["bias"], "ResidualData": ["residual"]}
    outs = {"Output": ("out", [1, 4, 5, 5])}
    if split:
        outs["Outputs"] = [(f"part{i}", [1, c, 5, 5]) for i, c in enumerate(split)]
    attrs = {"strides": [1, 1], "paddings": [1, 1], "dilations": [1, 1], "groups": 1, "data_format": "NCHW",
             "padding_algorithm": "EXPLICIT", "activation": activation, "split_channels": split,
             "exhaustive_search": False, "workspace_size_MB": 32, "fuse_alpha": 0.0}

    def reference(t):
        out = F.conv2d(t["input"], t["filter"], t["bias"], padding=1) + t["residual"]
        out = {"relu": F.relu, "identity": lambda v: v, "sigmoid": F.sigmoid, "tanh": paddle.tanh}[activation](out)
        parts = paddle.split(out, split, axis=1) if split else []
        return {"out": out, **{f"part{i}": part for i, part in enumerate(parts)}}

    return {"feeds": feeds, "ops": [("fused_conv2d_add_act", ins, outs, attrs)], "reference": reference}


def _transpose_flatten_concat() -> dict:
    """transpose_flatten_concat_fuse_pass's op: each X transposed by trans_axis, flattened to 2-D at flatten_axis,
    concatenated along concat_axis."""
    feeds = {"a": ([2, 3, 4, 2], F32), "b": ([2, 3, 4, 3], F32)}
    attrs = {"trans_axis": [0, 2, 3, 1], "flatten_axis": 1, "concat_axis": 1}

    def reference(t):
        flat = [paddle.flatten(t[n].transpose([0, 2, 3, 1]), 1).reshape([2, -1]) for n in ("a", "b")]
        return {"out": paddle.concat(flat, 1)}

    op = ("fusion_transpose_flatten_concat", {"X": ["a", "b"]}, {"Out": ("out", [2, 60])}, attrs)
    return {"feeds": feeds, "ops": [op], "reference": reference}


def _embedding_fc_lstm(peepholes: bool, initial: bool, reverse: bool) -> dict:
    """embedding_fc_lstm_fuse_pass's op over ids [6, 1] in sequences of 2 and 4, hidden size 3: the table holds the
    lookup already through the fc, Bias's 4D gate values go unread, its 3D peephole weights are read."""
    feeds = {"ids": ([6, 1], "int64", [0, 2, 6]), "table": ([5, 12], F32), "weight_h": ([3, 12], F32),
             "bias": ([1, 21 if peepholes else 12], F32)}
    ins = {"Ids": ["ids"], "Embeddings": ["table"], "WeightH": ["weight_h"], "Bias": ["bias"]}
    if initial:
        feeds |= {"h0": ([2, 3], F32), "c0": ([2, 3], F32)}
        ins |= {"H0": ["h0"], "C0": ["c0"]}
    outs = {"Hidden": ("hidden", [6, 3]), "Cell": ("cell", [6, 3]), "XX": ("xx", [6, 12])}
    attrs = {"use_peepholes": peepholes, "is_reverse": reverse, "use_seq": True, "gate_activation": "sigmoid",
             "cell_activation": "tanh", "candidate_activation": "tanh"}
    return {"feeds": feeds, "ops": [("fused_embedding_fc_lstm", ins, outs, attrs)],
            "unfetched": ("xx",)}   # Paddle's kernel computes the gates in XX: scratch


def _attention_lstm(initial_hidden: bool, scalar: bool) -> dict:
    """attention_lstm over x [6, 4] in sequences of 2 and 4, hidden size 3 (C0 is required)."""
    feeds = {"x": ([6, 4], F32, [0, 2, 6]), "c0": ([2, 3], F32), "attention_weight": ([7, 1], F32),
             "attention_bias": ([1, 1], F32), "lstm_weight": ([7, 12], F32), "lstm_bias": ([1, 12], F32)}
    ins = {"X": ["x"], "C0": ["c0"], "AttentionWeight": ["attention_weight"], "AttentionBias": ["attention_bias"],
           "LSTMWeight": ["lstm_weight"], "LSTMBias": ["lstm_bias"]}
    if initial_hidden:
        feeds["h0"], ins["H0"] = ([2, 3], F32), ["h0"]
    if scalar:
        feeds |= {"attention_scalar": ([1, 1], F32), "attention_scalar_bias": ([1, 1], F32)}
        ins |= {"AttentionScalar": ["attention_scalar"], "AttentionScalarBias": ["attention_scalar_bias"]}
    outs = {"Hidden": ("hidden", [6, 3]), "Cell": ("cell", [6, 3]), "AttentionedX": ("attentioned_x", [6, 1]),
            "AttentionFCOut": ("fc_out", [4, 1]), "LSTMX": ("lstm_x", [1, 4]), "LSTMOUT": ("lstm_out", [1, 12])}
    attrs = {"gate_activation": "sigmoid", "cell_activation": "tanh", "candidate_activation": "tanh"}
    return {"feeds": feeds, "ops": [("attention_lstm", ins, outs, attrs)],
            "unfetched": ("fc_out", "lstm_x", "lstm_out")}   # the kernel's scratch of its last step


def _multi_gru(layers: int, origin_mode: bool, bias: bool) -> dict:
    """multi_gru_fuse_pass's oneDNN op over x [5, 4] in sequences of 2 and 3, hidden size 3: per layer a forward and
    a reverse gru (WeightX, WeightH, Bias listed layer by layer, forward first), concatenated into the next input."""
    feeds, ins = {"x": ([5, 4], F32, [0, 2, 5])}, {"X": ["x"], "WeightX": [], "WeightH": [], "Bias": []}
    for i in range(2 * layers):
        feeds |= {f"wx{i}": ([4 if i < 2 else 6, 9], F32), f"wh{i}": ([3, 9], F32)}
        ins["WeightX"].append(f"wx{i}")
        ins["WeightH"].append(f"wh{i}")
        if bias:
            feeds[f"b{i}"] = ([1, 9], F32)
            ins["Bias"].append(f"b{i}")
    attrs = {"layers": layers, "origin_mode": ("_set_bool_attr", origin_mode), "activation": "tanh",
             "gate_activation": "sigmoid", "use_mkldnn": ("_set_bool_attr", True),   # the kernel is oneDNN's
             "mkldnn_data_type": "float32", "Scale_data": 1.0, "Shift_data": 0.0,   # the translator wants them all
             "force_fp32_output": ("_set_bool_attr", False)}
    return {"feeds": feeds, "ops": [("multi_gru", ins, {"Hidden": ("hidden", [5, 6])}, attrs)]}


def _yolo_box_head() -> dict:
    """yolo_box_fuse_pass's head over x [1, 2 (5 + 2), 3, 4]: per anchor sigmoid of all but w, h, which take exp."""
    feeds = {"x": ([1, 14, 3, 4], F32)}

    def reference(t):
        blocks = t["x"].reshape([1, 2, 7, 3, 4])
        parts = [F.sigmoid(blocks[:, :, :2]), paddle.exp(blocks[:, :, 2:4]), F.sigmoid(blocks[:, :, 4:])]
        return {"out": paddle.concat(parts, 2).reshape([1, 14, 3, 4])}

    op = ("yolo_box_head", {"X": ["x"]}, {"Out": ("out", [1, 14, 3, 4])}, {"anchors": [10, 13, 16, 30], "class_num": 2})
    return {"feeds": feeds, "ops": [op], "reference": reference}


ADD = "fused_elemwise_add_activation"
CASES = {
    "elemwise_add_relu": _elemwise(ADD, ["elementwise_add", "relu"], [2, 3, 4], [2, 3, 4]),
    "elemwise_relu_add_axis": _elemwise(ADD, ["relu", "elementwise_add"], [2, 3, 4], [3], axis=1),
    "elemwise_add_scale_unsaved": _elemwise(ADD, ["elementwise_add", "scale"], [2, 3], [2, 3], scale=0.5, save=False),
    "elemwise_scale_add": _elemwise("fused_elemwise_activation", ["scale", "elementwise_add"], [2, 3], [3], scale=2.0),
    "elemwise_mul_scale": _elemwise("fused_elemwise_activation", ["elementwise_mul", "scale"], [2, 3], [2, 3],
                                    scale=-1.5),
    "elemwise_mul_tanh": _elemwise("fused_elemwise_activation", ["elementwise_mul", "tanh"], [2, 3, 4], [3, 4]),
    "elemwise_mul_sigmoid": _elemwise("fused_elemwise_activation", ["elementwise_mul", "sigmoid"], [2, 3], [2, 3]),
    "elemwise_tanh_add": _elemwise("fused_elemwise_activation", ["tanh", "elementwise_add"], [2, 3], [2, 3]),
    "elemwise_gelu_add": _elemwise("fused_elemwise_activation", ["gelu", "elementwise_add"], [2, 3], [2, 3],
                                   save=False),
    "squared_mat_sub": _squared_mat_sub(),
    "seqpool_concat_sum": _seqpool_concat("SUM"),
    "seqpool_concat_average": _seqpool_concat("AVERAGE"),
    "seqpool_concat_sqrt": _seqpool_concat("SQRT"),
    "self_dp_attention": _self_dp_attention(),
    "multihead_matmul_mask": _multihead_matmul([2, 2, 3, 3]),
    "multihead_matmul_batch_mask": _multihead_matmul([2, 1, 1, 3]),
    "skip_layernorm": _skip_layernorm(),
    "embedding_eltwise_layernorm": _embedding_eltwise_layernorm(),
    "fc_elementwise_layernorm_relu": _fc_elementwise_layernorm("relu"),
    "conv2d_add_act_relu": _conv2d_add_act("relu", []),
    "conv2d_add_act_split": _conv2d_add_act("identity", [1, 3]),
    "transpose_flatten_concat": _transpose_flatten_concat(),
    "embedding_fc_lstm_peepholes": _embedding_fc_lstm(True, False, False),
    "embedding_fc_lstm_initial_reverse": _embedding_fc_lstm(False, True, True),
    "attention_lstm_scalar": _attention_lstm(True, True),
    "attention_lstm_plain": _attention_lstm(False, False),
    "multi_gru_one_layer": _multi_gru(1, False, True),
    "multi_gru_two_layers_origin_mode": _multi_gru(2, True, False),
    "yolo_box_head": _yolo_box_head(),
}
