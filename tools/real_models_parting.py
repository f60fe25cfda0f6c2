"""Where gradc's and Paddle's runs of a float64 training program (train64.json, written by tools/real_models.py with
FLOAT64 set) part: the vars a gradient or value is computed from, then both runs' values of chosen vars, compared
in program order (how far apart, and how many elements differ at all). Three steps, on a model's <model>.check/:

    PYTHONPATH=src .venv/bin/python tools/real_models_parting.py ancestors CHECK VAR DEPTH   # the ops VAR comes from
    PYTHONPATH=src .venv/bin/python tools/real_models_parting.py gradc CHECK VAR...   # train64 fetching VARs
    /work/paddle-venv/bin/python tools/real_models_parting.py paddle CHECK   # Paddle's serial run of it, compared

The gradc step writes CHECK/parting.json and CHECK/parting_gradc.npz; the Paddle step runs parting.json with
FLAGS_new_executor_serial_run=1 (its multi-threaded executor orders DINO's forward otherwise: docs/real-models.md).
Walking back from a gradient that differs, the first var that differs with every input the same bits is where
they part (DINO's linear_7: docs/real-models.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np


def ancestors(check: Path, target: str, depth: int) -> None:
    """Print the ops within ``depth`` producers of ``target``, in program order, with their float64 outputs."""
    import gradc
    program = gradc.load(check / "train64.json")
    block, ops = program.global_block, program.global_block.ops
    distance, rows = {target: 0}, []
    for i in reversed(range(len(ops))):
        found = [distance[name] for name in ops[i].output_names() if name in distance]
        if not found or min(found) >= depth:
            continue
        rows.append(i)
        for name in ops[i].input_names():
            distance[name] = min(distance.get(name, depth), min(found) + 1)
    for i in sorted(rows):
        outs = [name for slot, names in ops[i].outputs.items() if slot != "XShape" for name in names
                if name in block.vars and block.var(name).dtype == gradc.VarType.FP64]
        print(i, ops[i].type, ",".join(outs), "<-", ",".join(ops[i].input_names()))


def gradc_step(check: Path, names: list[str]) -> None:
    import gradc
    from gradc.pir import save_pir
    program = gradc.load(check / "train64.json")
    scope = gradc.Scope()
    for name, value in np.load(check / "params64.npz").items():
        scope[name] = value
    values = gradc.Executor().run(program, dict(np.load(check / "feed64.npz")), names, scope)
    np.savez(check / "parting_gradc.npz", **dict(zip(names, values)))
    save_pir(program, check / "parting.json", fetch=names)


def paddle_step(check: Path) -> None:
    os.environ["FLAGS_new_executor_serial_run"] = "1"   # read when Paddle is imported
    import paddle
    paddle.enable_static()
    scope = paddle.static.global_scope()
    for name, value in np.load(check / "params64.npz").items():
        scope.var(name).get_tensor().set(value, paddle.CPUPlace())
    program = paddle.static.Program()
    paddle.base.core.deserialize_pir_program(str(check / "parting.json"), program)
    fetches = [op for op in program.global_block().ops if op.name() == "pd_op.fetch"]
    values = paddle.static.Executor(paddle.CPUPlace()).run(
        program, feed=dict(np.load(check / "feed64.npz")), fetch_list=[op.operand_source(0) for op in fetches])
    ours = np.load(check / "parting_gradc.npz")
    for op, value in zip(fetches, values):
        name = op.attrs()["name"]
        if name not in ours:   # the training program's own fetches (its loss and gradients)
            continue
        mine, value = ours[name], np.asarray(value)
        if value.shape != mine.shape:
            print(f"{name}: shape {value.shape} against gradc's {mine.shape}")
            continue
        apart = float(np.abs(value - mine).max() / (np.abs(mine).max() + 1e-300)) if mine.size else 0.0
        print(f"{name} {mine.shape}: {apart:.3g} of its largest apart, {int((value != mine).sum())} elements differ")


def main() -> None:
    step, check = sys.argv[1], Path(sys.argv[2])
    if step == "ancestors":
        ancestors(check, sys.argv[3], int(sys.argv[4]))
    elif step == "gradc":
        gradc_step(check, sys.argv[3:])
    else:
        paddle_step(check)


if __name__ == "__main__":
    main()
