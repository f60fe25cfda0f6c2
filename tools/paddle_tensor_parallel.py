"""Programs of each rank of a 2-way tensor-parallel job, built by Paddle 3.3.1's own mp layers
(VocabParallelEmbedding, ColumnParallelLinear, RowParallelLinear, ParallelCrossEntropy) without launching
processes: the launch environment is faked (PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM, ...), and the layers get the
model-parallel group as mp_group (fleet.init in static mode makes no hybrid group: the layers' default lookup fails
with an AssertionError in topology.get_group('model')). Paddle cannot run them on one CPU process (c_identity's CPU
kernel throws "Do not support c_identity for cpu kernel now"), so the numbers come from the single-device model
(paddle.nn.Embedding and Linear, softmax_with_cross_entropy), which Paddle runs on CPU.

Written to tests/data/paddle/tensor_parallel/:
    <case>/rank<r>/forward.pb, backward.pb (Paddle's append_backward), program.json (the forward translated to PIR
        by paddle.pir.translate_to_pir, fetching the loss), backward.json (Paddle's legacy backward translated)
    <case>/rank<r>/meta.json   params (shape, split axis), loss, what Paddle's backward did (its errors, verbatim)
    <case>/reference.npz  the single-device model: feed, full parameters, loss and gradients (Paddle's numbers)
    ops_translated.json, ops_in_place.json   every collective op's PIR form, as Paddle names it (no numbers)
Cases: mlp (embedding, column, row, column gathered by c_concat, head, cross entropy) and split (also a row layer
whose input is split by c_split, whose backward Paddle cannot build). Not part of the package: needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_tensor_parallel.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "tensor_parallel"
NRANKS, VOCAB, HIDDEN, FFN, ROWS, STEPS = 2, 10, 6, 8, 4, 3


def model(paddle, parallel: bool, split: bool, group=None):
    """The model's layers: tensor-parallel ones (with ``group``) or their single-device counterparts."""
    from paddle.distributed.fleet.layers.mpu import mp_layers as mp

    nn = paddle.nn
    if parallel:
        layers = [mp.VocabParallelEmbedding(VOCAB, HIDDEN, mp_group=group),
                  mp.ColumnParallelLinear(HIDDEN, FFN, has_bias=True, gather_output=False, mp_group=group),
                  mp.RowParallelLinear(FFN, HIDDEN, has_bias=True, input_is_parallel=True, mp_group=group),
                  mp.ColumnParallelLinear(HIDDEN, FFN, has_bias=True, gather_output=True, mp_group=group)]
        if split:
            layers.append(mp.RowParallelLinear(FFN, HIDDEN, has_bias=False, input_is_parallel=False, mp_group=group))
        layers.append(mp.ColumnParallelLinear(HIDDEN if split else FFN, VOCAB, has_bias=False, gather_output=False,
                                              mp_group=group))
        return layers
    layers = [nn.Embedding(VOCAB, HIDDEN), nn.Linear(HIDDEN, FFN), nn.Linear(FFN, HIDDEN), nn.Linear(HIDDEN, FFN)]
    if split:
        layers.append(nn.Linear(FFN, HIDDEN, bias_attr=False))
    return [*layers, nn.Linear(HIDDEN if split else FFN, VOCAB, bias_attr=False)]


def build(paddle, parallel: bool, split: bool, group=None):
    """(main program, loss, the layers) of the model, forward only."""
    main = paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, paddle.static.Program()):
        ids = paddle.static.data("ids", [ROWS, STEPS], "int64")
        label = paddle.static.data("label", [ROWS, STEPS, 1], "int64")
        layers = model(paddle, parallel, split, group)
        relu = paddle.nn.functional.relu
        h = relu(layers[1](layers[0](ids)))
        h = relu(layers[3](layers[2](h)))
        for layer in layers[4:-1]:
            h = layer(h)
        logits = layers[-1](h)
        if parallel:
            from paddle.distributed.fleet.layers.mpu import mp_layers as mp
            loss = mp.ParallelCrossEntropy(mp_group=group)(logits, label)
        else:
            loss = paddle.nn.functional.softmax_with_cross_entropy(logits, label)
        loss = paddle.mean(loss)
    return main, loss, layers


def first_line(exc: Exception) -> str:
    """The error's first line, and the line naming the op when Paddle's C++ adds one."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()] or [type(exc).__name__]
    return " ".join([lines[0], *[line for line in lines[1:] if line.startswith("[operator <")]])


def without_callstacks(program) -> None:
    """Drop the Python stack each op records (most of a program's bytes, and this machine's paths)."""
    for op in program.global_block().ops:
        op.desc.remove_attr("op_callstack")


def translated(paddle, desc):
    """The PIR program Paddle's translator makes of the legacy program, and its map legacy var -> PIR value."""
    paddle.pir.translate_to_pir(desc)   # without a first translation, the one with the map fails (null pointer)
    program, values = paddle.base.libpaddle.pir.translate_to_pir_with_param_map(desc)
    return program, {name: value[-1] if isinstance(value, list) else value for name, value in values.items()}


def fetching(paddle, translation, names: list[str]):
    """The translated PIR program with a fetch op per name (the values the legacy vars of those names became)."""
    program, values = translation
    with paddle.pir_utils.IrGuard(), paddle.static.program_guard(program):
        for col, name in enumerate(names):
            paddle._pir_ops.fetch(values[name], name, col).persistable = True
    return program


def single_device_step(paddle, main, startup, loss, pairs, feed: dict, params: dict):
    """Paddle's run of one training step on one device from ``params`` (after the startup program): the fetched
    loss and parameter grads, and each parameter's stepped value."""
    import numpy as np
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        for name, value in params.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        values = exe.run(main, feed=feed, fetch_list=[loss.name] + [g.name for _, g in pairs])
        return values, {p.name: np.array(scope.var(p.name).get_tensor()) for p, _ in pairs}


def seeded_reference(paddle, main, startup, loss, pairs, seed: int, rows: int, width: int, classes: int) -> dict:
    """One single-device step on rows drawn from ``seed`` (x, label, then each parameter from N(0, 0.5)), as the
    dist tools store it: the feed, the loss, each parameter before and after the step, and its grad."""
    import numpy as np
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, width)).astype("float32")
    label = rng.integers(0, classes, (rows, 1)).astype("int64")
    params = {p.name: rng.normal(0, 0.5, p.shape).astype("float32") for p, _ in pairs}
    values, stepped = single_device_step(paddle, main, startup, loss, pairs, {"x": x, "label": label}, params)
    out = {"feed.x": x, "feed.label": label, "loss": values[0]}
    out |= {f"param.{k}": v for k, v in params.items()} | {f"stepped.{k}": v for k, v in stepped.items()}
    return out | {f"grad.{p.name}": g for (p, _), g in zip(pairs, values[1:])}


def model_parallel_rank(rank: int, nranks: int):
    """Paddle as rank ``rank`` of an ``nranks``-way model-parallel job sees itself (a faked launch environment, static
    mode, fleet initialised), for a process of its own: the paddle module."""
    os.environ.update(PADDLE_TRAINER_ID=str(rank), PADDLE_TRAINERS_NUM=str(nranks), FLAGS_selected_gpus=str(rank),
                      PADDLE_TRAINER_ENDPOINTS=",".join(f"127.0.0.1:{6170 + r}" for r in range(nranks)),
                      PADDLE_CURRENT_ENDPOINT=f"127.0.0.1:{6170 + rank}")
    import paddle
    from paddle.distributed import fleet

    paddle.enable_static()
    strategy = fleet.DistributedStrategy()
    strategy.hybrid_configs = {"dp_degree": 1, "mp_degree": nranks, "pp_degree": 1}
    fleet.init(is_collective=True, strategy=strategy)
    return paddle


def rank_programs(case: str, rank: int) -> dict:
    """Run in a process of its own (the faked environment names one rank): write the rank's programs."""
    paddle = model_parallel_rank(rank, NRANKS)
    from paddle.base import core
    from paddle.distributed.communication.group import Group

    group = Group(rank, 1, list(range(NRANKS)), name="model")
    main, loss, layers = build(paddle, True, case == "split", group)
    directory = OUT / case / f"rank{rank}"
    directory.mkdir(parents=True)
    without_callstacks(main)
    (directory / "forward.pb").write_bytes(main.desc.serialize_to_string())
    forward_desc = core.ProgramDesc(main.desc)
    params = {p.name: {"shape": list(p.shape), "split_axis": getattr(p, "split_axis", None)
                       if getattr(p, "is_distributed", False) else None}
              for layer in layers for p in layer.parameters()}
    report = {"params": params, "loss": loss.name, "ops": [op.type for op in main.global_block().ops]}
    try:
        with paddle.static.program_guard(main):
            pairs = paddle.static.append_backward(loss)
        without_callstacks(main)
        (directory / "backward.pb").write_bytes(main.desc.serialize_to_string())
        grads = [g.name for _, g in pairs]
        program = fetching(paddle, translated(paddle, main.desc), [loss.name, *grads])
        core.serialize_pir_program(program, str(directory / "backward.json"), True, False, True)
        report["grads"] = {p.name: g.name for p, g in pairs}
    except Exception as exc:  # noqa: BLE001 - what Paddle says is the fixture's fact
        report["legacy_backward_error"] = first_line(exc)
    report["pir_backward"] = pir_backward(paddle, translated(paddle, forward_desc), loss.name)
    core.serialize_pir_program(fetching(paddle, translated(paddle, forward_desc), [loss.name]),
                               str(directory / "program.json"), True, False, True)
    return report


def pir_backward(paddle, translation, loss: str) -> str:
    """What Paddle's PIR backward (ir_backward.grad) gives for every parameter of the translated forward."""
    program, values = translation
    ops, value = program.global_block().ops, values[loss]
    params = [op for op in ops if op.name() == "builtin.parameter"]
    try:
        with paddle.pir_utils.IrGuard(), paddle.static.program_guard(program):
            grads = paddle.autograd.ir_backward.grad(value, [op.result(0) for op in params])
    except Exception as exc:  # noqa: BLE001
        return first_line(exc)
    missing = [op.attrs()["parameter_name"] for op, g in zip(params, grads) if g is None]
    return f"no gradient (None) for {len(missing)} of {len(params)} parameters: {missing}" if missing else "ok"


def reference(split: bool) -> dict:
    """The single-device model's numbers: Paddle runs it on CPU."""
    import numpy as np
    import paddle

    paddle.enable_static()
    main, loss, layers = build(paddle, False, split)
    with paddle.static.program_guard(main):
        pairs = paddle.static.append_backward(loss)
    rng = np.random.default_rng(7)
    feed = {"ids": rng.integers(0, VOCAB, (ROWS, STEPS)), "label": rng.integers(0, VOCAB, (ROWS, STEPS, 1))}
    params = {p.name: rng.normal(0, 0.5, p.shape).astype("float32") for layer in layers for p in layer.parameters()}
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        for name, value in params.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        values = paddle.static.Executor(paddle.CPUPlace()).run(main, feed=feed,
                                                               fetch_list=[loss.name] + [g.name for _, g in pairs])
    out = {f"feed.{k}": v for k, v in feed.items()} | {f"param.{k}": v for k, v in params.items()}
    return out | {"loss": values[0]} | {f"grad.{p.name}": g for (p, _), g in zip(pairs, values[1:])}


# every collective op, as the legacy ops Paddle's translator names (its PIR op, slots, attributes)
COLLECTIVES = [
    ("c_identity", {"X": "x"}, {"Out": "identity"},
     {"ring_id": 1, "use_calc_stream": True, "use_model_parallel": True}),
    ("mp_allreduce_sum", {"X": "x"}, {"Out": "summed"}, {"ring_id": 1}),
    ("all_reduce", {"x": "x"}, {"out": "reduced"}, {"ring_id": 1, "reduce_type": 1}),
    ("c_split", {"X": "x"}, {"Out": "split"}, {"ring_id": 1, "rank": 1, "nranks": 2, "use_model_parallel": True}),
    ("c_concat", {"X": "x"}, {"Out": "joined"}, {"ring_id": 1, "rank": 1, "nranks": 2, "use_calc_stream": True,
                                                "use_model_parallel": True}),
    ("all_gather", {"x": "x"}, {"out": "gathered"}, {"ring_id": 1, "nranks": 2}),
    ("reduce_scatter", {"x": "x"}, {"out": "scattered"}, {"ring_id": 1, "nranks": 2}),
    ("broadcast", {"x": "x"}, {"out": "broadcast"}, {"ring_id": 1, "root": 1}),
    ("barrier", {"X": "x"}, {"Out": "passed"}, {"ring_id": 1}),
    ("c_sync_calc_stream", {"X": "x"}, {"Out": "calc"}, {}),
    ("c_sync_comm_stream", {"X": "x"}, {"Out": "x"}, {"ring_id": 1}),
    ("c_embedding", {"W": "x", "Ids": "ids"}, {"Out": "looked"}, {"start_index": 3, "vocab_size": 8}),
    ("c_softmax_with_cross_entropy", {"Logits": "x", "Label": "ids"}, {"Softmax": "softmax", "Loss": "loss"},
     {"ring_id": 1, "rank": 1, "nranks": 2, "ignore_index": -1}),
]


def every_collective() -> None:
    """ops_translated.json: each of COLLECTIVES on x, translated; ops_in_place.json: the in-place forms,
    c_allreduce_sum and c_softmax_with_multi_label_cross_entropy, which only Paddle's PIR API writes (paddle._pir_ops;
    its translator fails on the legacy multi-label op: "Input logits not found when parsing op")."""
    import paddle
    from paddle import _pir_ops as pir_ops
    from paddle.base import core

    paddle.enable_static()
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        paddle.static.data("x", [4, 6], "float32")
        paddle.static.data("ids", [4, 1], "int64")
    block = main.global_block()
    for op_type, inputs, outputs, attrs in COLLECTIVES:
        for name in outputs.values():
            if not block.has_var(name):
                block.create_var(name=name, shape=[4, 6], dtype="float32")
        desc = block.desc.append_op()
        desc.set_type(op_type)
        for slot, name in inputs.items():
            desc.set_input(slot, [name])
        for slot, name in outputs.items():
            desc.set_output(slot, [name])
        for name, value in attrs.items():
            desc._set_attr(name, value)
    main._sync_with_cpp()
    fetched = [name for _, _, outputs, _ in COLLECTIVES for name in outputs.values() if name != "x"]
    core.serialize_pir_program(fetching(paddle, translated(paddle, main.desc), fetched),
                               str(OUT / "ops_translated.json"), True, False, True)
    with paddle.pir_utils.IrGuard():
        program = paddle.static.Program()
        with paddle.static.program_guard(program, paddle.static.Program()):
            x, label = paddle.static.data("x", [4, 6], "float32"), paddle.static.data("label", [4, 1], "int64")
            dloss = paddle.static.data("dloss", [4, 1], "float32")
            pir_ops.c_identity_(x, 1, True, True)
            pir_ops.mp_allreduce_sum_(x, 1)
            pir_ops.c_allreduce_sum(x, 1, True, True)
            pir_ops.c_allreduce_sum_(x, 1, True, True)
            pir_ops.all_reduce_(x, 1, 0)
            pir_ops.broadcast_(x, 1, 0)
            pir_ops.sync_calc_stream_(x)
            pir_ops.c_softmax_with_cross_entropy_grad_(x, label, dloss, -100, 1, 0, 2)
            weight = paddle.static.data("weight", [4, 1], "float32")
            pir_ops.c_softmax_with_multi_label_cross_entropy(x, label, weight, -100, False, 1, 0, 2)
        core.serialize_pir_program(program, str(OUT / "ops_in_place.json"), True, False, True)


def main() -> None:
    os.environ["FLAGS_enable_pir_api"] = "0"   # legacy static programs, before paddle is imported
    if len(sys.argv) == 3:   # a child: one rank of one case
        print(json.dumps(rank_programs(sys.argv[1], int(sys.argv[2]))))
        return
    import numpy as np

    if OUT.exists():
        shutil.rmtree(OUT)
    for case in ("mlp", "split"):
        for rank in range(NRANKS):
            report = subprocess.run([sys.executable, __file__, case, str(rank)], check=True, capture_output=True,
                                    text=True).stdout.splitlines()[-1]
            (OUT / case / f"rank{rank}" / "meta.json").write_text(json.dumps(json.loads(report), indent=1) + "\n")
        meta = {"paddle_version": __import__("paddle").__version__, "nranks": NRANKS}
        (OUT / case / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        np.savez_compressed(OUT / case / "reference.npz", **reference(case == "split"))
    every_collective()


if __name__ == "__main__":
    main()
