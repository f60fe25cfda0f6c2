"""Fixtures of paddle.sparse (sparse COO tensors, paddle.sparse.nn's layers) from a real PaddlePaddle 3.3.1:

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_sparse_tensor_fixtures.py tests/data/paddle/sparse_tensor

Each case is a small net on a COO tensor made of fed indices and values (idx [4, nnz] int64, val [nnz, C] float32),
built in Paddle's legacy static mode: forward.pb is that program, and Paddle's Executor runs it for the loss and the
dense outputs (expected.npz, `out:<var>`) and the running statistics its batch norms leave (`after:<var>`).
Paddle's append_backward writes no grad op for the sparse_* ops, so the gradients (`grad:<var>`, of val and of every
parameter) come from Paddle's dygraph run of the same layers with the static run's initial weights (params.npz).
Every case's loss is mean(dense output * r), r a fed random tensor, so each output element has its own weight.

pir_jit is the PIR side: the SECOND-like backbone in eval mode through paddle.jit.to_static and paddle.jit.save
(model.json, model.pdiparams), the output Paddle's inference Predictor computes from it on the CPU and the dygraph
layer's (expected.npz: out, dygraph) for the inputs in feed.npz. The Predictor's is the dygraph output transposed to
NHWC (docs/sparse.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PIR = sys.argv[2:] == ["pir_jit"]   # Paddle reads the mode once, at import: pir_jit runs in a process of its own
os.environ["FLAGS_enable_pir_api"] = "1" if PIR else "0"

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import paddle.sparse as sp  # noqa: E402
from paddle_sparse_tensor_layers import (  # noqa: E402
    SHAPE,
    Dilated,
    NewSites,
    Planar,
    Residual,
    Second,
    Shapes,
    StridedBn,
    SubmRelu,
    Values,
)

# case -> (layer, sites, whether the sites come in no order). Paddle's subm conv backward is wrong at the kernel's
# centre for sites not in sorted order (docs/sparse.md): subm_unsorted's grads.npz holds those wrong gradients
CASES = {"subm_relu": (SubmRelu, 9, False), "subm_unsorted": (SubmRelu, 9, True),
         "strided_bn": (StridedBn, 12, True), "dilated": (Dilated, 10, False),
         "residual": (Residual, 9, False), "new_sites": (NewSites, 6, False),
         "shapes": (Shapes, 40, False),
         "values": (Values, 11, True), "second": (Second, 30, False), "planar": (Planar, 12, False)}


def inputs(nnz: int, seed: int, unsorted: bool, shape=SHAPE) -> dict[str, np.ndarray]:
    """nnz distinct sites over both batch items, sorted or in no order, and their values."""
    rng = np.random.default_rng(seed)
    flat = rng.choice(int(np.prod(shape)), nnz, replace=False)
    flat = flat if unsorted else np.sort(flat)
    idx = np.stack(np.unravel_index(flat, shape)).astype(np.int64)
    return {"idx": idx, "val": rng.standard_normal((nnz, 2)).astype(np.float32)}


def static_run(layer_class, feed: dict):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        idx = paddle.static.data("idx", feed["idx"].shape, "int64")
        val = paddle.static.data("val", feed["val"].shape, "float32")
        val.stop_gradient = False   # the program then asks for val's gradient, as a training program would
        layer = layer_class()
        out = layer(sp.sparse_coo_tensor(idx, val, shape=[*getattr(layer_class, "shape", SHAPE), 2]))
        r = paddle.static.data("r", [-1 if d is None else d for d in out.shape], "float32")
        loss = paddle.mean(out * r)
    return main, startup, layer, out, r, loss


def make(case: str, root: Path) -> None:
    layer_class, nnz, unsorted = CASES[case]
    shape = getattr(layer_class, "shape", SHAPE)
    feed = inputs(nnz, len(case), unsorted, shape)
    paddle.enable_static()
    paddle.seed(7)
    main, startup, layer, out, r, loss = static_run(layer_class, feed)
    exe = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        params = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in layer.parameters()}
        stats = [p.name for p in layer.parameters() if not p.trainable]   # batch norms' running mean and variance
    paddle.disable_static()
    dygraph = layer_class()
    for p, value in zip(dygraph.parameters(), params.values()):
        p.set_value(value)
    # values that need a gradient crash Paddle's conv3d backward (docs/sparse.md): x's own gradient stands for theirs
    x = sp.sparse_coo_tensor(paddle.to_tensor(feed["idx"]), paddle.to_tensor(feed["val"]), shape=[*shape, 2])
    x.stop_gradient = False
    dense = dygraph(x)
    feed["r"] = np.random.default_rng(3).standard_normal(dense.shape).astype(np.float32)
    (dense * paddle.to_tensor(feed["r"])).mean().backward()
    pairs = [(p, d) for p, d in zip(layer.parameters(), dygraph.parameters()) if p.trainable]
    missing = [p.name for p, d in pairs if d.grad is None]
    assert not missing, f"Paddle gave no gradient for {missing}"
    grads = {f"grad:{p.name}": d.grad.numpy() for p, d in pairs}
    assert (x.grad.indices().numpy() == feed["idx"]).all(), "x's gradient is not on x's sites, in x's order"
    grads["grad:val"] = x.grad.values().numpy()
    dygraph_after = {f"dygraph_after:{p.name}": d.numpy() for p, d in zip(layer.parameters(), dygraph.parameters())
                     if p.name in stats}
    paddle.enable_static()
    with paddle.static.scope_guard(scope):
        fetched = exe.run(main, feed=feed, fetch_list=[loss.name, out.name])
        after = {f"after:{name}": np.array(scope.find_var(name).get_tensor()) for name in stats}
    expected = {"loss": fetched[0], f"out:{out.name}": fetched[1], **after, **grads, **dygraph_after,
                "dygraph_out": dense.numpy()}
    folder = root / case
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "forward.pb").write_bytes(main.desc.serialize_to_string())
    np.savez(folder / "feed.npz", **feed)
    np.savez(folder / "params.npz", **params)
    np.savez(folder / "expected.npz", **expected)
    print(f"{case}: loss {float(fetched[0]):.6f}, {len(grads)} grads, "
          f"static vs dygraph output {np.abs(fetched[1] - dense.numpy()).max():.2e}")


class Exported(Second):
    def forward(self, idx, val):
        return super().forward(sp.sparse_coo_tensor(idx, val, shape=[*SHAPE, 2]))


def make_pir(root: Path) -> None:
    """Paddle's PIR inference program of the backbone and the Predictor's output."""
    paddle.seed(11)
    layer = Exported()
    layer.eval()
    feed = inputs(30, 4, unsorted=False)
    specs = [paddle.static.InputSpec([4, None], "int64", "idx"), paddle.static.InputSpec([None, 2], "float32", "val")]
    folder = root / "pir_jit"
    folder.mkdir(parents=True, exist_ok=True)
    paddle.jit.save(paddle.jit.to_static(layer, input_spec=specs, full_graph=True), str(folder / "model"))
    config = paddle.inference.Config(str(folder / "model.json"), str(folder / "model.pdiparams"))
    config.disable_gpu()
    predictor = paddle.inference.create_predictor(config)
    for name in predictor.get_input_names():
        predictor.get_input_handle(name).copy_from_cpu(feed[name])
    predictor.run()
    out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    dygraph = layer(paddle.to_tensor(feed["idx"]), paddle.to_tensor(feed["val"])).numpy()
    np.savez(folder / "feed.npz", **feed)
    np.savez(folder / "expected.npz", out=out, dygraph=dygraph)
    same = out.shape == dygraph.shape and np.allclose(out, dygraph, atol=1e-5)
    nhwc = out.shape == dygraph.transpose(0, 2, 3, 1).shape and np.allclose(out, dygraph.transpose(0, 2, 3, 1),
                                                                             atol=1e-5)
    print(f"pir_jit: Predictor output {list(out.shape)}, dygraph {list(dygraph.shape)}: equal {same}, "
          f"equal to dygraph's NHWC {nhwc}")


# paddle.sparse's functions and layers PIR mode builds, each on pir_unary's input (its values in (0.1, 0.9) or
# their negatives): the elementwise ones, and reshape, sum and Softmax (also in legacy mode). Paddle's sum over several
# axes reduces the first only (docs/sparse.md): one axis here
UNARY = {"abs": sp.abs, "asin": sp.asin, "asinh": sp.asinh, "atan": sp.atan, "atanh": sp.atanh, "expm1": sp.expm1,
         "log1p": sp.log1p, "sin": sp.sin, "sinh": sp.sinh, "sqrt": sp.sqrt, "square": sp.square, "tan": sp.tan,
         "tanh": sp.tanh, "neg": sp.neg, "deg2rad": sp.deg2rad, "pow": lambda x: sp.pow(x, 2.5),
         "relu6": sp.nn.ReLU6(), "leaky_relu": sp.nn.LeakyReLU(0.3),
         "reshape": lambda x: sp.reshape(x, [2, 25, 5, 2]), "sum": lambda x: sp.sum(x, axis=3),
         "softmax": sp.nn.Softmax(), "cast": lambda x: sp.cast(x, index_dtype="int32", value_dtype="float64"),
         "isnan": lambda x: sp.isnan(sp.sqrt(x)), "add": lambda x: sp.add(x, sp.sin(x)),
         "add_bias": lambda x: sp.add(x, paddle.to_tensor([0.5, -1.0])), "values": lambda x: x.values(),
         "indices": lambda x: x.indices()}
DENSE_RESULTS = ("values", "indices")   # the rest give a sparse tensor, read back dense


class Unary(paddle.nn.Layer):
    def forward(self, idx, val):
        x = sp.sparse_coo_tensor(idx, val, shape=[*SHAPE, 2])
        return [function(x) if name in DENSE_RESULTS else function(x).to_dense() for name, function in UNARY.items()]


def make_pir_unary(root: Path) -> None:
    """pir_unary: model.json of every UNARY function on one input, the Predictor's outputs (out:<name>) and the
    gradients of each function's mean(out * r:<name>) in the input's values from dygraph (grad:<name>)."""
    rng = np.random.default_rng(12)
    feed = inputs(10, 5, unsorted=False)
    feed["val"] = rng.uniform(0.1, 0.9, feed["val"].shape).astype(np.float32) * np.where(
        rng.random(feed["val"].shape) < 0.3, -1, 1).astype(np.float32)
    folder = root / "pir_unary"
    folder.mkdir(parents=True, exist_ok=True)
    specs = [paddle.static.InputSpec([4, None], "int64", "idx"), paddle.static.InputSpec([None, 2], "float32", "val")]
    paddle.jit.save(paddle.jit.to_static(Unary(), input_spec=specs, full_graph=True), str(folder / "model"))
    config = paddle.inference.Config(str(folder / "model.json"), str(folder / "model.pdiparams"))
    config.disable_gpu()
    predictor = paddle.inference.create_predictor(config)
    for name in predictor.get_input_names():
        predictor.get_input_handle(name).copy_from_cpu(feed[name])
    predictor.run()
    expected = {f"out:{name}": predictor.get_output_handle(handle).copy_to_cpu()
                for name, handle in zip(UNARY, predictor.get_output_names())}
    for name, function in UNARY.items():
        x = sp.sparse_coo_tensor(paddle.to_tensor(feed["idx"]), paddle.to_tensor(feed["val"]), shape=[*SHAPE, 2])
        x.stop_gradient = False
        out = function(x) if name in DENSE_RESULTS else function(x).to_dense()
        if out.dtype in (paddle.bool, paddle.int64):   # isnan, indices: no gradient
            continue
        feed[f"r:{name}"] = rng.standard_normal(out.shape).astype(out.numpy().dtype)
        (out * paddle.to_tensor(feed[f"r:{name}"])).mean().backward()
        expected[f"grad:{name}"] = x.grad.values().numpy()
    np.savez(folder / "feed.npz", **feed)
    np.savez(folder / "expected.npz", **expected)
    print(f"pir_unary: {len(UNARY)} functions")


def main(argv: list[str]) -> None:
    root = Path(argv[0])
    if PIR:
        make_pir(root)
        make_pir_unary(root)
        return
    for case in argv[1:] or CASES:
        make(case, root)
    if not argv[1:]:
        subprocess.run([sys.executable, __file__, str(root), "pir_jit"], check=True)


if __name__ == "__main__":
    main(sys.argv[1:])
