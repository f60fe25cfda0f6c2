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


def _sparse_product(x: SparseCoo, y: SparseCoo, csr: bool, y_csr: bool | None = None):
    """sparse_matmul of the sparse tensors x and y (both CSR when ``csr``; y's layout ``y_csr`` when given)."""
    program, feed = gradc.Program(), {}
    block = program.global_block
    operands = []
    for name, value in (("x", x), ("y", y)):
        feed |= {f"{name}_val": value.values, f"{name}_idx": value.indices}
        block.create_var(f"{name}_val", list(value.values.shape), VarType.FP64)
        block.create_var(f"{name}_idx", list(value.indices.shape), VarType.INT64)
        block.create_var(name, list(value.shape), VarType.FP64, type=VarType.SPARSE_COO)
        block.append_op("sparse_sparse_coo_tensor", {"values": [f"{name}_val"], "indices": [f"{name}_idx"]},
                        {"out": [name]}, {"shape": list(value.shape)})
        as_csr = csr if name == "x" or y_csr is None else y_csr
        if as_csr:
            block.create_var(f"{name}_csr", list(value.shape), VarType.FP64, type=VarType.SPARSE_CSR)
            block.append_op("sparse_to_sparse_csr", {"x": [name]}, {"out": [f"{name}_csr"]})
        operands.append(f"{name}_csr" if as_csr else name)
    block.create_var("out", None, VarType.FP64, type=VarType.SPARSE_CSR if csr else VarType.SPARSE_COO)
    block.append_op("sparse_matmul", {"x": [operands[0]], "y": [operands[1]]}, {"out": ["out"]})
    return gradc.Executor().run(program, feed, ["out"])[0]


@pytest.mark.parametrize("csr", [False, True])
@pytest.mark.parametrize("lead", [(), (2,)])
def test_a_product_of_two_sparse_tensors_is_sparse_on_its_structures_sites(lead, csr):
    rng = np.random.default_rng(11)
    x, y = random_coo(rng, 6, (*lead, 3, 5), 1), random_coo(rng, 7, (*lead, 5, 4), 1)
    x, y = (SparseCoo(t.indices, t.values[:, 0], t.shape[:-1]) for t in (x, y))
    # an entry x holds as 0 still reaches its sites (cuSPARSE's SpGEMM, which Paddle's GPU kernel calls, is structural)
    x = SparseCoo(np.concatenate([x.indices, [*[[0]] * len(lead), [2], [4]]], 1), np.append(x.values, 0.0), x.shape)
    y = SparseCoo(np.concatenate([y.indices, [*[[0]] * len(lead), [4], [3]]], 1), np.append(y.values, 1.0), y.shape)
    out = _sparse_product(x, y, csr)
    assert type(out).__name__ == ("SparseCsr" if csr else "SparseCoo")
    dense_x, dense_y = x.to_dense(), y.to_dense()
    np.testing.assert_allclose(out.to_dense(), dense_x @ dense_y, rtol=1e-12)
    held_x, held_y = (SparseCoo(t.indices, np.ones(t.nnz), t.shape).to_dense() for t in (x, y))
    structure = (held_x @ held_y) > 0
    coo = out.to_coo() if csr else out
    np.testing.assert_array_equal(coo.indices, np.stack(np.nonzero(structure)))   # sorted, each site once


def test_a_product_of_a_coo_and_a_csr_tensor_is_refused_naming_the_op():
    x, y = (SparseCoo(np.array([[0, 1], [1, 0]]), np.ones(2), (2, 2)) for _ in range(2))
    with pytest.raises(gradc.errors.ExecutionError, match=r"\(sparse_matmul\).*of its layout and rank"):
        _sparse_product(x, y, csr=False, y_csr=True)


def test_addmm_of_two_sparse_tensors_is_refused():
    """Paddle 3.3.1 declares addmm_coo_coo but registers no kernel of it (CPU or GPU)."""
    program = gradc.Program()
    block = program.global_block
    feed = {"val": np.ones(2), "idx": np.array([[0, 1], [1, 0]]), "input": np.zeros((2, 2))}
    for name, value in feed.items():
        block.create_var(name, list(value.shape), gradc.ir.to_var_type(value.dtype))
    block.create_var("x", [2, 2], VarType.FP64, type=VarType.SPARSE_COO)
    block.append_op("sparse_sparse_coo_tensor", {"values": ["val"], "indices": ["idx"]}, {"out": ["x"]},
                    {"shape": [2, 2]})
    block.create_var("out", [2, 2], VarType.FP64)
    block.append_op("sparse_addmm", {"input": ["input"], "x": ["x"], "y": ["x"]}, {"out": ["out"]})
    with pytest.raises(gradc.errors.ExecutionError, match=r"\(sparse_addmm\).*takes a dense y"):
        gradc.Executor().run(program, feed, ["out"])
