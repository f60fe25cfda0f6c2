"""Interleaved pipeline chunks (virtual pipeline stages): the PIR programs of each rank of a 2-stage, 2-chunk
pipeline, as Paddle 3.3.1's `dist.to_static` writes them with Strategy().pipeline schedule_mode "VPP" (vpp_degree 2;
accumulate_steps 2 or 4: cases micro2 and micro4, micro-batches of 4 or 2 rows). The model: x [8, 6] ->
Layer(6, 8) -> Layer(8, 8) -> Layer(8, 8) -> Layer(8, 4) -> CrossEntropyLoss, SGD, each Layer a Linear (relu after
the first three) whose parameters are replicated on its stage's mesh ([0] for the first two, [1] for the others).
Paddle's complete_chunk_id (auto_parallel/static/pir_pass.py) deals the four layers out round robin: layer 0 stage 0
chunk 0, layer 1 stage 1 chunk 0, layer 2 stage 0 chunk 1, layer 3 stage 1 chunk 1, so each rank's program sends to
and receives from the other twice a forward (ops carry chunk_id and op_role); the gradient-merge pass accumulates
each micro-batch's gradients into a `<param>@GRAD@MERGE` buffer (add_), and the optimizer part scales them by
1 / micro-batches, steps, and zeroes the buffers.

Paddle fault worked around: its PIR writer (paddle/fluid/pir/serialize_deserialize/src/ir_serialize.cc,
ProgramWriter::WriteBlock) numbers a block's keyword arguments (the @GRAD@MERGE buffers here) but stores the
positional args list under "kwargs" (block_json[KEYWORDBLOCKARGS] = args_json), so the file refers to %-1 ... %-4,
which it never defines, and Paddle reads it back with those operands dangling. The tool writes the kwargs list the
writer meant to (id, type, name), each id's name read from Paddle's own printout of the same program; the file is
otherwise Paddle's (parsed and written back).

Each rank's process fakes the launch environment and skips Engine._init_comm / _initialize as
tools/paddle_auto_parallel.py does. The numbers are the single-device model's on all 8 rows, one SGD step (Paddle on
CPU); Paddle's own VPP job order (Engine._job_plan) is in meta.json.

Written to tests/data/paddle/vpp/:
    <case>/rank<r>/train.json, startup.json   the rank's program after the reshard and gradient-merge passes
    meta.json        per case and rank: rings, params, Paddle's job list ("forward0 1": job, micro-batch), kwargs
    reference.npz    feed.x, feed.label, param.<name>, loss, grad.<name>, stepped.<name>
Not part of the package: needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_vpp.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paddle_tensor_parallel import seeded_reference  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "vpp"
ROWS, WIDTHS, LR = 8, (6, 8, 8, 8, 4), 0.1
CASES = {"micro2": 2, "micro4": 4}   # case -> micro-batches
STAGE_OF_LAYER = (0, 0, 1, 1)   # as written: complete_chunk_id reassigns layers 1 and 2


def layers(paddle, meshes=None):
    """The four Linears (each with its relu but the last) as separate Layers, Paddle's VPP segments."""
    import paddle.distributed as dist

    class Layer(paddle.nn.Layer):   # the class name is the vpp_seg_method pattern
        def __init__(self, index):
            super().__init__()
            self.linear, self.last = paddle.nn.Linear(WIDTHS[index], WIDTHS[index + 1]), index == 3
            if meshes is not None:
                mesh = meshes[STAGE_OF_LAYER[index]]
                self.linear.weight = dist.shard_tensor(self.linear.weight, mesh, [dist.Replicate()])
                self.linear.bias = dist.shard_tensor(self.linear.bias, mesh, [dist.Replicate()])

        def forward(self, x):
            y = self.linear(x)
            return y if self.last else paddle.nn.functional.relu(y)

    class Model(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.blocks = paddle.nn.LayerList([Layer(i) for i in range(4)])

        def forward(self, x):
            for index, block in enumerate(self.blocks):
                if meshes is not None and index and STAGE_OF_LAYER[index] != STAGE_OF_LAYER[index - 1]:
                    x = dist.reshard(x, meshes[STAGE_OF_LAYER[index]], [dist.Replicate()])
                x = block(x)
            return x

    return Model()


def with_kwargs(document: dict, program, printed: str) -> dict:
    """Paddle's file with the top block's kwargs written: id -k is the k-th kwarg the writer numbered; its name is
    read from Paddle's printout, where each op names its kwarg operands (%kwarg_<name>) in the file's op order."""
    block = document["program"]["regions"][0]["blocks"][0]
    types = {name: value.type() for name, value in program.global_block().kwargs().items()}
    names: dict[int, str] = {}
    op_lines = [line for line in printed.splitlines() if re.match(r"\s+(\(.*\) = )?\"", line)]
    if len(op_lines) != len(block["ops"]):
        raise SystemExit(f"the printout has {len(op_lines)} ops, the file {len(block['ops'])}")
    for line, op in zip(op_lines, block["ops"]):
        operands = re.search(r"\" \(([^)]*)\)", line)
        printed_operands = [o.strip() for o in operands.group(1).split(",")] if operands else []
        for operand, printed_operand in zip(op.get("I", []), printed_operands):
            if operand["%"] < 0:
                name = printed_operand.removeprefix("%kwarg_")
                if names.setdefault(operand["%"], name) != name or name not in types:
                    raise SystemExit(f"%{operand['%']} is both {names[operand['%']]} and {name}")
    if sorted(names) != list(range(-len(types), 0)):
        raise SystemExit(f"kwargs {sorted(names)} named, {len(types)} in the program")
    by_shape = {name: list(t.shape) for name, t in types.items()}
    kwargs = []
    for value_id in sorted(names, reverse=True):
        uses = [op for op in block["ops"] for o in op.get("I", []) if o["%"] == value_id]
        dims = uses[0]["O"][0]["TT"]["D"][0]["D"][1]   # the in-place add_'s result: the buffer's dims
        if dims != by_shape[names[value_id]]:
            raise SystemExit(f"%{value_id} ({names[value_id]}): dims {dims}, the kwarg's {by_shape[names[value_id]]}")
        kwargs.append({"#": value_id, "TT": uses[0]["O"][0]["TT"], "key": names[value_id]})
    block["kwargs"] = kwargs
    return document


def rank_programs(case: str, rank: int) -> dict:
    """Run in a process of its own (the faked environment names one rank): write the rank's programs."""
    import numpy as np

    os.environ.update(PADDLE_TRAINER_ID=str(rank), PADDLE_TRAINERS_NUM="2", FLAGS_selected_gpus=str(rank),
                      PADDLE_TRAINER_ENDPOINTS="127.0.0.1:6170,127.0.0.1:6171",
                      PADDLE_CURRENT_ENDPOINT=f"127.0.0.1:{6170 + rank}")
    import paddle
    import paddle.distributed as dist
    from paddle.base import core
    from paddle.distributed.auto_parallel.process_mesh import ProcessMesh
    from paddle.distributed.auto_parallel.static import engine as engine_module
    from paddle.distributed.auto_parallel.static.process_group import get_all_process_groups

    engine_module.Engine._init_comm = lambda self: None
    engine_module.Engine._initialize = lambda self, mode, init_parameters=True: None
    ProcessMesh.get_rank_by_dim_and_process_id = lambda self, dim, process: int(
        np.argwhere(self._mesh == process)[0][self._dim_names.index(dim)])
    meshes = [dist.ProcessMesh([stage], dim_names=["x"]) for stage in range(2)]
    model = layers(paddle, meshes)

    class Rows(paddle.io.Dataset):   # the program is what matters: the data is fed by the tests
        def __getitem__(self, index):
            return np.zeros(WIDTHS[0], "float32"), np.zeros(1, "int64")

        def __len__(self):
            return ROWS

    loader = dist.shard_dataloader(paddle.io.DataLoader(Rows(), batch_size=ROWS), meshes=meshes, shard_dims="x")
    strategy = dist.Strategy()
    pipeline = strategy.pipeline
    pipeline.enable, pipeline.schedule_mode, pipeline.vpp_degree, pipeline.vpp_seg_method = True, "VPP", 2, "Layer"
    pipeline.pp_degree, pipeline.accumulate_steps, pipeline.micro_batch_size = 2, CASES[case], ROWS // CASES[case]
    optimizer = paddle.optimizer.SGD(LR, parameters=model.parameters())
    dist_model = dist.to_static(model, loader, paddle.nn.CrossEntropyLoss(), optimizer, strategy=strategy)
    dist_model.train()
    engine = dist_model._engine
    program = engine._pir_dist_main_progs["train"]
    directory = OUT / case / f"rank{rank}"
    directory.mkdir(parents=True)
    core.serialize_pir_program(program, str(directory / "train.json"), True, False, True)
    document = with_kwargs(json.loads((directory / "train.json").read_text()), program, str(program))
    (directory / "train.json").write_text(json.dumps(document, separators=(",", ":")))
    core.serialize_pir_program(engine._pir_dist_startup_progs["train"], str(directory / "startup.json"), True, False,
                               True)
    rings = {group.id: group.ranks for group in get_all_process_groups() if rank in group.ranks and group.id}
    jobs = [f"{job.type()} {job.micro_batch_id()}" for job in engine._job_plan.job_list()]
    return {"rings": rings, "params": [p.name for p in model.parameters()], "jobs": jobs,
            "kwargs": [k["key"] for k in document["program"]["regions"][0]["blocks"][0]["kwargs"]]}


def reference() -> dict:
    """The single-device model on all the rows, one SGD step (Paddle on CPU)."""
    import paddle

    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [ROWS, WIDTHS[0]], "float32")
        label = paddle.static.data("label", [ROWS, 1], "int64")
        loss = paddle.nn.CrossEntropyLoss()(layers(paddle)(x), label)
        _, pairs = paddle.optimizer.SGD(LR).minimize(loss)
    return seeded_reference(paddle, main, startup, loss, pairs, 43, ROWS, WIDTHS[0], WIDTHS[-1])


def main() -> None:
    if len(sys.argv) == 3:   # a child: one case's rank
        print(json.dumps(rank_programs(sys.argv[1], int(sys.argv[2]))))
        return
    os.environ["FLAGS_enable_pir_api"] = "0"   # the reference: a legacy static program, before paddle is imported
    import numpy as np

    if OUT.exists():
        shutil.rmtree(OUT)
    meta = {"paddle_version": __import__("paddle").__version__, "cases": {}}
    for case, count in CASES.items():
        ranks = [json.loads(subprocess.run([sys.executable, str(Path(__file__).resolve()), case, str(rank)],
                                           check=True, capture_output=True, text=True,
                                           env=os.environ | {"FLAGS_enable_pir_api": "1"}).stdout.splitlines()[-1])
                 for rank in range(2)]
        meta["cases"][case] = {"micro_batches": count, "ranks": ranks}
    (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    np.savez_compressed(OUT / "reference.npz", **reference())


if __name__ == "__main__":
    main()
