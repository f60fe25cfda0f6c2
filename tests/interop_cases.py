"""Programs with second- and third-order backwards, recomputation and eager accumulation that Paddle 3.3.1 runs
too (tools/higher_order_programs.py writes them, tools/run_in_paddle.py --higher runs them in Paddle and keeps
Paddle's numbers; tests/test_higher_order_vs_paddle.py compares gradc's). Float64, small.

Each case builds (program, feed, params, fetch): every var in fetch is a gradient the program computes.
"""

from __future__ import annotations

import numpy as np

import gradc
from deep_nets import batch_norm, fan_out, initial_values, mlp, resnet
from float64_nets import cumprod_index_put_net, float64_fc, weighted_sum
from gradc.layers import ProgramBuilder
from gradc.passes import EagerAccumulationPass, RecomputePass
from gradc.rnn_shape import RnnShape


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _params(net: ProgramBuilder, rng, scale: float = 0.6) -> dict:
    """Random parameters, and positive variances for the running statistics."""
    values = {name: rng.standard_normal(var.shape) * scale for name, var in net.block.vars.items() if var.persistable}
    return {name: np.abs(value) + 0.5 if name.endswith("Variance") else value for name, value in values.items()}


def _hessian_vector(net: ProgramBuilder, loss: str, feed: dict, rng, scale: float = 0.6):
    """The case of H v: the backward of ``loss``, random parameters, then the backward of v . grad (drawn in
    this order from ``rng``: the kept Paddle numbers depend on it). Returns the case, the parameters
    differentiated and the grads of v . grad."""
    pairs = gradc.append_backward(net.program, loss)
    params = _params(net, rng, scale)
    wrt = [p for p, _ in pairs]
    second = gradc.gradients(net.program, weighted_sum(net, [g for _, g in pairs], feed, "v", rng), wrt)
    return (net.program, feed, params, [g for _, g in pairs] + second), wrt, second


def hessian_vector_product(third: bool = False):
    """H v of a tanh / gelu / softplus MLP (and the derivative of u . H v with ``third``)."""
    rng = _rng(1)
    net = ProgramBuilder(seed=1)
    x = net.data("x", [4, 3], "float64", stop_gradient=True)
    hidden = float64_fc(net, float64_fc(net, float64_fc(net, x, 4, "tanh"), 4, "gelu"), 2, "softplus")
    loss = net.mean(net.op("elementwise_add", {"X": net.op("square", {"X": hidden})[0], "Y": hidden})[0])
    feed = {"x": rng.standard_normal((4, 3))}
    pairs = gradc.append_backward(net.program, loss)
    params = [p for p, _ in pairs]
    second = gradc.gradients(net.program, weighted_sum(net, [g for _, g in pairs], feed, "v", rng), params)
    fetch = [g for _, g in pairs] + second
    if third:
        fetch += gradc.gradients(net.program, weighted_sum(net, second, feed, "u", rng), params)
    return net.program, feed, _params(net, rng), fetch


def cnn_gradient_penalty(pool: str):
    """The gradient of sum((d loss / d image)^2) of conv + tanh + pool + fc + softmax cross entropy."""
    rng = _rng(2)
    net = ProgramBuilder(seed=2)
    image = net.data("image", [2, 1, 4, 4], "float64", stop_gradient=False)
    label = net.data("label", [2, 1], "int64")
    hidden = net.op("conv2d", {"Input": image, "Filter": net.parameter("conv.w", [2, 1, 3, 3], "float64")},
                    {"paddings": [1, 1]})[0]
    hidden = net.op("pool2d", {"X": net.op("tanh", {"X": hidden})[0]},
                    {"pooling_type": pool, "ksize": [2, 2], "strides": [2, 2]})[0]
    flat = net.op("flatten_contiguous_range", {"X": hidden}, {"start_axis": 1, "stop_axis": 3})[0]
    loss = net.cross_entropy_loss(float64_fc(net, flat, 3), label)
    gradc.gradients(net.program, loss, ["image"])
    norm = net.op("reduce_sum", {"X": net.op("square", {"X": "image@GRAD"})[0]}, {"reduce_all": True, "dim": []})[0]
    params = _params(net, rng)
    fetch = ["image@GRAD"] + gradc.gradients(net.program, norm, list(params))
    feed = {"image": rng.standard_normal((2, 1, 4, 4)), "label": np.array([[2], [0]])}
    return net.program, feed, params, fetch


def norms_second_order():
    """H v through batch_norm, layer_norm, log_softmax and softmax_with_cross_entropy."""
    rng = _rng(3)
    net = ProgramBuilder(seed=3)
    x = net.data("x", [4, 3], "float64", stop_gradient=True)
    label = net.data("label", [4, 1], "int64")
    stats = {slot: net.parameter(f"bn.{slot}", [3], "float64") for slot in ("Scale", "Bias", "Mean", "Variance")}
    for slot in ("Mean", "Variance"):
        net.block.var(stats[slot]).is_parameter = False
    hidden = batch_norm(net, float64_fc(net, x, 3), stats)
    hidden = net.op("layer_norm", {"X": net.op("sigmoid", {"X": hidden})[0],
                                   "Scale": net.parameter("ln.scale", [3], "float64"),
                                   "Bias": net.parameter("ln.bias", [3], "float64")}, outputs=["Y"])[0]
    logits = net.op("log_softmax", {"X": float64_fc(net, hidden, 3)}, {"axis": -1})[0]
    loss = net.cross_entropy_loss(logits, label)
    feed = {"x": rng.standard_normal((4, 3)), "label": np.array([[0], [2], [1], [2]])}
    return _hessian_vector(net, loss, feed, rng)[0]


def frozen_batch_norm_third_order():
    """H v and the derivative of u . H v through batch_norm with is_test (its running statistics read as
    stop_gradient copies by batch_norm_grad's maker), between a tanh layer and a sigmoid."""
    rng = _rng(11)
    net = ProgramBuilder(seed=11)
    x = net.data("x", [4, 3], "float64", stop_gradient=True)
    stats = {slot: net.parameter(f"bn.{slot}", [3], "float64") for slot in ("Scale", "Bias", "Mean", "Variance")}
    for slot in ("Mean", "Variance"):
        net.block.var(stats[slot]).is_parameter = False
    hidden = batch_norm(net, float64_fc(net, x, 3, "tanh"), stats, {"is_test": True})
    loss = net.mean(net.op("sigmoid", {"X": float64_fc(net, hidden, 2)})[0])
    feed = {"x": rng.standard_normal((4, 3))}
    (program, feed, params, fetch), wrt, second = _hessian_vector(net, loss, feed, rng)
    return program, feed, params, fetch + gradc.gradients(program, weighted_sum(net, second, feed, "u", rng), wrt)


def activations_losses_second_order():
    """H v through mish, prelu (per channel), selu, hard_swish, sigmoid cross entropy and huber loss."""
    rng = _rng(4)
    net = ProgramBuilder(seed=4)
    x = net.data("x", [4, 3], "float64", stop_gradient=True)
    label, target = net.data("label", [4, 2], "float64"), net.data("target", [4, 2], "float64")
    hidden = float64_fc(net, x, 4, "mish")
    hidden = net.op("prelu", {"X": hidden, "Alpha": net.parameter("prelu.alpha", [4], "float64")},
                    {"mode": "channel"})[0]
    hidden = net.op("hard_swish", {"X": float64_fc(net, hidden, 4, "selu")})[0]
    logits = float64_fc(net, hidden, 2)
    ce = net.op("sigmoid_cross_entropy_with_logits", {"X": logits, "Label": label})[0]
    huber = net.op("huber_loss", {"X": logits, "Y": target}, {"delta": 0.5})[0]
    loss = net.op("elementwise_add", {"X": net.mean(ce), "Y": net.mean(huber)})[0]
    feed = {"x": 2 * rng.standard_normal((4, 3)), "label": rng.uniform(0, 1, (4, 2)),
            "target": rng.standard_normal((4, 2))}
    return _hessian_vector(net, loss, feed, rng, scale=1.0)[0]


def norms_selections_second_order():
    """H v through group_norm, maxout, top_k_v2, p_norm and bilinear_tensor_product."""
    rng = _rng(5)
    net = ProgramBuilder(seed=5)
    x = net.data("x", [2, 4, 2, 2], "float64", stop_gradient=True)
    scaled = net.op("elementwise_mul", {"X": x, "Y": net.parameter("gain", [4], "float64")}, {"axis": 1})[0]
    normed = net.op("group_norm", {"X": scaled, "Scale": net.parameter("gn.scale", [4], "float64"),
                                   "Bias": net.parameter("gn.bias", [4], "float64")}, {"groups": 2})[0]
    pooled = net.op("maxout", {"X": normed}, {"groups": 2})[0]
    flat = net.op("flatten_contiguous_range", {"X": pooled}, {"start_axis": 1, "stop_axis": 3})[0]
    top = net.op("top_k_v2", {"X": float64_fc(net, flat, 6, "tanh")}, {"k": 3})[0]
    norm = net.op("p_norm", {"X": top}, {"porder": 3.0, "axis": 1})[0]
    product = net.op("bilinear_tensor_product", {"X": top, "Y": float64_fc(net, flat, 2),
                                                 "Weight": net.parameter("btp.w", [2, 3, 2], "float64")})[0]
    loss = net.op("elementwise_add", {"X": net.mean(norm), "Y": net.mean(net.op("square", {"X": product})[0])})[0]
    feed = {"x": rng.standard_normal((2, 4, 2, 2))}
    return _hessian_vector(net, loss, feed, rng, scale=1.0)[0]


def conv_losses_second_order():
    """H v through instance_norm, log_softmax with nll_loss and kldiv_loss, scatter, reduce_prod and
    hierarchical_sigmoid (not lrn:
    Paddle 3.3.1 has no float64 kernel; not spectral_norm: Paddle's first derivative is another formula)."""
    rng = _rng(6)
    net = ProgramBuilder(seed=6)
    x = net.data("x", [2, 3, 2, 2], "float64", stop_gradient=True)
    label, target = net.data("label", [2], "int64"), net.data("target", [2, 4], "float64")
    hidden = net.op("conv2d", {"Input": x, "Filter": net.parameter("conv.w", [3, 3, 1, 1], "float64")})[0]
    hidden = net.op("instance_norm", {"X": hidden, "Scale": net.parameter("in.scale", [3], "float64"),
                                      "Bias": net.parameter("in.bias", [3], "float64")})[0]
    flat = net.op("flatten_contiguous_range", {"X": hidden}, {"start_axis": 1, "stop_axis": 3})[0]
    ids = net.data("ids", [2], "int64")
    logits = net.op("scatter", {"X": float64_fc(net, flat, 4), "Ids": ids, "Updates": float64_fc(net, flat, 4)},
                    {"overwrite": False})[0]
    scores = net.op("log_softmax", {"X": logits}, {"axis": -1})[0]
    nll = net.op("nll_loss", {"X": scores, "Label": label})[0]
    kl = net.op("kldiv_loss", {"X": scores, "Target": target}, {"reduction": "batchmean"})[0]
    product = net.op("reduce_prod", {"X": float64_fc(net, flat, 3, "tanh")}, {"dim": [1]})[0]
    tree = net.op("hierarchical_sigmoid", {"X": float64_fc(net, flat, 3), "W": net.parameter("hs.w", [5, 3], "float64"),
                                           "Label": label, "Bias": net.parameter("hs.b", [5, 1], "float64")},
                  {"num_classes": 6})[0]
    net.block.create_var("hs.pre_out", [2, 3], gradc.VarType.FP64)   # PreOut's steps are not inferred
    net.block.ops[-1].outputs["PreOut"] = ["hs.pre_out"]
    loss = net.op("sum", {"X": [nll, kl, net.mean(product), net.mean(tree)]})[0]
    feed = {"x": rng.standard_normal((2, 3, 2, 2)), "label": np.array([3, 1]), "target": rng.dirichlet(np.ones(4), 2),
            "ids": np.array([1, 1])}
    return _hessian_vector(net, loss, feed, rng, scale=1.0)[0]


def cumprod_index_put_third_order():
    """H v and the derivative of u . H v of float64_nets.cumprod_index_put_net (index_put accumulating)."""
    rng = _rng(5)
    net = ProgramBuilder(seed=5)
    loss, feed = cumprod_index_put_net(net, True, rng)
    wrt = ["x", "b", "v"]
    first = gradc.gradients(net.program, loss, wrt)
    second = gradc.gradients(net.program, weighted_sum(net, first, feed, "v", rng), wrt)
    third = gradc.gradients(net.program, weighted_sum(net, second, feed, "u", rng), wrt)
    return net.program, feed, {"b": rng.standard_normal(4), "v": rng.standard_normal(4)}, first + second + third


def rnn_second_order(mode: str, layers: int, bidirec: bool, lengths=None, third: bool = False):
    """H v (and with ``third`` the derivative of u . H v) through the fused rnn op, which rnn_grad's maker unrolls
    (Paddle runs the unrolled ops and its own rnn and rnn_grad kernels): rnn over x [3, 2, 3], tanh of a dense
    layer, mean(y^2 + y). The initial states are trainable, but zeros with SequenceLength: Paddle's rnn_grad is
    wrong for a reverse direction with lengths from nonzero ones (docs/rnn.md section 6)."""
    rng = _rng(7)
    net = ProgramBuilder(seed=7)
    shape = RnnShape(mode, layers, 2 if bidirec else 1, 3, 2)
    x = net.data("x", [3, 2, 3], "float64", stop_gradient=True)
    dims = [shape.num_layers * shape.directions, 2, 2]
    states = [net.parameter(f"rnn.h{k}", dims, "float64") if lengths is None else net.data(f"h{k}", dims, "float64")
              for k in range(shape.states)]
    weights = [net.parameter(f"rnn.w_{k}", list(w), "float64") for k, w in enumerate(shape.weight_shapes())]
    inputs = {"Input": x, "PreState": states, "WeightList": weights}
    feed = {"x": rng.standard_normal((3, 2, 3))}
    if lengths is not None:
        inputs["SequenceLength"] = net.data("lengths", [2], "int64")
        feed.update({"lengths": np.array(lengths, np.int64), **{h: np.zeros(dims) for h in states}})
    out = net.op("rnn", inputs, {"mode": mode, "num_layers": layers, "is_bidirec": bidirec, "input_size": 3,
                                 "hidden_size": 2})[0]
    hidden = net.op("matmul_v2", {"X": out, "Y": net.parameter("fc.w", [shape.directions * 2, 2], "float64")})[0]
    y = net.op("tanh", {"X": hidden})[0]
    loss = net.mean(net.op("elementwise_add", {"X": net.op("square", {"X": y})[0], "Y": y})[0])
    (program, feed, params, fetch), wrt, second = _hessian_vector(net, loss, feed, rng)
    if third:
        fetch += gradc.gradients(net.program, weighted_sum(net, second, feed, "u", rng), wrt)
    return program, feed, params, fetch


def sequence_loss_second_order(loss_type: str):
    """H v through a sequence loss, whose grad op's maker unrolls the loss (Paddle runs the unrolled ops and its
    own loss and first-order grad kernels): a tanh dense layer and a dense layer over features, then warpctc
    (repeated labels, unequal lengths, norm_by_times) or log_softmax and warprnnt (fastemit_lambda), mean loss."""
    rng = _rng(11)
    net = ProgramBuilder(seed=11)
    ctc = loss_type == "warpctc"
    dims = [4, 2, 3] if ctc else [2, 3, 3, 3]   # [T, B, F] for CTC, [B, T, U + 1, F] for RNN-T
    x = net.data("x", dims, "float64", stop_gradient=True)
    hidden = net.op("tanh", {"X": net.op("matmul_v2", {"X": x, "Y": net.parameter("fc.w", [3, 3], "float64")})[0]})[0]
    logits = net.op("matmul_v2", {"X": hidden, "Y": net.parameter("out.w", [3, 4], "float64")})[0]
    feed = {"x": rng.standard_normal(dims), "label": np.array([[1, 1], [3, 2]], np.int32)}
    label = net.data("label", [2, 2], "int32")
    if ctc:
        feed.update(times=np.array([4, 3], np.int64), sizes=np.array([2, 1], np.int64))
        inputs = {"Logits": logits, "Label": label, "LogitsLength": net.data("times", [2], "int64"),
                  "LabelLength": net.data("sizes", [2], "int64")}
        attrs = {"blank": 0, "norm_by_times": True}
    else:
        feed.update(times=np.array([3, 2], np.int32), sizes=np.array([2, 1], np.int32))
        inputs = {"input": net.op("log_softmax", {"X": logits}, {"axis": -1})[0], "label": label,
                  "input_lengths": net.data("times", [2], "int32"), "label_lengths": net.data("sizes", [2], "int32")}
        attrs = {"blank": 0, "fastemit_lambda": 0.25}
    loss = net.mean(net.op(loss_type, inputs, attrs)[0])
    return _hessian_vector(net, loss, feed, rng, scale=1.0)[0]


def run_time_sizes_second_order():
    """H v through ops whose second-derivative makers build size-dependent parts from run-time shapes: an image of
    size -1 (batch and spatial dims), conv2d, max pool2d with SAME paddings (its pads computed in the program),
    tanh, logsumexp and frobenius_norm."""
    rng = _rng(13)
    net = ProgramBuilder(seed=13)
    image = net.data("image", [-1, 1, -1, -1], "float64", stop_gradient=True)
    hidden = net.op("conv2d", {"Input": image, "Filter": net.parameter("conv.w", [2, 1, 3, 3], "float64")},
                    {"paddings": [1, 1]})[0]
    pooled = net.op("pool2d", {"X": hidden}, {"pooling_type": "max", "ksize": [3, 2], "strides": [2, 2],
                                              "padding_algorithm": "SAME"})[0]
    y = net.op("tanh", {"X": pooled})[0]
    spread = net.op("logsumexp", {"X": y}, {"axis": [-1], "keepdim": False})[0]
    norm = net.op("frobenius_norm", {"X": y}, {"dim": [1], "keep_dim": False})[0]
    loss = net.op("elementwise_add", {"X": net.mean(net.op("square", {"X": spread})[0]), "Y": net.mean(norm)})[0]
    feed = {"image": rng.standard_normal((2, 1, 5, 4))}
    return _hessian_vector(net, loss, feed, rng, scale=1.0)[0]


def decompositions_run_time_sizes():
    """H v and the derivative of u . H v through qr, lu and the full svd of matrices whose batch and row counts are
    declared -1: the makers choose the K = min(M, N) columns with selection matrices and sum the solves' broadcast
    batch dims with reduce_as (Paddle has no second derivative of these: it runs gradc's ops)."""
    rng = _rng(17)
    net = ProgramBuilder(seed=17)
    x = net.data("x", [-1, -1, 3], "float64", stop_gradient=True)
    y = net.op("matmul_v2", {"X": x, "Y": net.parameter("mix.w", [3, 3], "float64")})[0]
    r = net.op("qr", {"X": y}, outputs=["R"])[0]
    packed = net.op("lu", {"X": y}, outputs=["Out"])[0]
    u = net.op("svd", {"X": y}, {"full_matrices": True}, outputs=["U"])[0]
    terms = [net.mean(net.op("sin", {"X": v})[0]) for v in (r, packed, net.op("square", {"X": u})[0])]
    loss = net.op("elementwise_add", {"X": net.op("elementwise_add", {"X": terms[0], "Y": terms[1]})[0],
                                      "Y": terms[2]})[0]
    feed = {"x": rng.standard_normal((2, 4, 3))}
    (program, feed, params, fetch), wrt, second = _hessian_vector(net, loss, feed, rng)
    return program, feed, params, fetch + gradc.gradients(program, weighted_sum(net, second, feed, "u", rng), wrt)


def _real_weighted_sum(net: ProgramBuilder, names: list[str], feed: dict, prefix: str, rng) -> str:
    """Re(sum over ``names`` of sum(W * var)), each W a complex constant drawn into ``feed`` (Paddle's CPU build has
    no imag kernel, so the loss takes the real part only)."""
    terms = []
    for name in names:
        shape = net.block.var(name).shape
        weight = net.data(f"{prefix}.{name}", shape, "complex128", stop_gradient=True)
        feed[weight] = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        total = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": name, "Y": weight})[0]},
                       {"reduce_all": True, "dim": []})[0]
        terms.append(net.op("real", {"X": total})[0])
    return net.op("sum", {"X": terms})[0]


def complex_cumprod_third_order():
    """Three backwards through cumprod of complex x along a dim of known size: its grads written as the scan of
    products, slices and pads, whose grads conjugate (Paddle runs that program; it has no complex reduce_prod kernel
    on CPU: "There are no kernels which are registered in the reduce_prod operator")."""
    rng = _rng(7)
    net = ProgramBuilder(seed=7)
    x = net.data("x", [2, 3], "complex128", stop_gradient=False)
    feed = {"x": rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))}
    loss = _real_weighted_sum(net, [net.op("cumprod", {"X": x}, {"dim": 1})[0]], feed, "w", rng)
    first = gradc.gradients(net.program, loss, ["x"])
    second = gradc.gradients(net.program, _real_weighted_sum(net, first, feed, "v", rng), ["x"])
    third = gradc.gradients(net.program, _real_weighted_sum(net, second, feed, "u", rng), ["x"])
    return net.program, feed, {}, first + second + third


def _with(build, transform):
    net, loss, feed = build
    pairs = gradc.append_backward(net.program, loss)
    transform(net.program)
    return net.program, feed, initial_values(net), [loss] + [g for _, g in pairs]


CASES = {
    "hvp_mlp": lambda: hessian_vector_product(),
    "third_order_mlp": lambda: hessian_vector_product(third=True),
    "penalty_cnn_avg": lambda: cnn_gradient_penalty("avg"),
    "penalty_cnn_max": lambda: cnn_gradient_penalty("max"),
    "hvp_norms": norms_second_order,
    "hvp_activations_losses": activations_losses_second_order,
    "hvp_norms_selections": norms_selections_second_order,
    "hvp_conv_losses": conv_losses_second_order,
    "third_order_cumprod_index_put": cumprod_index_put_third_order,
    "third_order_complex_cumprod": complex_cumprod_third_order,
    "third_order_frozen_batch_norm": frozen_batch_norm_third_order,
    "hvp_lstm": lambda: rnn_second_order("LSTM", 2, True),
    "hvp_gru_lengths": lambda: rnn_second_order("GRU", 1, True, [3, 1]),
    "hvp_simple_rnn": lambda: rnn_second_order("RNN_TANH", 1, False),
    "third_order_lstm": lambda: rnn_second_order("LSTM", 1, False, third=True),
    "hvp_ctc": lambda: sequence_loss_second_order("warpctc"),
    "hvp_rnnt": lambda: sequence_loss_second_order("warprnnt"),
    "hvp_run_time_sizes": run_time_sizes_second_order,
    "third_order_decompositions_run_time_sizes": decompositions_run_time_sizes,
    "recompute_mlp": lambda: _with(mlp(layers=8, width=4, batch=3, dtype="float64"), RecomputePass("auto")),
    "recompute_resnet": lambda: _with(resnet(blocks=2, channels=2, size=4, batch=2, dtype="float64"),
                                      RecomputePass("auto")),
    "eager_fan_out": lambda: _with(fan_out(readers=6, width=3, batch=2, dtype="float64"), EagerAccumulationPass()),
}
