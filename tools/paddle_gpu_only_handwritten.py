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


CASES = {
    "ffn_pre_ln_gelu_eval_downgrade": _ffn_case(True, "gelu", True, (0.2, 0.3), "downgrade_in_infer", "float64"),
    "ffn_post_ln_relu_train_rate0": _ffn_case(False, "relu", False, (0.0, 0.0), "upscale_in_train", "float32"),
    "ffn_pre_ln_no_residual_no_bias_train_rate0": _ffn_case(True, "gelu", False, (0.0, 0.0), "upscale_in_train",
                                                            "float64", residual=False, biases=False),
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
    directory = OUT / case
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    (directory / "program.json").write_text(json.dumps(writer.program()))
    _check_names(directory / "program.json", spec)
    np.savez_compressed(directory / "feed.npz", **feed)
    np.savez_compressed(directory / "expected.npz", **spec["reference"](feed))
    meta = {"case": case, "paddle_version": paddle.__version__, "fetches": writer.fetches,
            "pir_ops": sorted({f"pd_op.{op[0]}" for op in spec["ops"]}),
            "built_by": "PIR JSON written by hand, loaded and name-checked by Paddle; expected.npz: Paddle's CPU run "
                        "of the unfused composition"}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return " ".join(meta["pir_ops"])


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.set_device("cpu")
    for index, case in enumerate(CASES):
        print(f"{case}: {write(case, 500 + index)}")
    sys.exit(0)
