"""Fixture pir_csr: Paddle 3.3.1 loads and runs gradc's PIR programs of paddle.sparse's CSR API, which its own PIR
builders cannot write (`_C_ops.sparse_to_sparse_csr` of a Value crashes them: docs/sparse.md):

    /path/to/paddle/python tools/paddle_sparse_pir_csr.py tests/data/paddle/sparse_tensor/pir_csr

gradc writes tests/sparse_fixtures.py's csr_program (conversions dense/COO -> CSR -> COO, dense -> COO, values,
to_dense and every elementwise op of a CSR tensor) as PIR; Paddle's deserialize_pir_program reads it (each op's
operand, result and attribute names, from Paddle's op definitions, are printed against the ones gradc wrote, and
must agree), serialize_pir_program writes it back (model.json: the ops as Paddle writes them) and its Executor runs
it on the CPU (expected.npz: every fetched tensor). Then gradc's training program of it (tests/sparse_fixtures.py
csr_training: the gradient of val through relu, sin, softmax and to_dense of the CSR tensor, with the grad ops as
Paddle's *_csr_grad_sp, to_dense_grad_sp, values_grad_sp) the same way, written back as train.json; its Executor
cannot run that (a segmentation fault; to_dense_grad_sp of a CSR tensor alone fails in its kernel: "[begin(0),
end(4)) must be inside [0, 2) in ddim slice"), so the tool does not try. The unrun program (matmul of two COO and of
two CSR tensors, acos and acosh) is only loaded, checked by name and written back (unrun.json): Paddle has no CPU
kernel of them. Last it prints what Paddle's dygraph to_sparse_csr and to_dense make of a COO tensor with unsorted
and repeated sites (both wrong: docs/sparse.md).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]
from gradc.pir import serialize_pir  # noqa: E402
from gradc.pir.table.rows import TABLE  # noqa: E402
from sparse_fixtures import csr_program, csr_training  # noqa: E402


def _load(net: dict) -> paddle.static.Program:
    """Paddle's program of gradc's PIR file of ``net``, each op's names checked against gradc's rows."""
    program = paddle.static.Program()
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "model.json"
        path.write_bytes(serialize_pir(net["program"], fetch=net["fetch"]))
        paddle.base.core.deserialize_pir_program(str(path), program)
    for op in program.global_block().ops:
        row = TABLE.get(op.name())
        if row is None or not op.name().endswith("_sp"):
            continue
        ours = ([o.name for o in row.operands], [r.name for r in row.results], sorted(a.name for a in row.attrs))
        theirs = (op.get_input_names(), op.get_output_names(), sorted(op.get_attr_names()))
        print(op.name(), "names agree" if ours == theirs else f"DIFFER: gradc {ours}, Paddle {theirs}")
        assert ours == theirs
    return program


def main(folder: Path) -> None:
    paddle.enable_static()
    folder.mkdir(parents=True, exist_ok=True)
    paddle.base.core.serialize_pir_program(_load(csr_program(unrun=True)), str(folder / "unrun.json"), True,
                                           False, True)
    net = csr_program()
    program = _load(net)
    paddle.base.core.serialize_pir_program(program, str(folder / "model.json"), True, False, True)
    fetch = [op.operand_source(0) for op in program.global_block().ops if op.name() == "pd_op.fetch"]
    outs = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=net["feed"], fetch_list=fetch)
    np.savez(folder / "feed.npz", **net["feed"])
    np.savez(folder / "expected.npz", **dict(zip(net["fetch"], outs)))
    train = csr_training()
    program = _load(train)
    paddle.base.core.serialize_pir_program(program, str(folder / "train.json"), True, False, True)
    (folder / "meta.json").write_text(json.dumps({"fetch": net["fetch"]}, indent=1) + "\n")
    paddle.disable_static()
    idx, val = np.array([[0, 2, 1, 0, 2, 1, 0], [1, 3, 0, 3, 0, 2, 1]]), np.arange(1, 8, dtype=np.float32)
    x = paddle.sparse.sparse_coo_tensor(paddle.to_tensor(idx), paddle.to_tensor(val), [3, 4])
    dense = np.zeros((3, 4), np.float32)
    np.add.at(dense, tuple(idx), val)
    print("unsorted, (0, 1) twice; the sum:", dense.tolist())
    print("Paddle's to_dense:", x.to_dense().numpy().tolist())
    print("Paddle's to_sparse_csr().to_dense():", x.to_sparse_csr().to_dense().numpy().tolist())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
