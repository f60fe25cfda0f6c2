"""PIR programs of each rank of a semi-auto-parallel job, as Paddle 3.3.1's `dist.to_static` writes them: values
carry dist types (4.t_dist_dtensor: global dims, mesh, dims_mapping, partial status, this rank's dims) and ops their
op_dist_attr; the reshard pass lowers each `dist_op.reshard` to collectives (all_gather, all_reduce, slice, split +
concat). The model: x -> Linear(6, 8) column-parallel (weight Shard(1), bias Shard(0) on the mp axis) -> relu ->
Linear(8, 4) row-parallel (weight Shard(0), bias replicated) -> CrossEntropyLoss, Momentum; the batch sharded on
the dp axis by dist.shard_dataloader. The cases:

    dp_mp      a 2 x 2 mesh [[0, 1], [2, 3]] (dp, mp): 4 ranks, each data-parallel group a model-parallel pair
    shared     a 1-D mesh [0, 1] (x) carrying both: 2 ranks; Paddle gathers the sharded weights before each use
    sharding2  no model parallelism: 2 data-parallel ranks, AdamW through dist.shard_optimizer with
    sharding3  dist.ShardingStage2 / ShardingStage3 (gradients reduce-scattered, states and, at stage 3,
               parameters held in halves and all-gathered)
    pipeline   two stages on two meshes, [0, 1] and [2, 3] (x): the first Linear column-parallel on the first, the
               second row-parallel on the second; the hidden value (batch split, Shard(0) on [0, 1]) crosses to
               Shard(1) on [2, 3] by dist.reshard in the forward (the backward crosses back); x and the label
               split over x on their stage's mesh
    partial    the same stages, the hidden value crossing replicated and then made a sum's parts (Partial()) on
               [2, 3]: Paddle's reshard pass fails on the backward's Shard(1) -> Partial ("There is no reshard
               function that matches ..."), so the case has the program before the pass only (and no startup
               program: the pipeline's is the same model's)

(With an odd dim, 5 classes, Paddle's PIR reshard pass fails on the sharding cases: reshard_s_to_r_with_padding,
reshard_funcs/s_to_r_reshard_func.py line 291, calls get_defining_op on the list split returns:
"'list' object has no attribute 'get_defining_op'"; so the model has 4 classes. dist.shard_optimizer takes only
AdamW and SGD: "only supports AdamW and SGD optimizer for now".)

In each rank's process the launch environment is faked as tools/paddle_tensor_parallel.py does, the Engine's
_init_comm and _initialize are skipped (they instantiate NCCL groups and run the startup program's communication),
and Paddle's ProcessMesh.get_rank_by_dim_and_process_id is replaced: with numpy 2.4 it fails ("only 0-dimensional
arrays can be converted to Python scalars": it calls int() on np.where's one-element array). The program before
the reshard pass (with its `dist_op.reshard` ops) is saved by wrapping ReshardPasses.apply_reshard_pass. The
numbers are the single-device model's on all the rows, one Momentum step, which Paddle runs on CPU.

Written to tests/data/paddle/auto_parallel/<case>/:
    rank<r>/train.json     the rank's program after the reshard pass (Engine._pir_dist_main_progs["train"])
    rank0/reshard.json     the program before the reshard pass (dist_op.reshard ops), the same file for every rank:
                           the tool checks that they are byte for byte
    rank<r>/startup.json   the rank's startup program
    meta.json              each rank's ring_id -> ranks, parameters (and Paddle's error where its pass fails);
                           reference_momentum.npz, reference_adamw.npz
Not part of the package: needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_auto_parallel.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paddle_tensor_parallel import seeded_reference  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "auto_parallel"
ROWS, WIDTH, HIDDEN, CLASSES, LR, MOMENTUM = 8, 6, 8, 4, 0.1, 0.9
# case -> (mesh, its axes' names, model-parallel Linears?, ZeRO stage of dist.shard_optimizer (AdamW) or None);
# pipeline's mesh holds its two stages' meshes
CASES = {"dp_mp": ([[0, 1], [2, 3]], ["dp", "mp"], True, None), "shared": ([0, 1], ["x"], True, None),
         "sharding2": ([0, 1], ["dp"], False, 2), "sharding3": ([0, 1], ["dp"], False, 3),
         "pipeline": ([[0, 1], [2, 3]], ["x"], True, None), "partial": ([[0, 1], [2, 3]], ["x"], True, None)}


def network(paddle, placements=None, between=None):
    """The two Linears; ``placements(kind)``, when given, shards the parameters (kind: column, column_bias, row,
    row_bias); ``between(hidden)``, when given, reshards the hidden value to the second Linear's mesh."""
    layers = [paddle.nn.Linear(WIDTH, HIDDEN), paddle.nn.ReLU(), paddle.nn.Linear(HIDDEN, CLASSES)]

    class Staged(paddle.nn.Layer):   # a Sequential with the reshard of a pipeline's stage boundary in it
        def __init__(self):
            super().__init__()
            self.first, self.act, self.second = layers

        def forward(self, x):
            return self.second(between(self.act(self.first(x))))

    model = paddle.nn.Sequential(*layers) if between is None else Staged()
    if placements is not None:
        import paddle.distributed as dist

        for layer, kind in ((layers[0], "column"), (layers[2], "row")):
            layer.weight = dist.shard_tensor(layer.weight, *placements(kind))
            layer.bias = dist.shard_tensor(layer.bias, *placements(f"{kind}_bias"))
    return model


def rank_programs(case: str, rank: int) -> dict:
    """Run in a process of its own (the faked environment names one rank): write the rank's programs."""
    import numpy as np

    mesh_ids, dims, model_parallel, stage = CASES[case]
    nranks = int(np.size(mesh_ids))
    os.environ.update(PADDLE_TRAINER_ID=str(rank), PADDLE_TRAINERS_NUM=str(nranks), FLAGS_selected_gpus=str(rank),
                      PADDLE_TRAINER_ENDPOINTS=",".join(f"127.0.0.1:{6170 + r}" for r in range(nranks)),
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
    directory = OUT / case / f"rank{rank}"
    directory.mkdir(parents=True)
    lower = engine_module.ReshardPasses.apply_reshard_pass

    def keeping(program, *args, **kwargs):
        core.serialize_pir_program(program, str(directory / "reshard.json"), True, False, True)
        return lower(program, *args, **kwargs)

    engine_module.ReshardPasses.apply_reshard_pass = staticmethod(keeping)
    shards = {"column": dist.Shard(1), "column_bias": dist.Shard(0), "row": dist.Shard(0),
              "row_bias": dist.Replicate()}
    if case in ("pipeline", "partial"):   # stage 0 on mesh [0, 1], stage 1 on [2, 3]: the hidden value crosses
        meshes = [dist.ProcessMesh(ids, dim_names=dims) for ids in mesh_ids]

        def between(hidden):
            if case == "pipeline":
                return dist.reshard(hidden, meshes[1], [dist.Shard(1)])
            return dist.reshard(dist.reshard(hidden, meshes[1], [dist.Replicate()]), meshes[1], [dist.Partial()])

        model = network(paddle, lambda kind: (meshes[kind.startswith("row")], [shards[kind]]), between)
    else:
        meshes = [dist.ProcessMesh(mesh_ids, dim_names=dims)]
        model_axis = [dist.Replicate()] * (len(dims) - 1)
        model = network(paddle, (lambda kind: (meshes[0], [*model_axis, shards[kind]])) if model_parallel else None)

    class Rows(paddle.io.Dataset):   # the program is what matters: the data is fed by the tests
        def __getitem__(self, index):
            return np.zeros(WIDTH, "float32"), np.zeros(1, "int64")

        def __len__(self):
            return ROWS

    loader = dist.shard_dataloader(paddle.io.DataLoader(Rows(), batch_size=ROWS), meshes=meshes, shard_dims=dims[0])
    if stage is None:
        optimizer = paddle.optimizer.Momentum(LR, momentum=MOMENTUM, parameters=model.parameters())
    else:
        zero = {2: dist.ShardingStage2, 3: dist.ShardingStage3}[stage](dims[0], meshes[0])
        optimizer = dist.shard_optimizer(paddle.optimizer.AdamW(LR, parameters=model.parameters()), zero)
    names = [p.name for p in model.parameters()]
    try:
        dist_model = dist.to_static(model, loader, paddle.nn.CrossEntropyLoss(), optimizer)
        dist_model.train()
    except AssertionError as exc:   # partial: Paddle's pass has no reshard function for the backward's Shard -> Partial
        return {"rings": {}, "params": names, "paddle_error": str(exc)[:220]}
    engine = dist_model._engine
    core.serialize_pir_program(engine._pir_dist_main_progs["train"], str(directory / "train.json"), True, False, True)
    core.serialize_pir_program(engine._pir_dist_startup_progs["train"], str(directory / "startup.json"), True, False,
                               True)
    rings = {group.id: group.ranks for group in get_all_process_groups() if rank in group.ranks and group.id}
    return {"rings": rings, "params": names}


def reference(optimizer: str) -> dict:
    """The single-device model on all the rows, one Momentum or AdamW step (Paddle on CPU)."""
    import paddle

    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [ROWS, WIDTH], "float32")
        label = paddle.static.data("label", [ROWS, 1], "int64")
        loss = paddle.nn.CrossEntropyLoss()(network(paddle)(x), label)
        step = (paddle.optimizer.Momentum(LR, momentum=MOMENTUM) if optimizer == "momentum" else
                paddle.optimizer.AdamW(LR))
        _, pairs = step.minimize(loss)
    return seeded_reference(paddle, main, startup, loss, pairs, 41, ROWS, WIDTH, CLASSES)


def main() -> None:
    if len(sys.argv) == 3:   # a child: one case's rank
        print(json.dumps(rank_programs(sys.argv[1], int(sys.argv[2]))))
        return
    os.environ["FLAGS_enable_pir_api"] = "0"   # the reference: a legacy static program, before paddle is imported
    import numpy as np

    if OUT.exists():
        shutil.rmtree(OUT)
    meta = {"paddle_version": __import__("paddle").__version__, "cases": {}}
    for case, (mesh_ids, dims, _, stage) in CASES.items():
        ranks = [json.loads(subprocess.run([sys.executable, str(Path(__file__).resolve()), case, str(rank)],
                                           check=True, capture_output=True, text=True,
                                           env=os.environ | {"FLAGS_enable_pir_api": "1"}).stdout.splitlines()[-1])
                 for rank in range(int(np.size(mesh_ids)))]
        meta["cases"][case] = {"mesh": mesh_ids, "dims": dims, "stage": stage, "ranks": ranks}
        before = [OUT / case / f"rank{rank}" / "reshard.json" for rank in range(len(ranks))]
        if any(path.read_bytes() != before[0].read_bytes() for path in before):   # the pass is what makes them differ
            raise SystemExit(f"{case}: the ranks' programs before the reshard pass differ")
        for path in before[1:]:
            path.unlink()
            if not any(path.parent.iterdir()):   # partial: the pass failed, nothing else was written
                path.parent.rmdir()
    (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    for optimizer in ("momentum", "adamw"):
        np.savez_compressed(OUT / f"reference_{optimizer}.npz", **reference(optimizer))


if __name__ == "__main__":
    main()
