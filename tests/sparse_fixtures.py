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


def csr_program(unrun: bool = False) -> dict:
    """gradc's program of paddle.sparse's CSR API on a [3, 4] COO tensor x (val at idx, sorted: Paddle's coo_to_csr is
    wrong for unsorted sites, docs/sparse.md; values in (0.1, 0.9)) and a dense d with zeros: to_sparse_csr of x and
    of d, their sum, to_sparse_coo of d's CSR tensor and of d, values and to_dense of the CSR tensor, and its
    elementwise ops, relu, softmax, cast and isnan; with ``unrun``, the ops Paddle has no CPU kernel of instead: x
    times a [4, 2] COO tensor w and their CSR tensors times each other, acos of x and acosh of x + 1, COO and CSR.
    program, feed, fetch (dense tensors; names are the fetched vars)."""
    from gradc.ops.sparse_unary import ON_VALUES

    rng = np.random.default_rng(23)
    feed = {"idx": np.array([[0, 0, 1, 1, 2, 2, 2], [1, 3, 0, 2, 0, 1, 3]], np.int64),
            "val": rng.uniform(0.1, 0.9, 7).astype(np.float32)}
    if unrun:
        feed |= {"w_idx": np.array([[0, 2, 1, 3, 2], [1, 0, 1, 0, 1]], np.int64),
                 "w_val": rng.standard_normal(5).astype(np.float32)}
    else:
        feed["d"] = np.where(rng.random((3, 4)) < 0.4, 0, rng.standard_normal((3, 4))).astype(np.float32)
    program = gradc.Program()
    block = program.global_block
    for name, value in feed.items():
        block.create_var(name, list(value.shape), gradc.ir.to_var_type(value.dtype))
    fetch = []

    def op(type_: str, inputs: dict, out: str, shape, layout=VarType.DENSE_TENSOR, attrs=None) -> str:
        block.create_var(out, shape, VarType.FP32, type=layout)
        block.append_op(type_, {slot: [name] for slot, name in inputs.items()}, {"out": [out]}, attrs or {})
        if layout == VarType.DENSE_TENSOR:
            fetch.append(out)
        return out

    def dense(sparse: str) -> str:
        return op("sparse_to_dense", {"x": sparse}, f"{sparse}_dense", [3, 4])

    coo, csr = VarType.SPARSE_COO, VarType.SPARSE_CSR
    x = op("sparse_sparse_coo_tensor", {"values": "val", "indices": "idx"}, "x", [3, 4], coo, {"shape": [3, 4]})
    x_csr = op("sparse_to_sparse_csr", {"x": x}, "x_csr", [3, 4], csr)
    plus_1 = {"scale": 1.0, "bias": 1.0, "bias_after_scale": True}   # acosh's domain
    if unrun:
        w = op("sparse_sparse_coo_tensor", {"values": "w_val", "indices": "w_idx"}, "w", [4, 2], coo, {"shape": [4, 2]})
        w_csr = op("sparse_to_sparse_csr", {"x": w}, "w_csr", [4, 2], csr)
        op("sparse_to_dense", {"x": op("sparse_matmul", {"x": x, "y": w}, "xw", [3, 2], coo)}, "xw_dense", [3, 2])
        op("sparse_to_dense", {"x": op("sparse_matmul", {"x": x_csr, "y": w_csr}, "xw_csr", [3, 2], csr)},
           "xw_csr_dense", [3, 2])
        for v, layout in ((x, coo), (x_csr, csr)):
            dense(op("sparse_acos", {"x": v}, f"{v}_acos", [3, 4], layout))
            shifted = op("sparse_scale", {"x": v}, f"{v}_plus_1", [3, 4], layout, plus_1)
            dense(op("sparse_acosh", {"x": shifted}, f"{v}_acosh", [3, 4], layout))
        return {"program": program, "feed": feed, "fetch": fetch}
    dense(x_csr)
    d_csr = op("sparse_to_sparse_csr", {"x": "d"}, "d_csr", [3, 4], csr)
    op("sparse_values", {"x": d_csr}, "d_values", [-1])
    dense(op("sparse_add", {"x": x_csr, "y": d_csr}, "sum_csr", [3, 4], csr))
    dense(op("sparse_to_sparse_coo", {"x": d_csr}, "d_coo", [3, 4], coo, {"sparse_dim": 2}))
    op("sparse_values", {"x": op("sparse_to_sparse_coo", {"x": "d"}, "d_coo1", [3, 4], coo, {"sparse_dim": 1})},
       "d_coo1_values", [-1, 4])
    attrs = {"sparse_leaky_relu": {"alpha": 0.1}, "sparse_pow": {"factor": 2.5}, "sparse_softmax": {"axis": -1},
             "sparse_scale": {"scale": -2.0, "bias": 0.5, "bias_after_scale": False},
             "sparse_cast": {"index_dtype": int(VarType.INT32), "value_dtype": int(VarType.FP64)}}
    ran = [op for op in ON_VALUES if op not in ("sparse_acos", "sparse_acosh")]
    for unary in (*ran, "sparse_relu", "sparse_softmax", "sparse_cast", "sparse_isnan"):
        dense(op(unary, {"x": x_csr}, f"x_{unary}", [3, 4], csr, attrs.get(unary)))
    block.vars["x_sparse_cast_dense"].dtype = block.vars["x_sparse_cast"].dtype = VarType.FP64
    block.vars["x_sparse_isnan_dense"].dtype = block.vars["x_sparse_isnan"].dtype = VarType.BOOL
    return {"program": program, "feed": feed, "fetch": fetch}


def csr_training() -> dict:
    """csr_program compiled to a training program: loss = the sum of mean(out * r) over its outputs relu, sin, softmax
    and to_dense of the CSR tensor and the sum (r fed as r<i>), and the gradients of val and d. program, feed, fetch
    (loss and the gradient)."""
    net = csr_program()
    program, feed = net["program"], dict(net["feed"])
    block = program.global_block
    rng = np.random.default_rng(31)
    terms = []
    for i, out in enumerate(("x_sparse_relu_dense", "x_sparse_sin_dense", "x_sparse_softmax_dense", "x_csr_dense",
                             "sum_csr_dense")):
        feed[f"r{i}"] = rng.standard_normal((3, 4)).astype(np.float32)
        for name, shape in ((f"r{i}", [3, 4]), (f"weighted{i}", [3, 4]), (f"term{i}", [])):
            block.create_var(name, shape, VarType.FP32)
        block.append_op("elementwise_mul", {"X": [out], "Y": [f"r{i}"]}, {"Out": [f"weighted{i}"]}, {"axis": -1})
        block.append_op("reduce_mean", {"X": [f"weighted{i}"]}, {"Out": [f"term{i}"]}, {"reduce_all": True, "dim": []})
        terms.append(f"term{i}")
    block.create_var("loss", [], VarType.FP32)
    block.append_op("sum", {"X": terms}, {"Out": ["loss"]})
    for name in ("val", "d"):
        block.var(name).stop_gradient = False
    return {"program": program, "feed": feed, "fetch": ["loss", *gradc.gradients(program, "loss", ["val", "d"])]}


# (op, inputs, attributes, result dims) of csr_ops_program: a CSR form of each op, 2-D and 3-D
CSR_OPS = [("sparse_subtract", ("a2", "b2"), {}, [3, 4]), ("sparse_multiply", ("a3", "b3"), {}, [2, 3, 5]),
           ("sparse_divide", ("a2", "full2"), {}, [3, 4]),
           ("sparse_divide_scalar", ("a3",), {"scalar": 4.0}, [2, 3, 5]),
           ("sparse_transpose", ("a3",), {"perm": [2, 0, 1]}, [5, 2, 3]),
           ("sparse_reshape", ("a3",), {"shape": [6, 5]}, [6, 5]),
           ("sparse_slice", ("a2",), {"axes": [0, 1], "starts": [1, 1], "ends": [3, 3]}, [2, 2]),
           ("sparse_sum", ("a3",), {"axis": [-1], "keepdim": True}, [2, 3, 1]),
           ("sparse_sum", ("a2",), {"axis": []}, [1, 1])]


def csr_ops_program(feed: dict, training: bool = False) -> dict:
    """gradc's program of CSR_OPS on the CSR tensors of csr_ops' fed dense tensors, each result to_dense (fetched);
    with ``training`` loss = the sum of their means and the gradients of the fed tensors (fetched instead).
    program, feed, fetch."""
    program = gradc.Program()
    block = program.global_block
    terms, fed = [], [name for name in ("a2", "b2", "a3", "b3", "full2") if any(name in op[1] for op in CSR_OPS)]
    for name in fed:
        block.create_var(name, list(feed[name].shape), VarType.FP64).stop_gradient = False
        block.create_var(f"{name}_csr", list(feed[name].shape), VarType.FP64, type=VarType.SPARSE_CSR)
        block.append_op("sparse_to_sparse_csr", {"x": [name]}, {"out": [f"{name}_csr"]})
    for i, (op, inputs, attrs, shape) in enumerate(CSR_OPS):
        for name, var_type in ((f"out{i}", VarType.SPARSE_CSR), (f"dense{i}", VarType.DENSE_TENSOR)):
            block.create_var(name, shape, VarType.FP64, type=var_type)
        block.create_var(f"term{i}", [], VarType.FP64)
        block.append_op(op, {slot: [f"{name}_csr"] for name, slot in zip(inputs, ("x", "y"))}, {"out": [f"out{i}"]},
                        attrs)
        block.append_op("sparse_to_dense", {"x": [f"out{i}"]}, {"out": [f"dense{i}"]})
        block.append_op("reduce_mean", {"X": [f"dense{i}"]}, {"Out": [f"term{i}"]}, {"reduce_all": True, "dim": []})
        terms.append(f"term{i}")
    block.create_var("loss", [], VarType.FP64)
    block.append_op("sum", {"X": terms}, {"Out": ["loss"]})
    fetch = ["loss", *gradc.gradients(program, "loss", fed)] if training else [f"dense{i}" for i in range(len(terms))]
    return {"program": program, "feed": {name: feed[name] for name in fed}, "fetch": fetch}
