"""Build test fixtures with a real PaddlePaddle: a forward program, Paddle's own backward program,
inputs, parameters, and the loss and gradients Paddle computes. Not part of the package: it needs
paddlepaddle (3.x, legacy IR), which gradc does not depend on.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_fixtures.py tests/data/paddle

A case's float64 reference (loss64.npy, grads64.npz: Paddle's float64 run of its own backward program, which
tools/run_in_paddle.py judges float32 rounding by) is written with the case, or alone for an existing fixture:

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_fixtures.py --float64 tests/data/paddle/vision
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle.base.backward import append_backward
from paddle.base.layer_helper import LayerHelper

paddle.enable_static()


def legacy_op(op_type: str, inputs: dict, attrs: dict, out_slot: str = "Out", dtype: str = "float32"):
    """Append a legacy op directly: in 3.3.1 several Python APIs (matmul, gelu, exp, sigmoid, ...)
    build only PIR ops, while the programs users saved with older Paddle hold these legacy ops."""
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={out_slot: out}, attrs=attrs)
    return out


def unary(op_type: str, x, **attrs):
    return legacy_op(op_type, {"X": x}, attrs)


def matmul(x, y, transpose_y=False):
    return legacy_op("matmul_v2", {"X": x, "Y": y}, {"trans_x": False, "trans_y": transpose_y})


def transformer(rng):
    """Embedding, layer_norm, one attention head pair, gelu MLP, residuals, mean-pooled classifier."""
    batch, seq, vocab, dim, heads = 2, 5, 20, 8, 2
    ids = paddle.static.data("ids", [batch, seq], "int64")
    label = paddle.static.data("label", [batch, 1], "int64")
    emb = paddle.nn.Embedding(vocab, dim, padding_idx=0)
    h = F.layer_norm(emb(ids), [dim])
    q, k, v = (paddle.nn.Linear(dim, dim)(h) for _ in range(3))

    def split_heads(t):
        return paddle.transpose(paddle.reshape(t, [batch, seq, heads, dim // heads]), [0, 2, 1, 3])

    scores = paddle.scale(matmul(split_heads(q), split_heads(k), transpose_y=True), (dim // heads) ** -0.5)
    attn = matmul(F.softmax(scores, axis=-1), split_heads(v))
    attn = paddle.reshape(paddle.transpose(attn, [0, 2, 1, 3]), [batch, seq, dim])
    h = paddle.add(h, F.dropout(paddle.nn.Linear(dim, dim)(attn), p=0.1, training=False))
    mlp = unary("gelu", paddle.nn.Linear(dim, 2 * dim)(h), approximate=False)
    h = F.layer_norm(paddle.add(h, paddle.nn.Linear(2 * dim, dim)(mlp)), [dim])
    logits = paddle.nn.Linear(dim, 3)(paddle.mean(h, axis=1))
    loss = paddle.mean(F.cross_entropy(logits, label))
    feed = {"ids": rng.integers(0, vocab, (batch, seq)).astype("int64"),
            "label": rng.integers(0, 3, (batch, 1)).astype("int64")}
    feed["ids"][0, -1] = 0  # a padding token
    return loss, feed, "embedding -> layer_norm -> 2-head attention -> gelu MLP -> mean pool -> linear -> CE"


def vision(rng):
    """Strided/grouped/depthwise convs, batch_norm, pools, conv transpose, activations."""
    img = paddle.static.data("img", [2, 4, 8, 8], "float32")
    label = paddle.static.data("label", [2, 1], "int64")
    h = paddle.nn.Conv2D(4, 8, 3, stride=2, padding="SAME", groups=2)(img)
    h = F.hardswish(paddle.nn.BatchNorm2D(8)(h))
    h = paddle.nn.Conv2D(8, 8, 3, padding=1, groups=8)(h)  # depthwise
    h = F.leaky_relu(h, 0.1)
    h = F.avg_pool2d(h, 2, stride=1, padding=1, exclusive=True)
    h = paddle.nn.Conv2DTranspose(8, 4, 3, stride=2, padding=1, output_padding=1)(h)
    h = legacy_op("elementwise_mul", {"X": unary("sigmoid", h), "Y": F.elu(h)}, {"axis": -1})
    h = F.adaptive_avg_pool2d(F.max_pool2d(h, 2, stride=2, ceil_mode=True), 2)
    h = paddle.nn.GroupNorm(2, 4)(h)
    logits = paddle.nn.Linear(16, 5)(paddle.flatten(h, 1))
    loss = paddle.mean(F.cross_entropy(logits, label))
    feed = {"img": rng.standard_normal((2, 4, 8, 8)).astype("float32"),
            "label": rng.integers(0, 5, (2, 1)).astype("int64")}
    return loss, feed, "grouped/strided conv -> batch_norm -> hardswish -> depthwise conv -> pools -> conv transpose"


def tensor_ops(rng):
    """Slicing, gathering, stacking, padding, elementwise math and several losses in one graph."""
    x = paddle.static.data("x", [3, 6], "float32")
    x.stop_gradient = False
    y = paddle.static.data("y", [3, 6], "float32")
    y.stop_gradient = False
    index = paddle.static.data("index", [2], "int64")
    w = paddle.create_parameter([6, 4], "float32")
    a = matmul(x, w)
    b = paddle.concat([a[:, 1:3], paddle.gather(a, index, axis=1)], axis=1)
    c = paddle.stack([b, paddle.tile(b[:, :1], [1, 4])], axis=0)
    d = paddle.add(paddle.cumsum(paddle.clip(c, -1.0, 1.0), axis=2),
                   paddle.pow(paddle.scale(unary("abs", c), 1.0, bias=1.0), 1.5))
    e = paddle.where(d > 0.5, unary("exp", paddle.scale(d, 0.1)),
                     unary("sqrt", paddle.scale(paddle.square(d), 1.0, bias=1.0)))
    row_sums = paddle.unsqueeze(legacy_op("reduce_sum", {"X": y}, {"dim": [1], "keep_dim": False}), [0, 2])
    f = legacy_op("elementwise_max", {"X": e, "Y": paddle.scale(row_sums, 0.1)}, {"axis": -1})
    g = F.pad(paddle.unsqueeze(unary("log", paddle.scale(f, 1.0, bias=2.0)), [0]), [1, 0, 0, 2], mode="reflect")
    kl = legacy_op("kldiv_loss", {"X": F.log_softmax(x), "Target": F.softmax(y)}, {"reduction": "batchmean"},
                   out_slot="Loss")
    bce = paddle.mean(legacy_op("bce_loss", {"X": unary("sigmoid", x), "Label": unary("sigmoid", y)}, {}))
    loss = paddle.add(paddle.add(paddle.mean(g), kl), paddle.add(bce, F.binary_cross_entropy_with_logits(x, y)))
    feed = {"x": rng.standard_normal((3, 6)).astype("float32"), "y": rng.standard_normal((3, 6)).astype("float32"),
            "index": np.array([2, 0], dtype="int64")}
    return loss, feed, "slice/gather/concat/stack/tile/cumsum/clip/pow/where/max/pad + kl_div and bce losses"


CASES = {"transformer": transformer, "vision": vision, "tensor_ops": tensor_ops}

# Training fixtures: the mlp trained for a few steps by each optimizer, with its hyperparameters.
OPTIMIZERS = {
    "train_sgd": ("sgd", {"learning_rate": 0.1}),
    "train_momentum": ("momentum", {"learning_rate": 0.05, "momentum": 0.8, "use_nesterov": True}),
    "train_adam": ("adam", {"learning_rate": 0.01, "beta1": 0.85, "beta2": 0.99, "epsilon": 1e-6}),
    "train_adamw": ("adamw", {"learning_rate": 0.01, "weight_decay": 0.05}),
}
PADDLE_OPTIMIZERS = {"sgd": "SGD", "momentum": "Momentum", "adam": "Adam", "adamw": "AdamW"}
TRAIN_STEPS = 3


def build_training(case: str, out_dir: Path, seed: int = 2024) -> None:
    kind, hyper = OPTIMIZERS[case]
    paddle.seed(seed)
    rng = np.random.default_rng(seed)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [8, 6], "float32")
        label = paddle.static.data("label", [8, 1], "int64")
        hidden = F.relu(paddle.nn.Linear(6, 16)(x))
        loss = paddle.mean(F.cross_entropy(paddle.nn.Linear(16, 4)(hidden), label))
        forward = main.desc.serialize_to_string()
        getattr(paddle.optimizer, PADDLE_OPTIMIZERS[kind])(**hyper).minimize(loss)
    feed = {"x": rng.standard_normal((8, 6)).astype("float32"), "label": rng.integers(0, 4, (8, 1)).astype("int64")}
    executor = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.global_scope()
    executor.run(startup)
    params = [p.name for p in main.all_parameters()]
    initial = {p: np.array(scope.find_var(p).get_tensor()) for p in params}
    losses = [float(executor.run(main, feed=feed, fetch_list=[loss.name])[0]) for _ in range(TRAIN_STEPS)]
    trained = {p: np.array(scope.find_var(p).get_tensor()) for p in params}
    out = out_dir / case
    out.mkdir(parents=True, exist_ok=True)
    (out / "forward.pb").write_bytes(forward)
    (out / "train.pb").write_bytes(main.desc.serialize_to_string())
    (out / "startup.pb").write_bytes(startup.desc.serialize_to_string())
    np.savez(out / "feed.npz", **feed)
    np.savez(out / "params.npz", **initial)
    np.savez(out / "trained.npz", **trained)
    np.save(out / "losses.npy", np.array(losses, dtype=np.float32))
    meta = {"case": case, "seed": seed, "paddle_version": paddle.__version__, "loss": loss.name,
            "optimizer": kind, "hyperparameters": hyper, "steps": TRAIN_STEPS,
            "description": f"fc(6->16)+relu -> fc(->4) -> cross entropy, {TRAIN_STEPS} steps of {kind} on one batch"}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{case}: losses {losses}")


def write_float64(fixture: Path) -> None:
    """Paddle's run of the fixture's backward.pb with every float32 var, value and dtype attribute made float64:
    the reference where float32 rounding (Paddle's own run moves by it between runs) reaches a tolerance."""
    fp32, fp64 = paddle.base.core.VarDesc.VarType.FP32, paddle.base.core.VarDesc.VarType.FP64
    program = paddle.static.Program.parse_from_string((fixture / "backward.pb").read_bytes())
    for block in program.blocks:
        for var in block.vars.values():
            if var.type == paddle.base.core.VarDesc.VarType.LOD_TENSOR and var.desc.dtype() == fp32:
                var.desc.set_dtype(fp64)
        for op in block.ops:
            for name in ("dtype", "out_dtype", "in_dtype"):
                if op.desc.has_attr(name) and op.desc.attr(name) == int(fp32):
                    op.desc._set_attr(name, int(fp64))
    with np.load(fixture / "feed.npz") as feed, np.load(fixture / "params.npz") as params, \
            np.load(fixture / "grads.npz") as grads:
        widen = {k: v.astype("float64") if v.dtype == np.float32 else v
                 for k, v in {**dict(feed), **dict(params)}.items()}
        fetch = [json.loads((fixture / "meta.json").read_text())["loss"], *grads.files]
        scope = paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            for name in params.files:
                scope.var(name).get_tensor().set(widen[name], paddle.CPUPlace())
            values = paddle.static.Executor(paddle.CPUPlace()).run(
                program, feed={k: widen[k] for k in feed.files}, fetch_list=fetch)
    np.save(fixture / "loss64.npy", values[0])
    np.savez(fixture / "grads64.npz", **dict(zip(fetch[1:], values[1:])))


def build(case: str, out_dir: Path, seed: int = 2024) -> None:
    paddle.seed(seed)
    rng = np.random.default_rng(seed)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        loss, feed, description = CASES[case](rng)
        forward = main.desc.serialize_to_string()
        params_grads = append_backward(loss)
    inputs = [name for name in feed if not main.global_block().var(name).stop_gradient]
    executor = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.global_scope()
    executor.run(startup)
    # every persistable value before the run (batch_norm's running stats too, which the run updates)
    params = {v.name: np.array(scope.find_var(v.name).get_tensor()) for v in main.list_vars()
              if v.persistable and scope.find_var(v.name) is not None and v.name not in ("feed", "fetch")}
    fetch = [loss.name] + [g.name for _, g in params_grads] + [f"{name}@GRAD" for name in inputs]
    values = executor.run(main, feed=feed, fetch_list=fetch)
    out = out_dir / case
    out.mkdir(parents=True, exist_ok=True)
    (out / "forward.pb").write_bytes(forward)
    (out / "backward.pb").write_bytes(main.desc.serialize_to_string())
    np.savez(out / "feed.npz", **feed)
    np.savez(out / "params.npz", **params)
    np.savez(out / "grads.npz", **dict(zip(fetch[1:], values[1:])))
    np.save(out / "loss.npy", values[0])
    meta = {"case": case, "seed": seed, "paddle_version": paddle.__version__, "description": description,
            "loss": loss.name, "params_grads": [[p.name, g.name] for p, g in params_grads],
            "input_grads": {name: f"{name}@GRAD" for name in inputs},
            "ops_forward_block0": [op.type for op in paddle.static.Program.parse_from_string(forward)
                                   .global_block().ops]}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    write_float64(out)
    ops = sorted(set(meta["ops_forward_block0"]))
    print(f"{case}: loss {float(values[0]):.6f}, {len(params_grads)} params, ops: {ops}")


def build_inference(case: str, out_dir: Path, seed: int = 2024) -> None:
    """A model saved the way Paddle users ship them: save_inference_model's .pdmodel (with feed/fetch
    ops) and .pdiparams (combined parameters), plus an input and the output Paddle computes."""
    paddle.seed(seed)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [-1, 6], "float32")
        hidden = paddle.nn.BatchNorm1D(8)(F.relu(paddle.nn.Linear(6, 8)(x)))
        out = F.softmax(paddle.nn.Linear(8, 3)(hidden))
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    out_dir = out_dir / case
    out_dir.mkdir(parents=True, exist_ok=True)
    paddle.static.save_inference_model(str(out_dir / "model"), [x], [out], executor, program=main)
    feed = {"x": np.random.default_rng(seed).standard_normal((4, 6)).astype("float32")}
    program, feeds, fetches = paddle.static.load_inference_model(str(out_dir / "model"), executor)
    (expected,) = executor.run(program, feed=feed, fetch_list=fetches)
    np.savez(out_dir / "feed.npz", **feed)
    np.save(out_dir / "expected.npy", expected)
    meta = {"case": case, "seed": seed, "paddle_version": paddle.__version__, "output": fetches[0].name,
            "description": "save_inference_model of fc -> relu -> batch_norm (test mode) -> fc -> softmax"}
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{case}: output {fetches[0].name} {expected.shape}")


if __name__ == "__main__" and sys.argv[1:2] == ["--float64"]:
    for fixture in sys.argv[2:]:
        write_float64(Path(fixture))
elif __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle")
    for name in sys.argv[2:] or [*CASES, *OPTIMIZERS, "inference"]:
        builder = build_training if name in OPTIMIZERS else build_inference if name == "inference" else build
        builder(name, target)
