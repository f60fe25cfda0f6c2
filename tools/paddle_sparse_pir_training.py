"""Paddle 3.3.1 runs gradc's PIR training programs of sparse nets (fixtures pir_jit, the SECOND-like backbone, and
pir_unary, paddle.sparse's elementwise and shape functions):

    /path/to/paddle/python tools/paddle_sparse_pir_training.py tests/data/paddle/sparse_tensor

gradc compiles each of Paddle's PIR inference programs to a training one (tests/sparse_fixtures.py: pir_training,
training_weights) and writes it as PIR with the sparse grad ops as Paddle's `*_grad_sp` ops, which Paddle's own PIR
backward cannot write. Paddle's deserialize_pir_program reads that file, serialize_pir_program writes it back
(<case>/train.json: the ops as Paddle writes them), and its Executor runs it on the CPU with the fixture's weights:
the loss and the gradients it computes go to <case>/train.npz (loss, grad:<var>).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]
from gradc.pir import serialize_pir  # noqa: E402
from sparse_fixtures import pir_training, training_weights  # noqa: E402


def run(folder: Path) -> None:
    net = pir_training(folder.name, training_weights(folder.name))
    program = paddle.static.Program()
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "train.json"
        path.write_bytes(serialize_pir(net["program"], fetch=net["fetch"]))
        paddle.base.core.deserialize_pir_program(str(path), program)
    paddle.base.core.serialize_pir_program(program, str(folder / "train.json"), True, False, True)
    fetch = [op.operand_source(0) for op in program.global_block().ops if op.name() == "pd_op.fetch"]
    place, scope = paddle.CPUPlace(), paddle.static.Scope()
    for name, value in net["params"].items():
        scope.var(name).get_tensor().set(value, place)
    with paddle.static.scope_guard(scope):
        outs = paddle.static.Executor(place).run(program, feed=net["feed"], fetch_list=fetch)
    loss, *grads = outs[:len(net["fetch"])]
    np.savez(folder / "train.npz", loss=loss, **{f"grad:{name}": g for name, g in zip(net["wrt"], grads)})


if __name__ == "__main__":
    paddle.enable_static()
    for case in ("pir_jit", "pir_unary"):
        run(Path(sys.argv[1]) / case)
