"""Products of a sparse x (gradc.ops.sparse_matmul): Paddle 3.3.1's PIR program of mv and addmm of a COO tensor
(fixture pir_products, tools/paddle_sparse_pir_products.py), which Paddle cannot run on a CPU, runs in gradc to dense
numpy's numbers and goes to PIR and back; matmul and masked_matmul of COO and CSR tensors, 2-D and batched, are
numpy's. Their gradients are checked by central differences (tests/gradcheck_cases/sparse_matmul.py)."""

import numpy as np
import pytest

import gradc
from gradc.executor.selected_rows import as_dense
from gradc.executor.sparse_value import SparseCoo
from gradc.ir import VarType
from gradc.pir import load_pir, parse_pir, serialize_pir
from sparse_fixtures import DATA
from test_sparse import random_coo

FOLDER = DATA / "pir_products"


def test_paddles_pir_program_of_mv_and_addmm_runs_to_the_dense_products():
    feed = dict(np.load(FOLDER / "feed.npz"))
    program = load_pir(str(FOLDER / "model.json"))
    ops = [op for op in program.global_block.ops if op.type in ("sparse_mv", "sparse_addmm")]
    assert [op.type for op in ops] == ["sparse_mv", "sparse_addmm"]
    outs = [op.output("out")[0] for op in ops]
    mv, addmm = gradc.Executor().run(program, feed, outs)
    x = SparseCoo(feed["idx"], feed["val"], (3, 4)).to_dense()
    np.testing.assert_allclose(mv, x @ feed["vec"], rtol=1e-6)
    np.testing.assert_allclose(addmm, 0.5 * feed["input"] + 2.0 * x @ feed["y"], rtol=1e-6)
    data = serialize_pir(program, fetch=outs)
    assert b'"1.mv_coo_sp"' in data and b'"1.addmm_coo_dense_sp"' in data
    again = gradc.Executor().run(parse_pir(data), feed, outs)
    np.testing.assert_array_equal(again[0], mv)
    np.testing.assert_array_equal(again[1], addmm)


def _run(op: str, x: SparseCoo, dense: dict, csr: bool, out_type=None):
    """op with its sparse operand (x, or mask for masked_matmul) made of x, as CSR when ``csr``."""
    program = gradc.Program()
    block = program.global_block
    feed = {"val": x.values, "idx": x.indices, **dense}
    for name, value in feed.items():
        block.create_var(name, list(value.shape), gradc.ir.to_var_type(value.dtype))
    block.create_var("coo", list(x.shape), VarType.FP64, type=VarType.SPARSE_COO)
    block.append_op("sparse_sparse_coo_tensor", {"values": ["val"], "indices": ["idx"]}, {"out": ["coo"]},
                    {"shape": list(x.shape)})
    sparse = "coo"
    if csr:
        block.create_var("csr", list(x.shape), VarType.FP64, type=VarType.SPARSE_CSR)
        block.append_op("sparse_to_sparse_csr", {"x": ["coo"]}, {"out": ["csr"]})
        sparse = "csr"
    inputs = {name: [name] for name in dense}
    inputs["mask" if op == "sparse_masked_matmul" else "x"] = [sparse]
    block.create_var("out", None, VarType.FP64, type=out_type)
    block.append_op(op, inputs, {"out": ["out"]})
    return gradc.Executor().run(program, feed, ["out"])[0]


@pytest.mark.parametrize("csr", [False, True])
@pytest.mark.parametrize("lead", [(), (2,)])
def test_matmul_and_masked_matmul_are_the_dense_products(lead, csr):
    rng = np.random.default_rng(9)
    x = random_coo(rng, 7, (*lead, 3, 4), 1)
    x = SparseCoo(x.indices, x.values[:, 0], x.shape[:-1])
    y = rng.standard_normal((*lead, 4, 2))
    np.testing.assert_allclose(_run("sparse_matmul", x, {"y": y}, csr), x.to_dense() @ y, rtol=1e-12)
    a, b = rng.standard_normal((*lead, 3, 5)), rng.standard_normal((*lead, 5, 4))
    masked = _run("sparse_masked_matmul", x, {"x": a, "y": b}, csr, VarType.SPARSE_CSR if csr else VarType.SPARSE_COO)
    np.testing.assert_allclose(as_dense(masked), np.where(x.to_dense() != 0, a @ b, 0), rtol=1e-12)
