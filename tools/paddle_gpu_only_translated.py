"""PIR programs of Paddle 3.3.1's GPU-only fused ops whose Python API cannot build a program on a machine without a
GPU (PIR mode checks the op's kernel dtypes and finds no kernel; legacy mode infers shapes through the missing
kernel): each case writes the legacy ops (forward and grad op) straight into a legacy ProgramDesc, declaring the
output shapes itself, and lets Paddle's translator (paddle.pir.translate_to_pir_with_param_map) name the PIR ops,
operands, results and attributes. Written as tests/data/paddle/pir_gpu_only/<case>/program.json fetching each
case's outputs, with feed.npz (inputs drawn here) and meta.json, and for a case whose layer Paddle can compose of
ops it runs on CPU (fused_multi_transformer), expected.npz with Paddle's numbers of that composition;
tests/test_fused_llm.py and its neighbours run them against the CUDA kernels' formulas. Not part of the package:
it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_gpu_only_translated.py [case ...]
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import paddle
from paddle.base import core

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "pir_gpu_only"
F32 = "float32"


def _rope(neox: bool, time_major: bool, k: bool, positions: bool, tables: bool) -> dict:
    """q (and k) through fused_rotary_position_embedding, and fed out grads back through its grad op."""
    shape, k_shape = ([3, 2, 2, 4], [3, 2, 1, 4]) if time_major else ([2, 3, 2, 4], [2, 3, 1, 4])
    feeds = {"q": (shape, F32), "dout_q": (shape, F32)}
    ins, grad_ins = {"q": ["q"]}, {"out_q@GRAD": ["dout_q"]}
    outs, grad_outs = {"out_q": ("out_q", shape)}, {"q@GRAD": ("q@GRAD", shape)}
    if k:
        feeds |= {"k": (k_shape, F32), "dout_k": (k_shape, F32)}
        ins["k"], grad_ins["out_k@GRAD"] = ["k"], ["dout_k"]
        outs["out_k"], grad_outs["k@GRAD"] = ("out_k", k_shape), ("k@GRAD", k_shape)
    if tables:
        rows = 5 if positions else 3
        feeds |= {"sin": ([1, rows, 1, 4], F32), "cos": ([1, rows, 1, 4], F32)}
        for slots in (ins, grad_ins):
            slots |= {"sin": ["sin"], "cos": ["cos"]}
    if positions:
        feeds["position_ids"] = ([2, 3], "int64")
        ins["position_ids"] = grad_ins["position_ids"] = ["position_ids"]
    attrs = {"use_neox_rotary_style": neox, "time_major": time_major, "rotary_emb_base": 10000.0}
    return {"feeds": feeds, "ops": [("fused_rotary_position_embedding", ins, outs, attrs),
                                    ("fused_rotary_position_embedding_grad", grad_ins, grad_outs, attrs)]}


def _bias_act(method: str, cols: int, shift: bool) -> dict:
    """fused_bias_act of x [2, 3, cols] with a bias (and shift and smooth)."""
    width = cols // 2 if method in ("geglu", "swiglu") else cols
    feeds = {"x": ([2, 3, cols], F32), "bias": ([cols], F32)}
    ins = {"x": ["x"], "bias": ["bias"]}
    if shift:
        feeds |= {"shift": ([width], F32), "smooth": ([width], F32)}
        ins |= {"shift": ["shift"], "smooth": ["smooth"]}
    attrs = {"act_method": method, "compute_dtype": "default", "quant_scale": -1.0, "quant_round_type": 0,
             "quant_max_bound": 0.0, "quant_min_bound": 0.0}
    return {"feeds": feeds, "ops": [("fused_bias_act", ins, {"out": ("out", [2, 3, width])}, attrs)]}


def _norm(op: str, x: list[int], normalized: list[int]) -> dict:
    """A norm and its grad op at a fed dy: fast_ln (x, scale, bias), fast_rms_norm, fused_rms_norm_ext and rms_norm
    (x, scale)."""
    rows = [int(np.prod(x[:len(x) - len(normalized)]))]
    feeds = {"x": (x, F32), "scale": (normalized, F32), "dy": (x, F32)}
    ins, stats = {"x": ["x"], "scale": ["scale"]}, {"invvar": ("invvar", rows)}
    grads = {"x@GRAD": ("x@GRAD", x), "scale@GRAD": ("scale@GRAD", normalized)}
    attrs = {"epsilon": 1e-5}
    if op == "fast_ln":
        feeds["bias"] = (normalized, F32)
        ins["bias"], stats["mean"], grads["bias@GRAD"] = ["bias"], ("mean", rows), ("bias@GRAD", normalized)
    if op == "rms_norm":
        attrs = {"epsilon": ("_set_float64_attr", 1e-5), "normalized_shape": ("_set_int64s_attr", normalized)}
    grad_ins = {"x": ["x"], "scale": ["scale"], "y@GRAD": ["dy"], **{name: [name] for name in stats}}
    return {"feeds": feeds, "ops": [(op, ins, {"y": ("y", x), **stats}, attrs), (f"{op}_grad", grad_ins, grads, attrs)]}


def _bias_dropout_residual_ln(implementation: str) -> dict:
    """fused_bias_dropout_residual_layer_norm at test (rate 0.25) and its grad op at a fed dy."""
    shape, vector = [2, 3, 8], [8]
    feeds = {"x": (shape, F32), "residual": (shape, F32), "bias": (vector, F32), "ln_scale": (vector, F32),
             "ln_bias": (vector, F32), "dy": (shape, F32)}
    ins = {"X": ["x"], "Residual": ["residual"], "Bias": ["bias"], "LnScale": ["ln_scale"], "LnBias": ["ln_bias"]}
    state = {"BiasDropoutResidualOut": ("h", shape), "DropoutMaskOut": ("mask", shape), "LnMean": ("ln_mean", [6]),
             "LnVariance": ("ln_variance", [6])}
    grads = {f"{slot}@GRAD": (f"{names[0]}@GRAD", feeds[names[0]][0]) for slot, names in ins.items()}
    attrs = {"dropout_rate": 0.25, "is_test": True, "dropout_fix_seed": True, "dropout_seed": 1,
             "dropout_implementation": implementation, "ln_epsilon": 1e-5}
    grad_ins = {**ins, **{slot: [name] for slot, (name, _) in state.items()}, "Y@GRAD": ["dy"]}
    op = "fused_bias_dropout_residual_layer_norm"
    forward = (op, ins, {"Y": ("y", shape), **state}, attrs)
    return {"feeds": feeds, "ops": [forward, (f"{op}_grad", grad_ins, grads, attrs)]}


def _weight_only() -> dict:
    """weight_dequantize of a packed int8 weight [n, k] (any bytes are a packing) and weight_only_linear of x with
    it, and the linear's grad op at a fed dy."""
    k, n = 64, 8
    feeds = {"x": ([2, k], F32), "weight": ([n, k], "int8"), "scale": ([n], F32), "bias": ([n], F32),
             "dy": ([2, n], F32)}
    attrs = {"weight_dtype": "int8", "arch": 80, "group_size": -1}
    ins = {"x": ["x"], "weight": ["weight"], "bias": ["bias"], "weight_scale": ["scale"]}
    return {"feeds": feeds, "ops": [
        ("weight_dequantize", {"x": ["weight"], "scale": ["scale"]}, {"out": ("dequantized", [k, n])},
         {"algo": "weight_only_int8", "group_size": -1}),
        ("weight_only_linear", ins, {"out": ("out", [2, n])}, attrs),
        ("weight_only_linear_grad", {**ins, "out@GRAD": ["dy"]}, {"x@GRAD": ("x@GRAD", [2, k])}, attrs)]}


def _multi_transformer(decode: bool) -> dict:
    """fused_multi_transformer, 2 pre-layer-norm layers over x [2, s, 8] (2 heads of 4) with biases and caches
    [2, 2, 2, 4, 4]: the encoder over 3 tokens, or (decode) a step at time_step 2 with a mask; out is fetched."""
    layers, e, heads, dim, hidden, s = 2, 8, 2, 4, 6, 1 if decode else 3
    per_layer = {"ln_scales": [e], "ln_biases": [e], "qkv_weights": [3, heads, dim, e], "qkv_biases": [3, heads, dim],
                 "out_linear_weights": [e, e], "out_linear_biases": [e], "ffn_ln_scales": [e], "ffn_ln_biases": [e],
                 "ffn1_weights": [e, hidden], "ffn1_biases": [hidden], "ffn2_weights": [hidden, e], "ffn2_biases": [e],
                 "cache_kvs": [2, 2, heads, 4, dim]}
    feeds = {"x": ([2, s, e], F32)} | {f"{slot}{i}": (shape, F32) for slot, shape in per_layer.items()
                                       for i in range(layers)}
    ins = {"x": ["x"]} | {slot: [f"{slot}{i}" for i in range(layers)] for slot in per_layer}
    if decode:
        feeds |= {"time_step": ([1], "int32"), "src_mask": ([2, 1, 1, 4], F32)}
        ins |= {"time_step": ["time_step"], "src_mask": ["src_mask"]}
    attrs = {"pre_layer_norm": True, "epsilon": 1e-5, "residual_alpha": 1.0, "dropout_rate": 0.0,
             "rotary_emb_dims": 0, "is_test": True, "dropout_implementation": "upscale_in_train", "act_method": "gelu",
             "trans_qkvw": True, "ring_id": -1, "norm_type": "layernorm", "use_neox_rotary_style": False,
             "gqa_group_size": -1}
    caches = [(f"cache_kvs{i}", [2, 2, heads, 4, dim]) for i in range(layers)]   # written in place
    outs = {"out": ("out", [2, s, e]), "cache_kv_outs": caches}
    return {"feeds": feeds, "ops": [("fused_multi_transformer", ins, outs, attrs)],
            "reference": lambda v: _stack_reference(v, layers, heads, dim)}


def _stack_reference(v: dict, layers: int, heads: int, dim: int) -> dict:
    """The pre-layer-norm stack composed of Paddle's own CPU ops in float64: causal attention over the tokens, or
    (time_step) the token over the cache's first time_step positions and itself, with the mask over the cached ones
    (the kernel reads no mask column for the token itself)."""
    t = {name: paddle.to_tensor(value.astype(np.float64) if value.dtype == np.float32 else value)
         for name, value in v.items()}
    x, (b, s, e) = t["x"], v["x"].shape
    for i in range(layers):
        w = {slot: t[f"{slot}{i}"] for slot in ("ln_scales", "ln_biases", "qkv_weights", "qkv_biases",
                                               "out_linear_weights", "out_linear_biases", "ffn_ln_scales",
                                               "ffn_ln_biases", "ffn1_weights", "ffn1_biases", "ffn2_weights",
                                               "ffn2_biases", "cache_kvs")}
        h = paddle.nn.functional.layer_norm(x, [e], w["ln_scales"], w["ln_biases"], 1e-5)
        qkv = paddle.matmul(h, w["qkv_weights"].reshape([3 * e, e]), transpose_y=True) + w["qkv_biases"].reshape([-1])
        q, k, val = qkv.reshape([b, s, 3, heads, dim]).transpose([2, 0, 3, 1, 4]).unbind(0)
        if "time_step" in v:
            step = int(v["time_step"][0])
            k = paddle.concat([w["cache_kvs"][0][:, :, :step], k], 2)
            val = paddle.concat([w["cache_kvs"][1][:, :, :step], val], 2)
            mask = paddle.nn.functional.pad(t["src_mask"][:, :, :, :step], [0, 1])   # the token's column unread
        else:
            mask = paddle.triu(paddle.full([s, s], -np.inf, "float64"), 1)
        weights = paddle.nn.functional.softmax(paddle.matmul(q, k, transpose_y=True) / np.sqrt(dim) + mask)
        context = paddle.matmul(weights, val).transpose([0, 2, 1, 3]).reshape([b, s, e])
        r = paddle.nn.functional.linear(context, w["out_linear_weights"], w["out_linear_biases"]) + x
        f = paddle.nn.functional.layer_norm(r, [e], w["ffn_ln_scales"], w["ffn_ln_biases"], 1e-5)
        f = paddle.nn.functional.gelu(paddle.nn.functional.linear(f, w["ffn1_weights"], w["ffn1_biases"]))
        x = paddle.nn.functional.linear(f, w["ffn2_weights"], w["ffn2_biases"]) + r
    return {"out": x.numpy()}


def _dropout_add(p: float, is_test: bool, mode: str) -> dict:
    """fused_dropout_add of x, y [2, 3, 4] where no draw decides, and its grad op at a fed dout."""
    shape = [2, 3, 4]
    feeds = {"x": (shape, F32), "y": (shape, F32), "dout": (shape, F32)}
    attrs = {"p": p, "is_test": is_test, "mode": mode, "seed": 0, "fix_seed": False}
    grads = {"x@GRAD": ("x@GRAD", shape), "y@GRAD": ("y@GRAD", shape)}
    outs = {"out": ("out", shape), "seed_offset": ("seed_offset", [2], "int64")}
    return {"feeds": feeds, "ops": [
        ("fused_dropout_add", {"x": ["x"], "y": ["y"]}, outs, attrs),
        ("fused_dropout_add_grad", {"seed_offset": ["seed_offset"], "out@GRAD": ["dout"]}, grads, attrs)]}


CASES = {
    "rope_rotate_half_tables_positions": _rope(False, False, True, True, True),
    "rope_neox_time_major_computed": _rope(True, True, True, False, False),
    "fused_bias_act_swiglu": _bias_act("swiglu", 8, False),
    "fused_bias_act_gelu_shift_smooth": _bias_act("gelu", 6, True),
    "fast_ln": _norm("fast_ln", [2, 3, 8], [8]),
    "fast_rms_norm": _norm("fast_rms_norm", [4, 8], [8]),
    "rms_norm": _norm("rms_norm", [2, 3, 4], [3, 4]),
    "bias_dropout_residual_ln_downgrade": _bias_dropout_residual_ln("downgrade_in_infer"),
    "weight_only_linear_int8": _weight_only(),
    "multi_transformer_encoder": _multi_transformer(False),
    "multi_transformer_decode_step": _multi_transformer(True),
    "dropout_add_eval_downscale": _dropout_add(0.3, True, "downscale_in_infer"),
    "dropout_add_train_rate1": _dropout_add(1.0, False, "upscale_in_train"),
    "fused_rms_norm_ext": _norm("fused_rms_norm_ext", [2, 3, 8], [8]),
}

# each case's feed seed, the one its committed fixture was made with, so that rerunning a case rewrites the same feed:
# 300 + its place in the list, but fused_rms_norm_ext's 309, where it was first listed
SEEDS = {case: 300 + index for index, case in enumerate(CASES)} | {"fused_rms_norm_ext": 309}


def _feed(rng, name, shape, dtype):
    if name == "gate_logits":   # the kernel takes them as probabilities: softmax rows
        logits = np.exp(rng.standard_normal(shape))
        return (logits / logits.sum(-1, keepdims=True)).astype(dtype)
    if name == "corr_bias":
        return (0.1 * rng.standard_normal(shape)).astype(dtype)
    if name == "routes":   # distinct rows of the dispatched x
        return rng.permutation(int(np.prod(shape))).reshape(shape).astype(dtype)
    if dtype == "bool" or name == "tokens_mask":
        return (rng.random(shape) < 0.75).astype(dtype)
    if name == "gate_prob":
        return rng.random(shape).astype(dtype)
    if dtype == "int32":   # a decoding step's time_step
        return np.full(shape, 2, np.int32)
    if dtype == "int64":
        return rng.integers(0, 5, shape).astype(np.int64)
    if dtype == "int8":
        return rng.integers(-128, 128, shape).astype(np.int8)
    return rng.standard_normal(shape).astype(dtype)


# legacy output slots whose PIR result is not their snake-cased name (the tools of other op families add theirs)
PIR_RESULT_NAMES: dict[str, str] = {}


def _pir_name(slot: str) -> str:
    """A legacy slot's PIR result name: out_q, q@GRAD -> q_grad, LnMean -> ln_mean."""
    if slot in PIR_RESULT_NAMES:
        return PIR_RESULT_NAMES[slot]
    snake = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", slot.replace("@GRAD", "_grad"))
    return snake.lower()


def translated_program(spec: dict):
    """The spec's legacy ops written into a ProgramDesc, translated by Paddle, fetching every output that is not
    in place: (the PIR program, the fetched names)."""
    main = paddle.static.Program()
    block = main.global_block()
    with paddle.static.program_guard(main, paddle.static.Program()):
        for name, (shape, dtype) in spec["feeds"].items():
            paddle.static.data(name, shape, dtype)
    fetches = []
    for op_type, ins, outs, attrs in spec["ops"]:
        desc = block.desc.append_op()
        desc.set_type(op_type)
        for slot, names in ins.items():
            desc.set_input(slot, names)
        for slot, out in outs.items():   # a list slot (in place over its inputs) is declared, not fetched
            for name, shape, *dtype in out if isinstance(out, list) else [out]:   # (name, shape[, dtype])
                if not block.has_var(name):
                    block.create_var(name=name, shape=shape, dtype=dtype[0] if dtype else F32)
            desc.set_output(slot, [var[0] for var in out] if isinstance(out, list) else [out[0]])
            fetches += [] if isinstance(out, list) else [out[0]]
        for name, value in attrs.items():   # (setter, value): an attribute Paddle types float64 or int64s
            getattr(desc, value[0])(name, value[1]) if isinstance(value, tuple) else desc._set_attr(name, value)
    main._sync_with_cpp()
    program = paddle.pir.translate_to_pir(main.desc)
    values = {}
    types = {f"pd_op.{op_type}" for op_type, *_ in spec["ops"]}   # pd_op.full makes a scalar operand
    translated = [op for op in program.global_block().ops if op.name().rstrip("_") in types]
    for op, (op_type, _, outs, _) in zip(translated, spec["ops"]):
        assert op.name() in (f"pd_op.{op_type}", f"pd_op.{op_type}_", f"onednn_op.{op_type}"), (op.name(), op_type)
        results = dict(zip(op.get_output_names(), op.results()))
        values |= {out[0]: results[_pir_name(slot)] for slot, out in outs.items() if not isinstance(out, list)}
    with paddle.pir_utils.IrGuard(), paddle.static.program_guard(program):
        for col, name in enumerate(fetches):
            paddle._pir_ops.fetch(values[name], name, col).persistable = True
    return program, fetches


def saved(program, case: str) -> Path:
    """The case's directory, emptied, with the program in it."""
    directory = OUT / case
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    core.serialize_pir_program(program, str(directory / "program.json"), True, False, True)
    return directory


def write(case: str, seed: int) -> str:
    spec = CASES[case]
    program, fetches = translated_program(spec)
    directory = saved(program, case)
    rng = np.random.default_rng(seed)
    feed = {name: _feed(rng, name, *spec["feeds"][name]) for name in spec["feeds"]}
    np.savez_compressed(directory / "feed.npz", **feed)
    if "reference" in spec:   # Paddle's own numbers, from a composition of ops it runs on CPU
        with paddle.base.dygraph.guard(paddle.CPUPlace()):
            np.savez_compressed(directory / "expected.npz", **spec["reference"](feed))
    ops = sorted({op.name() for op in program.global_block().ops} - {"pd_op.fetch"})
    meta = {"case": case, "paddle_version": paddle.__version__, "fetches": fetches, "pir_ops": ops,
            "built_by": "legacy ops written into a ProgramDesc, translated by Paddle"}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{ops}"


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    for case in CASES:   # the cases named on the command line, or all
        if sys.argv[1:] and case not in sys.argv[1:]:
            continue
        print(f"{case}: {write(case, SEEDS[case])}")
    sys.exit(0)
