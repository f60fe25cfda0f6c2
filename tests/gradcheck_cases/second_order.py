"""Cases for the grad ops that have makers of their own (second derivatives), each checked through a whole
program: the forward op, loss1 = sum(W1 * outputs), its backward, then loss2 = sum(W2 * the input grads).
check_program differentiates loss2 (a second backward over the first) with respect to the forward inputs and
W1 (the grad op's dOut), against central differences of the program's own loss2. So the grad op's maker is
checked together with how the forward values it reads (Out, saved statistics) move with the inputs.
"""

from __future__ import annotations

import zlib

import numpy as np

import gradc
from gradc import registry
from gradc.ir import COMPLEX_DTYPES, DIFFERENTIABLE_DTYPES, real_dtype, to_var_type

from . import Case, rng

r = rng(41)


def randn(*shape, scale=1.0):
    return scale * r.standard_normal(shape)


def positive(*shape):
    return r.uniform(0.5, 2.0, shape)


def away(*shape, gap=0.2):
    """Normal values at least ``gap`` from 0 (where relu-like grads jump)."""
    x = r.standard_normal(shape)
    return np.where(np.abs(x) < gap, np.sign(x) * gap + x, x)


def distinct(*shape):
    """Values 0.1 apart in random order: max and min have no ties."""
    return r.permutation(int(np.prod(shape))).reshape(shape) / 10.0 - 0.05 * np.prod(shape)


def ties(*shape):
    """Values from {-0.5, 0, 0.5}: max and min tie often."""
    return r.integers(-1, 2, shape) / 2.0


def _declare(block, name: str, value: np.ndarray, differentiable: bool) -> None:
    var = block.create_var(name, list(np.shape(value)), to_var_type(np.asarray(value).dtype))
    var.stop_gradient = not differentiable


def _parts(block, names: list[str]) -> list[str]:
    """``names`` with each complex var replaced by its real and imaginary parts (real and imag ops)."""
    parts = []
    for name in names:
        var = block.var(name)
        if var.dtype not in COMPLEX_DTYPES:
            parts.append(name)
            continue
        for op in ("real", "imag"):
            parts.append(block.create_var(f"{name}.{op}", list(var.shape), real_dtype(var.dtype)).name)
            block.append_op(op, {"X": [name]}, {"Out": [parts[-1]]})
    return parts


def _weighted_sum(block, names: list[str], feed: dict, prefix: str, differentiable: bool, loss: str,
                  draws: np.random.Generator = r) -> list[str]:
    """loss = sum over ``names`` of sum(W * var) (of a complex var: of its real and imaginary parts, each with its
    W), each W a fed random input drawn from ``draws``; returns the Ws."""
    weights, terms = [], []
    names = _parts(block, names)
    for name in names:
        var = block.var(name)
        w, product, term = f"{prefix}_{name}", f"{prefix}_{name}.product", f"{prefix}_{name}.sum"
        feed[w] = draws.standard_normal(var.shape)
        _declare(block, w, feed[w], differentiable)
        block.create_var(product, list(var.shape), var.dtype)
        block.create_var(term, [], var.dtype)
        block.append_op("elementwise_mul", {"X": [name], "Y": [w]}, {"Out": [product]})
        block.append_op("reduce_sum", {"X": [product]}, {"Out": [term]}, {"reduce_all": True})
        weights.append(w)
        terms.append(term)
    block.create_var(loss, [], block.var(names[0]).dtype)
    block.append_op("sum", {"X": terms}, {"Out": [loss]})
    return weights


def second_order(op: str, inputs: dict, attrs: dict | None = None, counts: dict | None = None,
                 wrt: list[str] | None = None, tied: bool = False, grad_type: str | None = None,
                 unknown: dict | None = None, **tolerances) -> Case:
    """The case of ``op``'s grad op (``grad_type``, for a maker of its own that names none); ``counts``: vars of list
    output slots; ``wrt``: the input slots to check (default: every float one). ``tied``: inputs with ties, where
    the grad op is smooth in its output grads only (linear) and only they are checked. ``unknown``: {slot: the dims
    of its vars (an input's or an output's) declared -1 (known at run time only), or None for a rank unknown too}."""
    opdef = registry.get(op)
    attrs = dict(attrs or {})

    def build() -> dict:
        program = gradc.Program()
        block = program.global_block
        feed, slots = {}, {}
        for slot, value in inputs.items():
            slots[slot] = []
            for i, array in enumerate(value if isinstance(value, list) else [value]):
                name = f"{slot}{i}"
                value = array.array if isinstance(array, gradc.LoDTensor) else np.asarray(array)
                feed[name] = array if isinstance(array, gradc.LoDTensor) else value   # a LoDTensor keeps its LoD
                floating = to_var_type(value.dtype) in DIFFERENTIABLE_DTYPES and slot not in opdef.no_grad_inputs
                _declare(block, name, value, floating and (wrt is None or slot in wrt))
                slots[slot].append(name)
        outs = {slot: [f"{slot}{i}.out" for i in range((counts or {}).get(slot, 1))] for slot in opdef.outputs}
        for names in outs.values():
            for name in names:
                block.create_var(name, None, None)
        block.append_op(op, slots, outs, attrs)
        values = gradc.Executor().run(program, feed, [n for names in outs.values() for n in names], gradc.Scope())
        for name, value in zip([n for names in outs.values() for n in names], values):
            var = block.var(name)
            var.shape, var.dtype = list(np.shape(value)), to_var_type(np.asarray(value).dtype)
        differentiable = [n for slot, names in outs.items() if slot not in opdef.no_grad_outputs for n in names
                          if block.var(n).dtype in DIFFERENTIABLE_DTYPES]
        draws = rng(zlib.crc32(f"{op} {sorted(attrs.items())}".encode()))   # the same Ws whichever case ran before
        seeds = _weighted_sum(block, differentiable, feed, "w1", True, "loss1", draws)
        gradc.append_backward(program, "loss1")
        grads = [n + "@GRAD" for names in slots.values() for n in names if block.find_var(n + "@GRAD") is not None]
        _weighted_sum(block, grads, feed, "w2", False, "loss2", draws)
        checked = [n[: -len("@GRAD")] for n in grads]
        for slot, dims in (unknown or {}).items():   # after the ws are drawn in their run-time shapes
            names = slots.get(slot, outs.get(slot))
            for var in (block.find_var(n + suffix) for n in names for suffix in ("", "@GRAD")):
                if var is not None:
                    rank = len(var.shape)
                    var.shape = None if dims is None else [-1 if i in dims or i - rank in dims else d
                                                           for i, d in enumerate(var.shape)]
        return {"program": program, "feed": feed, "wrt": seeds if tied else checked + seeds, "loss": "loss2"}

    return Case(grad_type or opdef.grad.type_for(opdef), {}, attrs, program=build, **tolerances)


def _bn(shape, channels):
    return {"X": randn(*shape), "Scale": randn(channels), "Bias": randn(channels),
            "Mean": randn(channels), "Variance": positive(channels)}


CASES = [
    # arithmetic
    second_order("elementwise_add", {"X": randn(2, 3), "Y": randn(2, 3)}),
    second_order("elementwise_add", {"X": randn(2, 3, 2), "Y": randn(3)}, {"axis": 1}),
    second_order("elementwise_sub", {"X": randn(2, 3), "Y": randn(3)}),
    second_order("elementwise_sub", {"X": randn(3), "Y": randn(2, 3, 2)}, {"axis": 1}),
    second_order("elementwise_mul", {"X": randn(2, 3), "Y": randn(2, 3)}),
    second_order("elementwise_mul", {"X": randn(2, 3, 2), "Y": randn(3)}, {"axis": 1}),
    second_order("elementwise_div", {"X": randn(2, 3), "Y": positive(2, 3)}),
    second_order("elementwise_div", {"X": randn(2, 3, 2), "Y": positive(3, 1)}, {"axis": 1}),
    second_order("elementwise_pow", {"X": positive(2, 3), "Y": randn(2, 3)}),
    second_order("elementwise_pow", {"X": positive(2, 3, 2), "Y": randn(3)}, {"axis": 1}),
    second_order("elementwise_max", {"X": distinct(2, 3), "Y": distinct(2, 3) + 0.037}),
    second_order("elementwise_max", {"X": distinct(2, 3, 2), "Y": distinct(3) + 0.037}, {"axis": 1}),
    second_order("elementwise_min", {"X": distinct(2, 3), "Y": distinct(3) + 0.037}),
    second_order("where", {"Condition": r.random((2, 3)) > 0.5, "X": randn(2, 3), "Y": randn(3)}),
    second_order("mul", {"X": randn(2, 3), "Y": randn(3, 4)}),
    second_order("mul", {"X": randn(2, 2, 3), "Y": randn(6, 2)}, {"x_num_col_dims": 1}),
    second_order("matmul_v2", {"X": randn(2, 3), "Y": randn(3, 2)}),
    second_order("matmul_v2", {"X": randn(2, 1, 3, 2), "Y": randn(3, 3, 4)}, {"trans_x": True}),
    second_order("matmul_v2", {"X": randn(3), "Y": randn(2, 4, 3)}, {"trans_y": True}),
    second_order("matmul", {"X": randn(2, 3), "Y": randn(2, 3)}, {"transpose_Y": True, "alpha": 1.5}),
    second_order("bmm", {"X": randn(2, 2, 3), "Y": randn(2, 3, 2)}),
    second_order("mean", {"X": randn(2, 3)}),
    second_order("reduce_sum", {"X": randn(2, 3, 2)}, {"dim": [1], "keep_dim": True}),
    second_order("reduce_mean", {"X": randn(2, 3, 2)}, {"dim": [0, 2]}),
    second_order("reduce_mean", {"X": randn(2, 3)}, {"reduce_all": True}),
    second_order("reduce_max", {"X": distinct(2, 3, 2)}, {"dim": [1]}),
    second_order("reduce_min", {"X": distinct(2, 3)}, {"dim": [-1], "keep_dim": True}),
    second_order("reduce_amax", {"X": distinct(2, 3, 2)}, {"dim": [0, 2]}),
    second_order("reduce_amin", {"X": distinct(3, 2)}, {"reduce_all": True}),
    # activations
    second_order("tanh", {"X": randn(2, 3)}),
    second_order("sigmoid", {"X": randn(2, 3)}),
    second_order("leaky_relu", {"X": away(2, 3)}, {"alpha": 0.1}),
    second_order("abs", {"X": away(2, 3)}),
    second_order("elu", {"X": away(2, 3)}, {"alpha": 0.7}),
    second_order("gelu", {"X": randn(2, 3, scale=2)}),
    second_order("gelu", {"X": randn(2, 3, scale=2)}, {"approximate": True}),
    second_order("softplus", {"X": randn(2, 3, scale=2)}),
    second_order("softplus", {"X": np.array([[-3.0, -1.2, 0.4], [1.1, 2.5, 4.0]])}, {"beta": 2.0, "threshold": 3.0}),
    second_order("silu", {"X": randn(2, 3, scale=2)}),
    second_order("swish", {"X": randn(2, 3, scale=2)}, {"beta": 1.5}),
    second_order("logsigmoid", {"X": randn(2, 3, scale=2)}),
    second_order("softsign", {"X": away(2, 3)}),
    second_order("tanh_shrink", {"X": randn(2, 3)}),
    second_order("square", {"X": randn(2, 3)}),
    second_order("sqrt", {"X": positive(2, 3)}),
    second_order("rsqrt", {"X": positive(2, 3)}),
    second_order("exp", {"X": randn(2, 3)}),
    second_order("log", {"X": positive(2, 3)}),
    second_order("pow", {"X": positive(2, 3)}, {"factor": 3.0}),
    second_order("pow", {"X": positive(2, 3), "FactorTensor": np.array([2.5])}),
    second_order("softmax", {"X": randn(2, 3)}),
    second_order("softmax", {"X": randn(2, 3, 2)}, {"axis": 1}),
    second_order("log_softmax", {"X": randn(2, 3)}),
    second_order("log_softmax", {"X": randn(2, 3, 2)}, {"axis": 0}),
    # networks
    second_order("softmax_with_cross_entropy", {"Logits": randn(3, 4), "Label": np.array([[1], [-100], [3]])}),
    second_order("softmax_with_cross_entropy", {"Logits": randn(2, 3, 2), "Label": r.dirichlet(np.ones(3), (2, 2))
                                                .transpose(0, 2, 1)}, {"soft_label": True, "axis": 1}),
    second_order("softmax_with_cross_entropy", {"Logits": r.dirichlet(np.ones(3), 2), "Label": np.array([[0], [2]])},
                 {"use_softmax": False}),
    second_order("conv2d", {"Input": randn(1, 2, 4, 4), "Filter": randn(2, 2, 3, 3)}, {"paddings": [1, 1]}),
    second_order("conv2d", {"Input": randn(1, 3, 3, 4), "Filter": randn(4, 2, 2, 2)},
                 {"groups": 2, "strides": [2, 1], "data_format": "NHWC"}),
    second_order("depthwise_conv2d", {"Input": randn(1, 2, 3, 3), "Filter": randn(2, 1, 2, 2)}, {"groups": 2}),
    second_order("conv2d_transpose", {"Input": randn(1, 2, 2, 2), "Filter": randn(2, 1, 2, 2)}, {"strides": [2, 2]}),
    second_order("depthwise_conv2d_transpose", {"Input": randn(1, 2, 2, 2), "Filter": randn(2, 1, 2, 2)},
                 {"groups": 2}),
    second_order("conv3d", {"Input": randn(1, 1, 2, 3, 3), "Filter": randn(2, 1, 1, 2, 2)}),
    second_order("conv3d_transpose", {"Input": randn(1, 2, 2, 2, 1), "Filter": randn(2, 1, 2, 1, 1)}),
    second_order("pool2d", {"X": randn(1, 2, 4, 4)}, {"pooling_type": "avg", "ksize": [2, 2], "strides": [2, 2]}),
    second_order("pool2d", {"X": randn(1, 1, 3, 3)}, {"pooling_type": "avg", "ksize": [2, 2], "paddings": [1, 1],
                                                      "exclusive": False}),
    second_order("pool2d", {"X": distinct(1, 2, 4, 4)}, {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2]}),
    second_order("pool2d", {"X": distinct(1, 1, 3, 3)}, {"pooling_type": "max", "ksize": [2, 2], "paddings": [1, 1]}),
    second_order("pool3d", {"X": randn(1, 1, 2, 2, 2)}, {"pooling_type": "avg", "ksize": [2, 2, 2]}),
    second_order("batch_norm", _bn((3, 2, 2), 2)),
    second_order("batch_norm", _bn((2, 2, 3), 3), {"data_layout": "NHWC", "epsilon": 1e-3}),
    second_order("batch_norm", _bn((2, 3), 3), {"is_test": True}),
    second_order("batch_norm", _bn((2, 2, 2), 2), {"use_global_stats": True}),
    second_order("batch_norm", {"X": randn(3, 2), "Mean": randn(2), "Variance": positive(2)}),
    second_order("layer_norm", {"X": randn(2, 4), "Scale": randn(4), "Bias": randn(4)}),
    second_order("layer_norm", {"X": randn(2, 2, 3), "Scale": randn(6), "Bias": randn(6)}, {"epsilon": 1e-3}),
    second_order("layer_norm", {"X": randn(2, 2, 3)}, {"begin_norm_axis": 2}),
    second_order("dropout", {"X": randn(2, 3)}, {"dropout_prob": 0.5, "fix_seed": True, "seed": 3}),
    second_order("dropout", {"X": randn(2, 3)}, {"dropout_prob": 0.3, "fix_seed": True, "seed": 5,
                                                 "dropout_implementation": "upscale_in_train"}),
    # moving data
    second_order("reshape2", {"X": randn(2, 3)}, {"shape": [3, -1]}),
    second_order("transpose2", {"X": randn(2, 3, 2)}, {"axis": [2, 0, 1]}),
    second_order("squeeze2", {"X": randn(2, 1, 3)}, {"axes": [1]}),
    second_order("unsqueeze2", {"X": randn(2, 3)}, {"axes": [0, 2]}),
    second_order("flatten_contiguous_range", {"X": randn(2, 3, 2)}, {"start_axis": 1, "stop_axis": 2}),
    second_order("concat", {"X": [randn(2, 3), randn(2, 1)]}, {"axis": 1}),
    second_order("stack", {"X": [randn(2, 3), randn(2, 3)]}, {"axis": 1}),
    second_order("unstack", {"X": randn(2, 3)}, {"axis": 0}, counts={"Y": 2}),
    second_order("slice", {"Input": randn(3, 4)}, {"axes": [0, 1], "starts": [1, 0], "ends": [3, 3]}),
    second_order("slice", {"Input": randn(3, 4)}, {"axes": [1], "starts": [-2], "ends": [4], "decrease_axis": [1]}),
    second_order("strided_slice", {"Input": randn(4, 3)}, {"axes": [0], "starts": [0], "ends": [4], "strides": [2]}),
    second_order("gather", {"X": randn(4, 2), "Index": np.array([3, 0, 3])}),
    second_order("gather", {"X": randn(2, 3), "Index": np.array([2, 1])}, {"axis": 1}),
    second_order("gather_nd", {"X": randn(3, 2), "Index": np.array([[2], [0]])}),
    second_order("take_along_axis", {"Input": randn(2, 3), "Index": np.array([[2, 0, 2], [1, 1, 0]])}, {"Axis": 1}),
    second_order("index_select", {"X": randn(2, 3), "Index": np.array([1, 1, 0])}, {"dim": 1}),
    second_order("expand_v2", {"X": randn(3, 1)}, {"shape": [2, 3, 2]}),
    second_order("pad", {"X": randn(2, 3)}, {"paddings": [1, 0, 0, 2], "pad_value": 1.5}),
    second_order("pad3d", {"X": randn(1, 1, 2, 2, 3)}, {"paddings": [1, 0, 0, 1, 1, 1], "mode": "reflect"}),
    second_order("pad3d", {"X": randn(1, 1, 1, 2, 2)}, {"paddings": [1, 1, 0, 0, 0, 0], "value": 2.0}),
    second_order("roll", {"X": randn(3, 4)}, {"shifts": [1, -2], "axis": [0, 1]}),
    second_order("tril_triu", {"X": randn(3, 4)}, {"lower": False, "diagonal": 1}),
    second_order("cumsum", {"X": randn(2, 3)}, {"axis": 1, "exclusive": True, "reverse": True}),
    second_order("diag_v2", {"X": randn(3)}, {"offset": -1, "padding_value": 0.5}),
    second_order("diag_v2", {"X": randn(3, 4)}, {"offset": 1}),
    second_order("pixel_shuffle", {"X": randn(1, 4, 2, 1)}, {"upscale_factor": 2}),
    second_order("pixel_unshuffle", {"X": randn(1, 1, 2, 4)}, {"downscale_factor": 2}),
    second_order("channel_shuffle", {"X": randn(1, 4, 1, 2)}, {"groups": 2}),
    second_order("index_sample", {"X": randn(2, 4), "Index": np.array([[0, 3], [1, 1]])}),
    second_order("masked_select", {"X": randn(3, 4), "Mask": r.uniform(size=(3, 4)) > 0.4}),
    second_order("repeat_interleave", {"X": randn(2, 3)}, {"Repeats": 2, "dim": 1}),
    second_order("unfold", {"X": randn(1, 1, 3, 3)}, {"kernel_sizes": [2, 2], "strides": [1, 1],
                                                      "paddings": [0, 0, 0, 0], "dilations": [1, 1]}),
    second_order("fold", {"X": randn(1, 4, 4)}, {"output_sizes": [3, 3], "kernel_sizes": [2, 2], "strides": [1, 1],
                                                 "paddings": [0, 0, 0, 0], "dilations": [1, 1]}),
    second_order("lookup_table_v2", {"W": randn(4, 3), "Ids": np.array([[0, 3], [2, 0]])}, {"padding_idx": 2}),
    second_order("bilinear_interp_v2", {"X": randn(1, 1, 2, 3)}, {"out_h": 3, "out_w": 4, "interp_method": "bilinear"}),
    second_order("nearest_interp_v2", {"X": randn(1, 1, 2, 2)}, {"out_h": 4, "out_w": 3, "interp_method": "nearest"}),
    second_order("linear_interp_v2", {"X": randn(1, 2, 3)}, {"out_w": 5, "interp_method": "linear",
                                                            "align_corners": False, "align_mode": 0}),
    second_order("trilinear_interp_v2", {"X": randn(1, 1, 2, 2, 2)}, {"out_d": 3, "out_h": 2, "out_w": 3,
                                                                     "interp_method": "trilinear"}),
    second_order("bicubic_interp_v2", {"X": randn(1, 1, 3, 3)}, {"out_h": 4, "out_w": 4, "interp_method": "bicubic",
                                                                "align_corners": True}),
    second_order("max_pool2d_with_index", {"X": distinct(1, 2, 4, 4)}, {"ksize": [2, 2], "strides": [2, 2]}, wrt=["X"]),
    second_order("brelu", {"X": np.array([[-3.0, -0.5, 0.5], [2.0, 5.0, 30.0]])}, {"t_min": 0.0, "t_max": 24.0}),
    second_order("relu6", {"X": np.array([[-3.0, -0.5, 0.5], [2.0, 5.0, 30.0]])}),
    second_order("hard_shrink", {"X": np.array([[-3.0, -0.2, 0.3], [0.7, 5.0, -0.8]])}),
    second_order("softshrink", {"X": np.array([[-3.0, -0.2, 0.3], [0.7, 5.0, -0.8]])}),
    second_order("thresholded_relu", {"X": np.array([[-3.0, 0.5, 1.5], [2.0, 0.9, 3.0]])}),
    second_order("hard_sigmoid", {"X": np.array([[-3.0, -0.5, 0.5], [2.0, 5.0, 1.0]])}),
    second_order("clip", {"X": np.array([[-3.0, -0.2, 0.3], [0.7, 5.0, -0.8]])}, {"min": -0.5, "max": 0.6}),
    second_order("tile", {"X": randn(2, 1)}, {"repeat_times": [2, 3]}),
    second_order("lookup_table", {"W": randn(4, 3), "Ids": np.array([[0], [3], [2], [3]])}, {"padding_idx": 2}),
    # ties share dOut (halves between operands, evenly among a reduction's extremes): linear in dOut there too
    second_order("elementwise_max", {"X": ties(2, 3), "Y": ties(2, 3)}, tied=True),
    second_order("elementwise_min", {"X": ties(2, 3, 2), "Y": ties(3)}, {"axis": 1}, tied=True),
    second_order("reduce_max", {"X": ties(3, 4)}, {"dim": [1]}, tied=True),
    second_order("reduce_amin", {"X": ties(2, 3, 2)}, {"reduce_all": True}, tied=True),
    second_order("logsumexp", {"X": randn(2, 3, 2)}, {"axis": [1]}),
    second_order("logsumexp", {"X": randn(3, 2)}, {"axis": [0, 1], "keepdim": True}),
]
