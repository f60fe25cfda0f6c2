"""PIR programs of Paddle 3.3.1's GPU-only fused transformer layers that neither its PIR API (no kernel: it refuses
the op) nor its translator (no legacy proto in a CPU build) can build without a GPU: this tool writes each program's
JSON itself, with the op names, operand / result / attribute names and order of Paddle's op definitions, then has
Paddle load the file and checks each op's get_input_names / get_output_names / get_attr_names against the names it
wrote (so a wrong or missing name fails here). The numbers come from Paddle too: it runs the layer's documented
unfused composition (paddle.nn.functional's linear, layer_norm, gelu / relu, dropout) on CPU in dygraph mode, and
its gradients at the fed output grad, into expected.npz. Written as tests/data/paddle/pir_gpu_only/<case>/
program.json, feed.npz, expected.npz and meta.json; tests/test_fused_transformer.py runs them. Not part of the
package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_gpu_only_handwritten.py
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle.base import core

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "pir_gpu_only"
TYPE_TAGS = {"float32": "0.t_f32", "float64": "0.t_f64", "uint8": "0.t_ui8"}
ATTR_TAGS = {bool: "0.a_bool", int: "0.a_i32", float: "0.a_f32", str: "0.a_str"}


class Writer:
    """The ops of one block, in Paddle's serialized PIR JSON (version 4): values numbered from 1, 0 is null."""

    def __init__(self):
        self.ops, self.values, self.fetches = [], {}, []

    def _result(self, name: str | None, shape=None, dtype="float32") -> dict:
        if name is None:
            return {"%": self._new(None), "TT": {"#": "NULL"}}
        return {"%": self._new(name, (shape, dtype)), "TT": _tensor_type(shape, dtype)}

    def _new(self, name, declared=None) -> int:
        number = len(self.values) + 1
        self.values[name if name is not None else f"null{number}"] = (number, declared)
        return number

    def data(self, name: str, shape: list[int], dtype: str) -> None:
        attrs = [_attr("name", name), {"AT": {"#": "1.a_intarray", "D": shape}, "N": "shape"},
                 {"AT": {"#": "1.a_dtype", "D": dtype}, "N": "dtype"},
                 {"AT": {"#": "1.a_place", "D": [0, 0, ""]}, "N": "place"}]
        self.ops.append({"#": "1.data", "A": attrs, "I": [], "O": [self._result(name, shape, dtype)],
                         "OA": _flags(1, persistable=False, stop_gradient=True)})

    def op(self, name: str, operands: list[str | None], results: list[tuple | None], attrs: list[tuple]) -> None:
        """operands: value names (None: null); results: (name, shape, dtype) or None (a null result)."""
        ins = [{"%": self.values[o][0] if o is not None else 0} for o in operands]
        outs = [self._result(*r) if r is not None else self._result(None) for r in results]
        self.ops.append({"#": f"1.{name}", "A": [_attr(n, v) for n, v in attrs], "I": ins, "O": outs,
                         "OA": _flags(len(outs), persistable=False, stop_gradient=False)})

    def fetch(self, name: str) -> None:
        number, (shape, dtype) = self.values[name]
        self.ops.append({"#": "1.fetch", "A": [_attr("name", name), {"AT": {"#": "0.a_i32", "D": len(self.fetches)},
                                                                      "N": "col"}],
                         "I": [{"%": number}], "O": [{"%": self._new(None), "TT": _tensor_type(shape, dtype)}],
                         "OA": _flags(1, persistable=True, stop_gradient=False)})
        self.fetches.append(name)

    def program(self) -> dict:
        block = {"#": "block_0", "args": [], "ops": self.ops}
        return {"base_code": {"magic": "pir", "trainable": True, "version": 4},
                "program": {"regions": [{"#": "region_0", "blocks": [block]}]}}


def _tensor_type(shape, dtype) -> dict:
    return {"#": "0.t_dtensor", "D": [{"#": TYPE_TAGS[dtype]}, list(shape), "NCHW", [], 0]}


def _attr(name: str, value) -> dict:
    return {"AT": {"#": ATTR_TAGS[type(value)], "D": value}, "N": name}


def _flags(count: int, persistable: bool, stop_gradient: bool) -> list[dict]:
    def array(value):
        return {"#": "0.a_array", "D": [{"#": "0.a_bool", "D": value}] * count}
    return [{"AT": array(persistable), "N": "persistable"}, {"AT": array(stop_gradient), "N": "stop_gradient"}]


def _ffn_case(pre: bool, act: str, is_test: bool, rates: tuple[float, float], mode: str, dtype: str,
              residual: bool = True, biases: bool = True) -> dict:
    """fused_feedforward of x [2, 3, 4] (dim_feedforward 6) and, in training, its grad op at a fed dy."""
    d, hidden, rows = 4, 6, 6
    ln = "ln1" if pre else "ln2"
    feeds = {"x": [2, 3, d], "linear1_weight": [d, hidden], "linear2_weight": [hidden, d], f"{ln}_scale": [d],
             f"{ln}_bias": [d]}
    if biases:
        feeds |= {"linear1_bias": [hidden], "linear2_bias": [d]}
    if not is_test:
        feeds["dy"] = [2, 3, d]
    attrs = [("pre_layer_norm", pre), ("ln1_epsilon", 1e-5), ("ln2_epsilon", 1e-5), ("act_method", act),
             ("dropout1_prob", rates[0]), ("dropout2_prob", rates[1]), ("dropout1_implementation", mode),
             ("dropout2_implementation", mode), ("is_test", is_test), ("dropout1_fix_seed", False),
             ("dropout2_fix_seed", False), ("dropout1_seed_val", 0), ("dropout2_seed_val", 0),
             ("add_residual", residual), ("ring_id", -1)]
    inner, stats = [2, 3, hidden], dtype   # layer norm statistics: float32 only for float16 x
    norm1 = [("ln1_mean", [rows], stats), ("ln1_variance", [rows], stats)] if pre else [None, None]
    norm2 = [None, None] if pre else [("ln2_mean", [rows], stats), ("ln2_variance", [rows], stats)]
    results = [("out", [2, 3, d], dtype), ("dropout1_mask", inner, "uint8"), ("dropout2_mask", [2, 3, d], "uint8"),
               *norm1, *norm2, ("linear1_out", inner, dtype), ("ln1_out", [2, 3, d], dtype) if pre else None,
               ("dropout1_out", inner, dtype), ("dropout2_out", [2, 3, d], dtype)]
    inputs = ["x", "linear1_weight", "linear1_bias", "linear2_weight", "linear2_bias", "ln1_scale", "ln1_bias",
              "ln2_scale", "ln2_bias"]
    operands = [name if name in feeds else None for name in inputs]
    ops = [("fused_feedforward", [operands[0], None, None, *operands[1:]], results, attrs)]
    fetches = ["out", "linear1_out", "dropout1_out", "dropout2_out", *(["ln1_out", "ln1_mean", "ln1_variance"]
                                                                       if pre else ["ln2_mean", "ln2_variance"])]
    if not is_test:
        saved = ["dropout1_mask", "dropout2_mask", "linear1_out", "dropout1_out", "dropout2_out", "ln1_scale",
                 "ln1_bias", "ln1_out", "ln1_mean", "ln1_variance", "ln2_scale", "ln2_bias", "ln2_mean",
                 "ln2_variance", "linear2_bias"]
        grads = [(f"{name}@GRAD", feeds[name], dtype) if name in feeds else None
                 for name in ("x", "linear1_weight", "linear1_bias", "linear2_weight", "linear2_bias", "ln1_scale",
                              "ln1_bias", "ln2_scale", "ln2_bias")]
        grad_operands = ["dy", "x", "linear1_weight", operands[2], "linear2_weight",
                         *[name if name in feeds or any(r and r[0] == name for r in results) else None
                           for name in saved]]
        ops.append(("fused_feedforward_grad", grad_operands, grads, attrs))
        fetches += [g[0] for g in grads if g is not None]
    return {"feeds": feeds, "dtype": dtype, "ops": ops, "fetches": fetches,
            "reference": lambda v: _ffn_reference(v, pre, act, is_test, rates, mode, residual)}


def _ffn_reference(v: dict, pre, act, is_test, rates, mode, residual) -> dict:
    """The documented unfused layer, run by Paddle on CPU: out, and in training the grads at dy."""
    t = {name: paddle.to_tensor(value, stop_gradient=name == "dy") for name, value in v.items()}
    d = v["x"].shape[-1]
    paddle_mode = "downscale_in_infer" if mode == "downgrade_in_infer" else mode
    h = F.layer_norm(t["x"], [d], t["ln1_scale"], t["ln1_bias"], 1e-5) if pre else t["x"]
    a = (F.gelu if act == "gelu" else F.relu)(F.linear(h, t["linear1_weight"], t.get("linear1_bias")))
    a = F.dropout(a, rates[0], training=not is_test, mode=paddle_mode)
    s = F.dropout(F.linear(a, t["linear2_weight"], t.get("linear2_bias")), rates[1], training=not is_test,
                  mode=paddle_mode)
    s = t["x"] + s if residual else s
    out = s if pre else F.layer_norm(s, [d], t["ln2_scale"], t["ln2_bias"], 1e-5)
    expected = {"out": out.numpy()}
    if not is_test:
        names = [name for name in v if name != "dy"]
        grads = paddle.grad([out], [t[name] for name in names], [t["dy"]])
        expected |= {f"{name}@GRAD": g.numpy() for name, g in zip(names, grads)}
    return expected


def _present(names: list[str], feeds: dict, results: list) -> list[str | None]:
    """Each name that is fed or an op's non-null result, else None (a null operand)."""
    made = {r[0] for r in results if r is not None}
    return [name if name in feeds or name in made else None for name in names]


ATTENTION_STATE = ["ln_mean", "ln_var", "ln_out", "qkv_out", "qkv_bias_out", "transpose_out_2", "qk_out", "qktv_out",
                   "softmax_out", "attn_dropout_mask_out", "attn_dropout_out", "src_mask_out", "fmha_out",
                   "out_linear_out", "dropout_mask_out", "ln_mean_2", "ln_var_2", "bias_dropout_residual_out"]
ATTENTION_GRADS = ["qkv_bias", "qkv_bias_out", "src_mask_out", "out_linear_bias", "ln_scale", "ln_bias", "ln_scale_2",
                     "ln_bias_2", "x", "qkv_weight", "out_linear_weight", "ln_out", "bias_dropout_residual_out",
                     "qkv_out", "qktv_out", "transpose_out_2", "qk_out", "softmax_out", "attn_dropout_out", "fmha_out",
                     "out_linear_out"]


def _attention_case(pre: bool, transposed: bool, is_test: bool, rates: tuple[float, float], modes: tuple[str, str],
                    dtype: str, cache: bool = False, mask: bool = True) -> dict:
    """fused_attention of x [2, 3, 8] with 2 heads of 4 (1 / sqrt(4) is exact) and, in training, its grad op."""
    b, s, e, nh, dh, cached = 2, 3, 8, 2, 4, 2
    kv = s + cached if cache else s
    ln = ("ln_scale", "ln_bias") if pre else ("ln_scale_2", "ln_bias_2")
    feeds = {"x": [b, s, e], "qkv_weight": [e, 3 * e] if transposed else [3, nh, dh, e],
             "qkv_bias": [3 * e] if transposed else [3, nh, dh], "out_linear_weight": [e, e],
             "out_linear_bias": [e], ln[0]: [e], ln[1]: [e]}
    feeds |= ({"src_mask": [b, 1, s, kv]} if mask else {}) | ({"cache_kv": [2, b, nh, cached, dh]} if cache else {})
    feeds |= {} if is_test else {"dy": [b, s, e]}
    attrs = [("num_heads", nh), ("transpose_qkv_wb", transposed), ("pre_layer_norm", pre), ("epsilon", 1e-5),
             ("attn_dropout_rate", rates[0]), ("is_test", is_test), ("attn_dropout_fix_seed", True),
             ("attn_dropout_seed", 0), ("attn_dropout_implementation", modes[0]), ("dropout_rate", rates[1]),
             ("dropout_fix_seed", True), ("dropout_seed", 0), ("dropout_implementation", modes[1]),
             ("ln_epsilon", 1e-5), ("add_residual", True), ("ring_id", -1)]
    qkv = [b, s, 3 * e] if transposed else [b, s, 3, nh, dh]
    scores, rows, x = [b, nh, s, kv], [b * s], [b, s, e]
    shapes = {"ln_mean": rows, "ln_var": rows, "ln_out": x, "qkv_out": qkv, "qkv_bias_out": qkv,
              "transpose_out_2": [3, b, nh, s, dh], "qk_out": scores, "qktv_out": [b, nh, s, dh],
              "softmax_out": scores, "attn_dropout_mask_out": scores, "attn_dropout_out": scores,
              "src_mask_out": scores, "fmha_out": [b, s, nh, dh], "out_linear_out": x, "dropout_mask_out": x,
              "ln_mean_2": rows, "ln_var_2": rows, "bias_dropout_residual_out": x}
    absent = {"ln_mean_2", "ln_var_2", "bias_dropout_residual_out"} if pre else {"ln_mean", "ln_var", "ln_out"}
    absent |= set() if mask else {"src_mask_out"}
    absent |= {"attn_dropout_mask_out", "dropout_mask_out"} if is_test else set()
    results = [None if name in absent else (name, shapes[name], "uint8" if "mask_out" in name and "src" not in name
                                            else dtype) for name in ATTENTION_STATE]
    results += [("cache_kv_out", [2, b, nh, kv, dh], dtype) if cache else None, ("out", x, dtype)]
    inputs = ["x", "ln_scale", "ln_bias", "qkv_weight", "qkv_bias", "cache_kv", "src_mask", "out_linear_weight",
              "out_linear_bias", "ln_scale_2", "ln_bias_2"]
    ops = [("fused_attention", _present(inputs, feeds, []), results, attrs)]
    fetches = ["out", *(["cache_kv_out"] if cache else []), "qk_out", "softmax_out", "fmha_out", "out_linear_out",
               "transpose_out_2", *(["ln_out"] if pre else ["bias_dropout_residual_out"])]
    if not is_test:
        grad_inputs = ["dy", "x", "qkv_weight", "qkv_bias", "qkv_bias_out", "src_mask", "src_mask_out",
                       "out_linear_weight", "out_linear_bias", "ln_scale", "ln_bias", "ln_scale_2", "ln_bias_2",
                       "ln_out", "ln_mean", "ln_var", "ln_mean_2", "ln_var_2", "bias_dropout_residual_out", "qkv_out",
                       "transpose_out_2", "qk_out", "qktv_out", "softmax_out", "attn_dropout_mask_out",
                       "attn_dropout_out", "fmha_out", "out_linear_out", "dropout_mask_out"]
        every = {**shapes, **feeds}
        grads = [(f"{name}@GRAD", every[name], dtype) if name in feeds or name in shapes and name not in absent
                 else None for name in ATTENTION_GRADS]
        ops.append(("fused_attention_grad", _present(grad_inputs, feeds, results), grads, attrs))
        fetches += [f"{name}@GRAD" for name in feeds if name not in ("dy", "src_mask", "cache_kv")]
    return {"feeds": feeds, "dtype": dtype, "ops": ops, "fetches": fetches,
            "reference": lambda v: _attention_reference(v, pre, transposed, is_test, rates, modes, nh)}


def _attention_reference(v: dict, pre, transposed, is_test, rates, modes, nh) -> dict:
    """The documented unfused layer (FusedMultiHeadAttention's), run by Paddle on CPU: out (and the updated cache),
    and in training the grads at dy."""
    constants = ("dy", "src_mask", "cache_kv")
    t = {name: paddle.to_tensor(value, stop_gradient=name in constants) for name, value in v.items()}
    b, s, e = v["x"].shape
    dh = e // nh
    modes = ["downscale_in_infer" if mode == "downgrade_in_infer" else mode for mode in modes]
    h = F.layer_norm(t["x"], [e], t["ln_scale"], t["ln_bias"], 1e-5) if pre else t["x"]
    weight = t["qkv_weight"] if transposed else t["qkv_weight"].reshape([3 * e, e]).T
    qkv = (paddle.matmul(h, weight) + t["qkv_bias"].reshape([3 * e])).reshape([b, s, 3, nh, dh])
    q, k, val = qkv.transpose([2, 0, 3, 1, 4]).unbind(0)
    expected = {}
    if "cache_kv" in t:
        k, val = paddle.concat([t["cache_kv"][0], k], 2), paddle.concat([t["cache_kv"][1], val], 2)
        expected["cache_kv_out"] = paddle.stack([k, val]).numpy()
    scores = paddle.matmul(q / np.sqrt(dh), k, transpose_y=True) + t.get("src_mask", 0)
    weights = F.dropout(F.softmax(scores), rates[0], training=not is_test, mode=modes[0])
    context = paddle.matmul(weights, val).transpose([0, 2, 1, 3]).reshape([b, s, e])
    out = t["x"] + F.dropout(F.linear(context, t["out_linear_weight"], t["out_linear_bias"]), rates[1],
                             training=not is_test, mode=modes[1])
    out = out if pre else F.layer_norm(out, [e], t["ln_scale_2"], t["ln_bias_2"], 1e-5)
    expected["out"] = out.numpy()
    if not is_test:
        names = [name for name in v if name not in constants]
        grads = paddle.grad([out], [t[name] for name in names], [t["dy"]])
        expected |= {f"{name}@GRAD": g.numpy() for name, g in zip(names, grads)}
    return expected


CASES = {
    "ffn_pre_ln_gelu_eval_downgrade": _ffn_case(True, "gelu", True, (0.2, 0.3), "downgrade_in_infer", "float64"),
    "ffn_post_ln_relu_train_rate0": _ffn_case(False, "relu", False, (0.0, 0.0), "upscale_in_train", "float32"),
    "ffn_pre_ln_no_residual_no_bias_train_rate0": _ffn_case(True, "gelu", False, (0.0, 0.0), "upscale_in_train",
                                                            "float64", residual=False, biases=False),
    "attention_pre_ln_eval_cache_mask": _attention_case(True, False, True, (0.2, 0.3), ("downgrade_in_infer",
                                                        "downgrade_in_infer"), "float64", cache=True),
    "attention_post_ln_transposed_train_rate0": _attention_case(False, True, False, (0.0, 0.0), ("upscale_in_train",
                                                                "downgrade_in_infer"), "float32"),
    "attention_pre_ln_no_mask_train_rate0": _attention_case(True, False, False, (0.0, 0.0), ("upscale_in_train",
                                                            "upscale_in_train"), "float64", mask=False),
}


def _check_names(path: Path, spec: dict) -> None:
    """Paddle loads the program, and its op definitions name each operand, result and attribute as written."""
    program = paddle.base.libpaddle.pir.Program()
    core.deserialize_pir_program(str(path), program, 4)
    fused = [op for op in program.global_block().ops if op.name() not in ("pd_op.data", "pd_op.fetch")]
    for op, (name, operands, results, attrs) in zip(fused, spec["ops"], strict=True):
        assert op.name() == f"pd_op.{name}", (op.name(), name)
        assert op.num_operands() == len(operands) == len(op.get_input_names()), (name, op.get_input_names())
        assert op.num_results() == len(results) == len(op.get_output_names()), (name, op.get_output_names())
        assert op.get_attr_names() == [n for n, _ in attrs], (name, op.get_attr_names())


def save_case(directory: Path, writer: Writer, check_ops: list, feed: dict, expected: dict, pir_ops: list[str],
              expected_from: str) -> None:
    """A case written by hand: program.json (Paddle loads it and checks each op's names against ``check_ops``, as
    (name, operands, results, attrs)), feed.npz, expected.npz (``expected_from`` says where its numbers come from)
    and meta.json."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    (directory / "program.json").write_text(json.dumps(writer.program()))
    _check_names(directory / "program.json", {"ops": check_ops})
    np.savez_compressed(directory / "feed.npz", **feed)
    np.savez_compressed(directory / "expected.npz", **expected)
    meta = {"case": directory.name, "paddle_version": paddle.__version__, "fetches": writer.fetches,
            "pir_ops": pir_ops,
            "built_by": f"PIR JSON written by hand, loaded and name-checked by Paddle; expected.npz: {expected_from}"}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def write(case: str, seed: int) -> str:
    spec = CASES[case]
    rng = np.random.default_rng(seed)
    feed = {name: rng.standard_normal(shape).astype(spec["dtype"]) for name, shape in spec["feeds"].items()}
    writer = Writer()
    for name, value in feed.items():
        writer.data(name, list(value.shape), str(value.dtype))
    for op in spec["ops"]:
        writer.op(*op)
    for name in spec["fetches"]:
        writer.fetch(name)
    pir_ops = sorted({f"pd_op.{op[0]}" for op in spec["ops"]})
    save_case(OUT / case, writer, spec["ops"], feed, spec["reference"]({k: v.copy() for k, v in feed.items()}),
              pir_ops, "Paddle's CPU run of the unfused composition")
    return " ".join(pir_ops)


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.set_device("cpu")
    for index, case in enumerate(CASES):
        print(f"{case}: {write(case, 500 + index)}")
    sys.exit(0)
