"""Paddle's paddle.sparse fixtures (tools/paddle_sparse_tensor_fixtures.py): each case's legacy forward program, its
feed, initial weights and what Paddle computed, for tests/test_sparse.py and the float64 gradcheck cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import gradc
from gradc.ir import VarType

DATA = Path(__file__).parent / "data" / "paddle" / "sparse_tensor"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "forward.pb").exists())


def load(case: str, float64: bool = False) -> dict:
    """program, feed, params, expected, loss (name), wrt (val and the trainable parameters, Paddle's grads' order)."""
    folder = DATA / case
    program = gradc.load(str(folder / "forward.pb"))
    feed, params = dict(np.load(folder / "feed.npz")), dict(np.load(folder / "params.npz"))
    expected = dict(np.load(folder / "expected.npz"))
    if float64:
        for var in program.global_block.vars.values():
            var.dtype = VarType.FP64 if var.dtype == VarType.FP32 else var.dtype
        feed = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in feed.items()}
        params = {k: v.astype(np.float64) for k, v in params.items()}
    wrt = [name.removeprefix("grad:") for name in expected if name.startswith("grad:")]
    return {"program": program, "feed": feed, "params": params, "expected": expected,
            "loss": program.global_block.ops[-1].outputs["Out"][0], "wrt": wrt}


def pir_training(case: str, weights: dict[str, np.ndarray]) -> dict:
    """A PIR inference fixture (pir_jit, pir_unary) compiled by gradc to a training program: the loss is the sum of
    mean(out * r) over the fetched outputs that have a weight r (weights: {output index: r}, fed as r<index>), and
    its gradients of val and of every parameter. program, feed, params, fetch (loss and the gradients), wrt."""
    from gradc.io.pdiparams import read_params
    from gradc.pir import load_pir

    folder = DATA / case
    program = load_pir(str(folder / "model.json"))
    block = program.global_block
    outs = [op.input("X")[0] for op in block.ops if op.type == "fetch"]
    block.ops[:] = [op for op in block.ops if op.type != "fetch"]   # the loss is fetched instead
    terms, feed = [], dict(np.load(folder / "feed.npz"))
    for i, r in weights.items():
        for name, shape in ((f"r{i}", list(r.shape)), (f"weighted{i}", list(r.shape)), (f"term{i}", [])):
            block.create_var(name, shape, VarType.FP32)
        block.append_op("elementwise_mul", {"X": [outs[i]], "Y": [f"r{i}"]}, {"Out": [f"weighted{i}"]}, {"axis": -1})
        block.append_op("reduce_mean", {"X": [f"weighted{i}"]}, {"Out": [f"term{i}"]}, {"reduce_all": True, "dim": []})
        terms.append(f"term{i}")
        feed[f"r{i}"] = r
    block.create_var("loss", [], VarType.FP32)
    block.append_op("sum", {"X": terms}, {"Out": ["loss"]})
    block.var("val").stop_gradient = False
    params = read_params(folder / "model.pdiparams", program) if (folder / "model.pdiparams").exists() else {}
    wrt = ["val", *sorted(name for name in params if not name.endswith(("w_1", "w_2")))]   # not running stats
    grads = gradc.gradients(program, "loss", wrt)
    return {"program": program, "feed": {k: v for k, v in feed.items() if ":" not in k}, "params": params,
            "fetch": ["loss", *grads], "wrt": wrt}


def training_weights(case: str) -> dict[int, np.ndarray]:
    """pir_training's weights: pir_jit's one output gets a random r; pir_unary's outputs of TRAINED get the r of their
    own losses in the fixture (whose gradients, Paddle's dygraph ones, are in expected.npz)."""
    if case == "pir_jit":
        return {0: np.random.default_rng(0).standard_normal((2, 2, 3, 3)).astype(np.float32)}
    feed, expected = np.load(DATA / case / "feed.npz"), np.load(DATA / case / "expected.npz")
    names = [name.removeprefix("out:") for name in expected if name.startswith("out:")]
    return {i: feed[f"r:{name}"] for i, name in enumerate(names) if name in TRAINED}


# pir_unary's outputs whose training program Paddle's executor runs: the elementwise ones' gradients read the values
# of to_dense_grad_sp's result, and Paddle's values_coo_sp crashes on it (docs/sparse.md)
TRAINED = ("reshape", "sum", "softmax", "add_bias", "values")
