"""Programs of each stage of a 2-stage pipeline-parallel job, as Paddle 3.3.1's static PipelineOptimizer
(paddle.incubate.optimizer.PipelineOptimizer, what fleet's pipeline meta-optimizer wraps) splits them: stage 0 sends
its activation with send_v2 and receives its gradient with recv_v2, stage 1 the other way round, one ring a
direction. The optimizer is given the _pipeline_opt fleet would set (local_rank, ring ids, ...), so no process is
launched; on a CPU build its last step indexes an empty place list, so the module's core reports CUDA to
minimize() alone (nothing else is changed). Paddle cannot run the section programs (send_v2 needs a communicator);
the numbers are the single-device model's, one SGD step, which Paddle runs on CPU.

Written to tests/data/paddle/pipeline/:
    stage<s>/train.pb    the section program of stage s (forward, backward, gradient accumulation, sgd)
    stage<s>/startup.pb  its startup program (the initialisers of its parameters and learning rate)
    stage<s>/train.json  the same translated to PIR by paddle.pir.translate_to_pir
    micro2/stage<s>/     the same with num_microbatches=2 (2 rows a micro-batch; the loss gradient scaled by 1/2)
    meta.json            rings, the loss var, the params of each stage, Paddle's version
    reference.npz        the single-device model: feed, parameters before and after the step, loss, gradients
    translated.json      the other point-to-point ops and gradc.ops.collective_v2's, each translated to PIR (names
                         only), and the ones Paddle's translator refuses (p_send, p_recv, the 2.x c_ ops)
Paddle's SectionWorker runs a section's forward and backward ops once a micro-batch (each in its own scope, the
feed split along axis 0), its optimizer ops once; with one micro-batch that is the program in order. The reference
(one step of the single-device model on the whole batch of 4 rows) is the same for both.
Not part of the package: needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_pipeline.py
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paddle_tensor_parallel import fetching, single_device_step, translated, without_callstacks  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "pipeline"
ROWS, WIDTH, HIDDEN, CLASSES, LR = 4, 6, 8, 5, 0.1
FORWARD_RING, GLOBAL_RING = 20, 3


def build(paddle, staged: bool, rows: int = ROWS):
    """(main, startup, loss) of the model on batches of ``rows``: fc-relu on stage 0 (gpu:0), fc and the loss on
    stage 1 (gpu:1)."""
    import contextlib

    main, startup = paddle.static.Program(), paddle.static.Program()
    guard = paddle.static.device_guard if staged else (lambda _: contextlib.nullcontext())
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        with guard("gpu:0"):
            x = paddle.static.data("x", [rows, WIDTH], "float32")
            label = paddle.static.data("label", [rows, 1], "int64")
            h = paddle.nn.functional.relu(paddle.static.nn.fc(x, HIDDEN))
        with guard("gpu:1"):
            logits = paddle.static.nn.fc(h, CLASSES)
            loss = paddle.mean(paddle.nn.functional.cross_entropy(logits, label, reduction="none"))
    return main, startup, loss


class _CudaForMinimize:
    """paddle.base.core, but is_compiled_with_cuda() is True when PipelineOptimizer.minimize asks (for its place
    list, which a CPU build leaves empty)."""

    def __init__(self, core):
        self._core = core

    def __getattr__(self, name):
        return getattr(self._core, name)

    def is_compiled_with_cuda(self):
        return inspect.stack()[1].function == "minimize"

    @staticmethod
    def CUDAPlace(index):  # noqa: N802 - Paddle's name
        return f"gpu:{index}"


def stage_program(paddle, stage: int, micro_batches: int = 1):
    import paddle.incubate.optimizer.pipeline as pipeline

    pipeline.core = _CudaForMinimize(paddle.base.core)
    main, startup, loss = build(paddle, staged=True, rows=ROWS // micro_batches)
    main._pipeline_opt = {"local_rank": stage, "schedule_mode": "1F1B", "micro_batch_size": ROWS // micro_batches,
                          "ring_id": FORWARD_RING, "global_ring_id": GLOBAL_RING, "use_sharding": False,
                          "mp_degree": 1, "mp_rank": 0}
    with paddle.static.program_guard(main, startup):
        _, pairs, _, _, rings = pipeline.PipelineOptimizer(paddle.optimizer.SGD(LR),
                                                              num_microbatches=micro_batches).minimize(loss)
    section = main._pipeline_opt["section_program"]
    held = {op.input("Param")[0] for op in section.global_block().ops if op.type == "sgd"}
    return section, startup._pipeline_opt["startup_program"], loss.name, sorted(held), rings


def reference() -> dict:
    """The single-device model, one SGD step (Paddle on CPU)."""
    import numpy as np
    import paddle

    main, startup, loss = build(paddle, staged=False)
    with paddle.static.program_guard(main, startup):
        _, pairs = paddle.optimizer.SGD(LR).minimize(loss)
    rng = np.random.default_rng(11)
    feed = {"x": rng.standard_normal((ROWS, WIDTH)).astype("float32"),
            "label": rng.integers(0, CLASSES, (ROWS, 1)).astype("int64")}
    params = {p.name: rng.normal(0, 0.5, p.shape).astype("float32") for p, _ in pairs}
    values, stepped = single_device_step(paddle, main, startup, loss, pairs, feed, params)
    out = {f"feed.{k}": v for k, v in feed.items()} | {f"param.{k}": v for k, v in params.items()}
    out |= {f"stepped.{k}": v for k, v in stepped.items()}
    return out | {"loss": values[0]} | {f"grad.{p.name}": g for (p, _), g in zip(pairs, values[1:])}


# the other point-to-point ops and gradc.ops.collective_v2's, as the legacy ops Paddle's translator names
TRANSLATED = [("p_send", {"x": "x"}, {}, {"ring_id": 2, "peer": 1, "dynamic_shape": False}),
       ("p_recv", {}, {"out": "got"}, {"ring_id": 2, "peer": 1, "dtype": 5, "out_shape": [4, 6],
                                       "dynamic_shape": False}),
       ("partial_send", {"X": "x"}, {}, {"ring_id": 2, "peer": 1, "num": 2, "id": 1}),
       ("partial_recv", {}, {"Out": "part"}, {"ring_id": 2, "peer": 1, "num": 2, "id": 1, "dtype": 5,
                                              "out_shape": [4, 6]}),
       ("partial_allgather", {"X": "part"}, {"Out": "part"}, {"ring_id": 2, "nranks": 2, "rank": 1}),
       ("reduce", {"x": "x"}, {"out": "part"}, {"ring_id": 2, "reduce_type": 0, "root_id": 1}),
       ("c_scatter", {"X": "x"}, {"Out": "part"}, {"ring_id": 2, "root": 1, "nranks": 2, "use_calc_stream": True}),
       ("all_to_all", {"x": "x"}, {"out": "part"}, {"ring_id": 2}),
       *[(op, {"X": "x"}, {"Out": "part"}, {"ring_id": 2}) for op in (
           "c_allgather", "c_reducescatter", "c_broadcast", "c_allreduce_max", "c_reduce_sum")]]


def program_of(paddle, ops: list):
    """A legacy program of ``ops`` (TRANSLATED's entries) on x [4, 6] float32, vars part and got declared alike."""
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        paddle.static.data("x", [4, 6], "float32")
    block = main.global_block()
    for name in ("part", "got"):
        block.create_var(name=name, shape=[4, 6], dtype="float32")
    for op_type, inputs, outputs, attrs in ops:
        desc = block.desc.append_op()
        desc.set_type(op_type)
        for slot, name in inputs.items():
            desc.set_input(slot, [name])
        for slot, name in outputs.items():
            desc.set_output(slot, [name])
        for name, value in attrs.items():
            desc._set_attr(name, value)
    main._sync_with_cpp()
    return main


def every_translated(paddle) -> dict:
    """translated.json: the entries of TRANSLATED Paddle's translator takes, in one PIR program fetching part and
    part; returns the others' errors (each tried alone)."""
    from paddle.base import core

    refused, taken = {}, []
    for entry in TRANSLATED:
        try:
            translated(paddle, program_of(paddle, [entry]).desc)
            taken.append(entry)
        except Exception as exc:  # noqa: BLE001 - what Paddle says is the fixture's fact
            refused[entry[0]] = str(exc).strip().splitlines()[0]
    program = fetching(paddle, translated(paddle, program_of(paddle, taken).desc), ["part"])
    core.serialize_pir_program(program, str(OUT / "translated.json"), True, False, True)
    return refused


def main() -> None:
    os.environ["FLAGS_enable_pir_api"] = "0"   # legacy static programs, before paddle is imported
    import numpy as np
    import paddle
    from paddle.base import core

    paddle.enable_static()
    if OUT.exists():
        shutil.rmtree(OUT)
    meta = {"paddle_version": paddle.__version__, "stages": {}}
    for (stage, micro_batches) in ((0, 1), (1, 1), (0, 2), (1, 2)):
        section, startup, loss, held, rings = stage_program(paddle, stage, micro_batches)
        directory = OUT / ("" if micro_batches == 1 else f"micro{micro_batches}") / f"stage{stage}"
        directory.mkdir(parents=True)
        for program, name in ((section, "train"), (startup, "startup")):
            without_callstacks(program)
            (directory / f"{name}.pb").write_bytes(program.desc.serialize_to_string())
        fetched = [loss] if stage == 1 else []
        core.serialize_pir_program(fetching(paddle, translated(paddle, section.desc), fetched),
                                   str(directory / "train.json"), True, False, True)
        if micro_batches > 1:
            meta[f"micro{micro_batches}_ops"] = meta.get(f"micro{micro_batches}_ops", {}) | {
                stage: [op.type for op in section.global_block().ops]}
            continue
        meta["stages"][stage] = {"params": held, "ops": [op.type for op in section.global_block().ops]}
        meta["loss"], meta["rings"] = loss, {str(pair): ring for pair, ring in rings.items()}
    meta["translator_refused"] = every_translated(paddle)
    (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    np.savez_compressed(OUT / "reference.npz", **reference())


if __name__ == "__main__":
    main()
