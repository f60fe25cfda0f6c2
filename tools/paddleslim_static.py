"""Check gradc on the static quantization-aware training programs PaddleSlim's quant_aware writes (Paddle's own
QuantizationTransformPass / QuantizationTransformPassV2, AddQuantDequantPass(V2) and OutScaleForTrainingPass), and on
the inference program its convert freezes them into; and on its pruned and distilled programs
(tools/paddleslim_compress.py). One config is MODEL:QUANT:OPTIMIZER, QUANT one of QUANTS or prune or distill
(SMALLEST without configs):

    FLAGS_enable_pir_api=0 PYTHONPATH=PADDLESLIM_DIR:DEPS:tools /path/to/paddle/python tools/paddleslim_static.py \
        paddle OUT_DIR [CONFIG ...]
    PYTHONPATH=src:tools .venv/bin/python tools/paddleslim_static.py gradc OUT_DIR

The Paddle step builds the model with Paddle's static layers, applies its optimizer's minimize and then quant_aware to
the training program (as PaddleSlim's QAT demo does: the passes quantize the forward and point the grad ops at the
quantized values, the straight-through estimator), and writes OUT_DIR/<config>/ as tools/paddlerec_static.py does:
train.pb (that program), forward.pb (quant_aware of the forward alone), params.npz (every persistable var, the scales
the passes made in the scope included), feed.npz, step1.npz and step2.npz (Paddle's loss, first-step gradients and
persistable vars after each step), meta.json. Paddle's minimize of forward.pb itself (append_backward through the
quantized forward, whose quantize and dequantize ops have no gradient in Paddle) is recorded too (own_step*.npz), and
convert's frozen inference program with Paddle's outputs on the feed (frozen.pb, frozen.npz).
The gradc step loads, verifies and runs train.pb for two steps, compiles forward.pb with the same optimizer
(gradc.minimize) and runs it against both of Paddle's, and runs frozen.pb.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from paddlerec_static import _param_attrs, _relative, _run_steps
from suite_export import report_each

CLASSES, BATCH, SEQ, WIDTH = 5, 4, 6, 16
QUANT_TYPES = ["conv2d", "depthwise_conv2d", "mul", "matmul", "matmul_v2", "elementwise_add", "pool2d"]
QUANTS = {   # PaddleSlim's default config is QuantizationTransformPassV2's quantize_linear / dequantize_linear
    "default": {},
    "channel": {"onnx_format": False, "weight_quantize_type": "channel_wise_abs_max"},
    "abs_max": {"onnx_format": False, "weight_quantize_type": "abs_max"},
    "range": {"onnx_format": False, "weight_quantize_type": "abs_max", "activation_quantize_type": "range_abs_max"},
    # PaddleSlim's PACT demo (demo/quant/pact_quant_aware): its config, a learned clip before each activation quantizer
    "pact": {"onnx_format": False, "weight_quantize_type": "channel_wise_abs_max"},
}
PACT_THRESHOLD = 1.0   # the demo collects each activation's abs max first; its default 20 clips nothing here
QUANT_OPS = {"quantize_linear", "dequantize_linear", "fake_quantize_abs_max", "fake_channel_wise_quantize_abs_max",
             "fake_quantize_moving_average_abs_max", "fake_quantize_range_abs_max", "fake_dequantize_max_abs",
             "fake_channel_wise_dequantize_max_abs", "fake_quantize_dequantize_moving_average_abs_max",
             "moving_average_abs_max_scale"}
OPTIMIZERS = {"sgd": {"lr": 0.1}, "momentum": {"lr": 0.05, "momentum": 0.9}, "adam": {"lr": 0.01}}
SMALLEST = [f"{model}:{quant}:{optimizer}" for model, optimizer in
            (("convbn", "sgd"), ("mlp", "momentum"), ("gru", "adam"), ("lstm", "sgd"), ("transformer", "adam"))
            for quant in QUANTS] + ["convbn:prune:momentum", "convbn:distill:adam"]   # tools/paddleslim_compress.py


def _model(kind: str):
    """The feeds and loss of a small model built with Paddle's static layers."""
    import paddle
    import paddle.nn.functional as F
    label = paddle.static.data("label", [-1, 1], "int64")
    if kind == "convbn":
        x = paddle.static.data("image", [-1, 3, 8, 8])
        h = paddle.static.nn.batch_norm(paddle.static.nn.conv2d(x, 4, 3, padding=1, bias_attr=False), act="relu")
        h = paddle.static.nn.conv2d(F.max_pool2d(h, 2), 4, 3, padding=1, groups=4, act="relu")   # depthwise
        logits = paddle.static.nn.fc(F.avg_pool2d(h, 2), CLASSES)
    elif kind == "mlp":
        x = paddle.static.data("x", [-1, WIDTH])
        logits = paddle.static.nn.fc(paddle.static.nn.fc(x, 32, activation="relu"), CLASSES)
    else:
        x = paddle.static.data("x", [-1, SEQ, WIDTH])
        if kind == "transformer":
            h = paddle.nn.TransformerEncoderLayer(WIDTH, 2, 32, dropout=0.0)(x)
        else:
            h, _ = (paddle.nn.GRU if kind == "gru" else paddle.nn.LSTM)(WIDTH, WIDTH)(x)
        logits = paddle.nn.Linear(WIDTH, CLASSES)(paddle.mean(h, axis=1))
    return x, label, paddle.mean(F.cross_entropy(logits, label)), logits


def _optimizer(name: str):
    import paddle
    settings = dict(OPTIMIZERS[name])
    lr = settings.pop("lr")
    kind = {"sgd": paddle.optimizer.SGD, "momentum": paddle.optimizer.Momentum, "adam": paddle.optimizer.Adam}[name]
    return kind(learning_rate=lr, **settings)


def paddle_step(out: Path, config: str) -> None:
    import paddle
    from paddle_legacy_shim import install
    from paddleslim.quant import quant_aware
    model, quant, optimizer = config.split(":")
    install()   # 3.3.1's paddle.matmul, ... (the transformer's) have no legacy static path of their own
    paddle.enable_static()
    paddle.seed(7)
    if quant in ("prune", "distill"):
        from paddleslim_compress import compressed_step
        compressed_step(out, model, quant, optimizer)
        return
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x, label, loss, logits = _model(model)
        x.stop_gradient = quant != "pact"   # as the demo has it: the pass splices the clip's backward into x@GRAD's
        forward, test = main.clone(), main.clone(for_test=True)
        _optimizer(optimizer).minimize(loss)
    place = paddle.CPUPlace()
    paddle.static.Executor(place).run(startup)
    settings = {**QUANTS[quant], "quantize_op_types": QUANT_TYPES}
    if quant == "pact":
        _pact_step(out, main, forward, place, settings, loss.name, [x, label], optimizer)
        return
    # the passes name their vars with a counter: each run from zero gives the forward the training program's names
    with paddle.utils.unique_name.guard():
        train = quant_aware(main, place, settings, for_test=False, return_program=True)
    with paddle.utils.unique_name.guard():
        quant_forward = quant_aware(forward, place, settings, for_test=False, return_program=True)
    _same_names(quant_forward, train)
    feed, params = record(out, quant_forward, train, main, loss.name, [x, label], optimizer)
    _own_minimize(out, quant_forward, loss.name, optimizer, feed, params)
    _frozen(out, test, settings, logits.name, feed, params)


def _pact(x):
    """PaddleSlim's PACT demo's act_preprocess_func: x clipped to [-u, u] by two relus, u a parameter of its own."""
    import paddle
    from paddle.base.layer_helper import LayerHelper
    helper = LayerHelper("pact", **locals())
    attr = paddle.ParamAttr(name=x.name + "_pact", initializer=paddle.nn.initializer.Constant(PACT_THRESHOLD),
                            regularizer=paddle.regularizer.L2Decay(0.0001), learning_rate=1)
    u_param = helper.create_parameter(attr=attr, shape=[1], dtype="float32")
    part_a = paddle.nn.functional.relu(x - u_param)
    part_b = paddle.nn.functional.relu(-u_param - x)
    return x - part_a + part_b


def _pact_step(out: Path, main, forward, place, settings: dict, loss: str, feeds: list, optimizer: str) -> None:
    """quant_aware with the demo's PACT: the transform pass builds each clip and its backward and optimizer (the
    demo's Momentum) in a program of its own and splices them into the training program's graph."""
    import paddle
    from paddleslim.quant import quant_aware
    exe = paddle.static.Executor(place)
    with paddle.utils.unique_name.guard():
        train = quant_aware(main, place, settings, for_test=False, return_program=True, act_preprocess_func=_pact,
                            optimizer_func=lambda: paddle.optimizer.Momentum(OPTIMIZERS["momentum"]["lr"],
                                                                             OPTIMIZERS["momentum"]["momentum"]),
                            executor=exe)
    quant_forward = train.clone()   # gradc's input: the training program's forward (Paddle's pass has no other)
    block = quant_forward.global_block()
    for index in reversed(range(len(block.ops))):
        if int(block.ops[index].attr("op_role")) & 3:   # Backward (1) or Optimize (2); Loss (256) stays
            block._remove_op(index)
    used = {name for op in block.ops for name in op.input_arg_names + op.output_arg_names}
    for name in [name for name, var in block.vars.items() if name not in used and not var.is_parameter]:
        block._remove_var(name)   # the gradients and optimizer states: gradc's compile names its own
    record(out, quant_forward, train, main, loss, feeds, optimizer)
    meta = json.loads((out / "meta.json").read_text())
    meta["param_attrs"] = {p.name: {"learning_rate": 1.0, "regularizer": ["L2Decay", 0.0001]}
                           for p in train.all_parameters() if p.name.endswith("_pact")}
    meta["params"] += sorted(meta["param_attrs"])
    (out / "meta.json").write_text(json.dumps(meta))


def record(out: Path, forward, train, main, loss: str, feeds: list, optimizer: str) -> tuple[dict, dict]:
    """Write the programs, every persistable var in the scope, a feed and Paddle's two steps of ``train`` (the first
    step's parameter gradients too); returns the feed and the persistable values."""
    import paddle
    from paddle_programs import without_callstacks
    scope, exe = paddle.static.global_scope(), paddle.static.Executor(paddle.CPUPlace())
    out.mkdir(parents=True, exist_ok=True)
    for name, program in (("forward", forward), ("train", train)):
        (out / f"{name}.pb").write_bytes(without_callstacks(program))
    persistable = sorted({v.name for p in (train, forward) for v in p.list_vars() if v.persistable
                          and v.name not in ("feed", "fetch") and scope.find_var(v.name) is not None
                          and scope.find_var(v.name).get_tensor()._is_initialized()})
    params = {name: np.array(scope.find_var(name).get_tensor()) for name in persistable}
    np.savez(out / "params.npz", **params)
    rng = np.random.default_rng(0)
    x, label = feeds
    feed = {x.name: rng.uniform(-1, 1, [BATCH, *x.shape[1:]]).astype("float32"),
            label.name: rng.integers(0, CLASSES, [BATCH, 1]).astype("int64")}
    np.savez(out / "feed.npz", **feed)
    block = train.global_block()
    grads = [g for g in (p.name + "@GRAD" for p in main.all_parameters()) if block.has_var(g)]
    for step in (1, 2):
        value, *grad_values = exe.run(train, feed=feed, fetch_list=[loss, *grads] if step == 1 else [loss])
        np.savez(out / f"step{step}.npz", **{"@loss": np.asarray(value)},
                 **{f"@grad:{g}": np.asarray(v) for g, v in zip(grads, grad_values)},
                 **{name: np.array(scope.find_var(name).get_tensor()) for name in persistable})
    meta = {"loss": loss, "optimizer": {"type": optimizer, **OPTIMIZERS[optimizer]}, "param_attrs": {},
            "params": [p.name for p in main.all_parameters()]}
    (out / "meta.json").write_text(json.dumps(meta))
    return feed, params


def _same_names(quant_forward, train) -> None:
    """Rename the scale and state vars of the forward's quantization ops to those of the training program's op on the
    same X, the first to the first (the passes number them in their graph's node order, which differs between the
    two, and two passes may each quantize one X)."""
    def state_vars(program) -> dict:
        found, seen = {}, {}
        for op in program.global_block().ops:
            if op.type in QUANT_OPS:
                key = (op.type, op.input("X")[0])
                seen[key] = seen.get(key, -1) + 1
                for slot in sorted(set(op.input_names + op.output_names) - {"X", "Y", "Out"}):
                    names = op.input(slot) if slot in op.input_names else op.output(slot)
                    found.update({(*key, seen[key], slot, i): name for i, name in enumerate(names)})
        return found

    theirs, block = state_vars(train), quant_forward.global_block()
    renames = {name: theirs[key] for key, name in state_vars(quant_forward).items() if theirs.get(key, name) != name}
    for name in renames:   # through temporary names: one var's new name may be another's old one
        block._rename_var(name, name + "@renaming")
    for name, new in renames.items():
        block._rename_var(name + "@renaming", new)


def _own_minimize(out: Path, quant_forward, loss: str, optimizer: str, feed: dict, params: dict) -> None:
    """Paddle's append_backward and optimizer on the quantized forward, two steps from the same values."""
    import paddle
    program, startup = quant_forward.clone(), paddle.static.Program()
    with paddle.static.program_guard(program, startup):
        _optimizer(optimizer).minimize(program.global_block().var(loss))
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        for name, value in params.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        names = [v.name for v in program.list_vars() if v.persistable and scope.find_var(v.name) is not None
                 and scope.find_var(v.name).get_tensor()._is_initialized()]
        for step in (1, 2):
            (value,) = exe.run(program, feed=feed, fetch_list=[loss])
            np.savez(out / f"own_step{step}.npz", **{"@loss": np.asarray(value)},
                     **{name: np.array(scope.find_var(name).get_tensor()) for name in names})


def _frozen(out: Path, test, settings: dict, logits: str, feed: dict, params: dict) -> None:
    """convert (QuantizationFreezePass, or QuantWeightPass for the V2 form) of quant_aware's test program."""
    import paddle
    from paddleslim.quant import convert, quant_aware
    place, scope = paddle.CPUPlace(), paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        for name, value in params.items():
            scope.var(name).get_tensor().set(value, place)
        quant_test = quant_aware(test, place, settings, scope=scope, for_test=True)
        frozen = convert(quant_test, place, settings, scope=scope)
        (out / "frozen.pb").write_bytes(frozen.desc.serialize_to_string())
        (value,) = paddle.static.Executor(place).run(frozen, feed=feed, fetch_list=[logits])
        persistable = [v.name for v in frozen.list_vars() if v.persistable and v.name not in ("feed", "fetch")]
        np.savez(out / "frozen.npz", **{"@logits": np.asarray(value)},
                 **{name: np.array(scope.find_var(name).get_tensor()) for name in persistable})
        (out / "frozen.json").write_text(json.dumps({"logits": logits}))


def gradc_step(check: Path) -> dict:
    import gradc
    from gradc.optimizers import minimize
    meta = json.loads((check / "meta.json").read_text())
    params, feed = dict(np.load(check / "params.npz")), dict(np.load(check / "feed.npz"))
    train = gradc.load(check / "train.pb")
    report = {"problems": gradc.verify(train)[:3],
              "paddle_program": _run_steps(train, params, feed, meta["loss"], check)}
    forward = gradc.load(check / "forward.pb")
    arguments = dict(meta["optimizer"])
    kind, lr = arguments.pop("type"), arguments.pop("lr")
    startup = minimize(forward, meta["loss"], kind, lr=lr, param_attrs=_param_attrs(meta), **arguments)
    report["gradc_compile"] = _run_steps(forward, params, feed, meta["loss"], check, startup)
    if (check / "frozen.pb").exists():   # a quantized program's (a pruned or distilled one is Paddle's minimize)
        report["vs_paddle_own_minimize"] = _compare_own(forward, startup, params, feed, meta, check)
        report["frozen"] = _run_frozen(check, feed)
    return report


def _compare_own(forward, startup, params: dict, feed: dict, meta: dict, check: Path) -> dict:
    """gradc's compile of the quantized forward against Paddle's minimize of the same program: the losses, and how
    many parameters each moves (Paddle's backward stops at the quantize and dequantize ops)."""
    import gradc
    scope, executor = gradc.Scope(), gradc.Executor()
    for name, value in params.items():
        scope[name] = value.copy()
    executor.run(startup, {}, [], scope)
    report = {"params": len(meta["params"])}
    for step in (1, 2):
        paddle = np.load(check / f"own_step{step}.npz")
        (value,) = executor.run(forward, feed, [meta["loss"]], scope)
        report[f"step{step}_loss"] = _relative(value, paddle["@loss"])
        if step == 1:
            report["paddle_moves"] = sum(not np.array_equal(paddle[p], params[p]) for p in meta["params"])
            report["gradc_moves"] = sum(not np.array_equal(scope[p], params[p]) for p in meta["params"])
    return report


def _run_frozen(check: Path, feed: dict) -> dict:
    import gradc
    frozen, values = gradc.load(check / "frozen.pb"), np.load(check / "frozen.npz")
    logits = json.loads((check / "frozen.json").read_text())["logits"]
    scope = gradc.Scope()
    for name in values.files:
        if not name.startswith("@"):
            scope[name] = values[name]
    (value,) = gradc.Executor().run(frozen, feed, [logits], scope)
    return {"problems": gradc.verify(frozen)[:3], "logits": _relative(value, values["@logits"]),
            "ops": sorted({op.type for op in frozen.blocks[0].ops if "quant" in op.type})}


def main() -> None:
    if sys.argv[1] == "paddle":
        from suite_export import export_each
        out, configs = Path(sys.argv[2]).resolve(), sys.argv[3:] or SMALLEST
        if len(configs) == 1 and "GRADC_SUITE_EXPORT_ONE" in __import__("os").environ:
            paddle_step(out / configs[0].replace(":", "__"), configs[0])
            print("OK")
            return
        export_each(__file__, Path("paddle"), out, configs, 900)
        return
    report_each(Path(sys.argv[2]), gradc_step)


if __name__ == "__main__":
    main()
