"""Fixture pir_csr_ops: Paddle 3.3.1 loads and runs gradc's PIR program of the CSR forms of subtract, multiply,
divide, divide by a number, transpose, reshape, slice and sum, which its own builders cannot write (no static mode
of Paddle makes a CSR tensor: docs/sparse.md):

    /path/to/paddle/python tools/paddle_sparse_pir_csr_ops.py tests/data/paddle/sparse_tensor/pir_csr_ops

gradc writes tests/sparse_fixtures.py's csr_ops_program (on fixture csr_ops' fed tensors) as PIR; Paddle's
deserialize_pir_program reads it, each op's operand, result and attribute names are checked against its own
definitions (tools/paddle_sparse_pir_csr.py's _load), and its Executor runs it on the CPU (expected.npz: each result
to_dense). gradc's training program of it is read, checked by name and written back (train.json); Paddle's Executor
cannot run that (its to_dense_grad_sp of a CSR tensor fails: docs/sparse.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import paddle

sys.path[:0] = [str(Path(__file__).resolve().parent)]
from paddle_sparse_pir_csr import _load  # noqa: E402

from sparse_fixtures import DATA, csr_ops_program  # noqa: E402


def main(folder: Path) -> None:
    paddle.enable_static()
    folder.mkdir(parents=True, exist_ok=True)
    feed = dict(np.load(DATA / "csr_ops" / "feed.npz"))
    net = csr_ops_program(feed)
    program = _load(net)
    fetch = [op.operand_source(0) for op in program.global_block().ops if op.name() == "pd_op.fetch"]
    outs = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=net["feed"], fetch_list=fetch)
    np.savez(folder / "expected.npz", **dict(zip(net["fetch"], outs)))
    program = _load(csr_ops_program(feed, training=True))
    paddle.base.core.serialize_pir_program(program, str(folder / "train.json"), True, False, True)
    print(f"pir_csr_ops: {len(outs)} outputs")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
