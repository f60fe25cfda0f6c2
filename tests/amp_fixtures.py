"""The cases of tools/paddle_amp_compile.py (tests/data/paddle/amp_compile) and what the AMP tests do with them:
compile a case's forward as its decorate, train a program from the case's initial persistables, and compare programs
up to the order decorate gives the parameters (tests/test_amp_pass.py, tests/test_amp_levels_and_flow.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

import gradc
from cli_inprocess import gradc_cli
from gradc.bfloat16 import from_bits
from gradc.io import parse_program

DATA = Path(__file__).parent / "data" / "paddle" / "amp_compile"
CASES = sorted(p.name for p in DATA.iterdir())
# Paddle's CPU build runs the CPU build's decorate of these (not the O2 programs with low-precision parameters left
# in its CPU program: the embedding's, the biases' of the custom lists; its check_finite_and_unscale has no kernel)
CPU_RUNS = [case for case in CASES if (DATA / case / "final.npz").exists()]
# below O2 Paddle's programs with sub-blocks lose gradients (the cond) or cannot run (the loop); gradc's differ there
LOSSY = ["cond_o1_float16_adam", "loop_o1_float16_sgd"]
AS_PADDLE = [case for case in CASES if case not in LOSSY]
OPTIMIZERS = {"adam": ["--lr", "0.01"], "momentum": ["--lr", "0.05", "--momentum", "0.9"], "sgd": ["--lr", "0.1"],
              "adamw": ["--lr", "0.01", "--weight-decay", "0.05"]}
GRADIENT_LISTS = ("check_finite_and_unscale", "update_loss_scaling")
OPTIMIZE = 2   # op_role


def case_program(case: str, name: str) -> gradc.Program:
    return parse_program(gzip.decompress((DATA / case / f"{name}.pb.gz").read_bytes()))


def forward_file(case: str, tmp_path: Path) -> Path:
    """The case's float32 forward program as a file, for the command line."""
    path = tmp_path / f"{case}.forward.pb"
    path.write_bytes(gzip.decompress((DATA / case / "forward.pb.gz").read_bytes()))
    return path


def case_meta(case: str) -> dict:
    return json.loads((DATA / case / "meta.json").read_text())


def case_arguments(case: str) -> list[str]:
    meta = case_meta(case)
    optimizer = case.rsplit("_", 1)[1]
    scaling = [f"--{name.replace('_', '-')}={value}" for name, value in meta["options"].items()]
    static = ["--static-loss-scaling"] if meta["dtype"] == "bfloat16" else []   # as the tool's decorate
    lists = [f"--{name.replace('_', '-')}={op_type}" for name, op_types in meta["lists"].items()
             for op_type in op_types]
    master = ["--master-grad"] if meta["master_grad"] else []
    return ["--optimizer", optimizer, *OPTIMIZERS[optimizer], "--amp", meta["level"], "--amp-dtype", meta["dtype"],
            *scaling, *static, *lists, *master]


def compile_case(case: str, tmp_path) -> gradc.Program:
    out = tmp_path / "train.pb"
    done = gradc_cli("compile", forward_file(case, tmp_path), "-o", out, *case_arguments(case))
    assert done.returncode == 0, done.stderr
    assert "amp: " + case_meta(case)["level"] in done.stdout
    return gradc.load(out)


def paddle_value(array: np.ndarray) -> np.ndarray:
    return from_bits(array) if array.dtype == np.uint16 else array   # Paddle's bfloat16: its bits


def train_case(program: gradc.Program, case: str, steps: int | None = None) -> tuple[list[float], list[float], dict]:
    """Every step's loss and loss scale from the CUDA build's initial persistables, and the persistables after."""
    meta, scope, executor = case_meta(case), gradc.Scope(), gradc.Executor()
    block = program.global_block
    with np.load(DATA / case / "init.npz") as init:
        names = list(init.files)
        for name in names:
            value = paddle_value(init[name])
            if block.var(name).dtype == gradc.VarType.FP16 and value.dtype == np.float32:
                value = value.astype(np.float16)   # what Paddle's amp_init leaves float32: a custom black op's weight
            scope[name] = value
    with np.load(DATA / case / "feeds.npz") as archive:
        feeds = {key: archive[key] for key in archive.files}
    losses, scales = [], []
    with np.errstate(all="ignore"):   # the bad steps' inf
        for step in range(meta["steps"] if steps is None else steps):
            (loss,) = executor.run(program, {key: batches[step] for key, batches in feeds.items()}, [meta["loss"]],
                                   scope)
            losses.append(float(loss))
            scales.append(float(np.asarray(scope["loss_scaling_0"]).reshape(-1)[0]))
    return losses, scales, {name: np.asarray(scope[name]) for name in names}


def normalised(program: gradc.Program) -> list[tuple]:
    """Each op's type, role and slots; the gradient lists of the loss-scaling ops and the trailing casts of the
    parameters' gradients (and, master_grad, into their float32 masters) in name order (decorate lists them in the
    order the parameters were created, which a saved program does not keep)."""
    ops = []
    for op in program.global_block.ops:
        inputs = {slot: sorted(args) if op.type in GRADIENT_LISTS else args for slot, args in op.inputs.items() if args}
        outputs = {slot: sorted(args) if op.type in GRADIENT_LISTS else args for slot, args in op.outputs.items()
                   if args}
        ops.append((op.type, op.attrs.get("op_role"), sorted(inputs.items()), sorted(outputs.items())))
    first = next(idx for idx, op in enumerate(ops) if op[0] == "check_finite_and_unscale")
    start = first
    while start > 0 and ops[start - 1][0] == "cast" and (
            ops[start - 1][1] == OPTIMIZE or ops[start - 1][3][0][1][0].endswith("@GRAD_fp32_master_0")):
        start -= 1
    return ops[:start] + sorted(ops[start:first], key=moved_cast_order) + ops[first:]


def moved_cast_order(op: tuple) -> tuple:
    """The moved casts by name, each parameter's master-gradient cast after the moved ones (as decorate)."""
    return op[3][0][1][0].endswith("_fp32_master_0"), op


def block_slots(block: gradc.Block) -> list[tuple]:
    return [(op.type, op.attrs.get("op_role"), {slot: args for slot, args in op.inputs.items() if args},
             {slot: args for slot, args in op.outputs.items() if args}) for op in block.ops]
