"""CSR tensors at run time (gradc.executor.sparse_value.SparseCsr, gradc.ops.sparse_csr): a dense matrix and a batch
of them converted by sparse_to_sparse_csr hold Paddle's crows, cols and values, sparse_to_sparse_coo gives its
indices, and sin, relu and softmax of them give its dygraph outputs and gradients (fixture csr,
tools/paddle_sparse_csr_fixtures.py); COO tensors with unsorted, repeated sites convert as dense numpy says."""

import numpy as np
import pytest

import gradc
from gradc.executor.sparse_value import SparseCoo, SparseCsr, csr_of
from gradc.ir import VarType
from sparse_fixtures import DATA

FOLDER = DATA / "csr"
FEED, EXPECTED = dict(np.load(FOLDER / "feed.npz")), dict(np.load(FOLDER / "expected.npz"))


def _program(x: np.ndarray, function: str | None):
    """x -> to_sparse_csr -> the function -> (the CSR result, its values, to_sparse_coo of it) and the loss
    sum(values * r), r fed."""
    program = gradc.Program()
    block = program.global_block
    block.create_var("x", list(x.shape), VarType.FP32).stop_gradient = False
    for name, var_type in (("csr", VarType.SPARSE_CSR), ("out", VarType.SPARSE_CSR), ("coo", VarType.SPARSE_COO)):
        block.create_var(name, list(x.shape), VarType.FP32, type=var_type)
    for name, shape in (("values", [-1]), ("r", [-1]), ("p", [-1]), ("loss", [])):
        block.create_var(name, shape, VarType.FP32)
    block.append_op("sparse_to_sparse_csr", {"x": ["x"]}, {"out": ["csr"]})
    op = {"sin": "sparse_sin", "relu": "sparse_relu", "softmax": "sparse_softmax", None: "sparse_relu"}[function]
    block.append_op(op, {"x": ["csr"]}, {"out": ["out"]})
    block.append_op("sparse_values", {"x": ["out"]}, {"out": ["values"]})
    block.append_op("sparse_to_sparse_coo", {"x": ["csr"]}, {"out": ["coo"]}, {"sparse_dim": x.ndim})
    block.append_op("elementwise_mul", {"X": ["values"], "Y": ["r"]}, {"Out": ["p"]}, {"axis": -1})
    block.append_op("reduce_sum", {"X": ["p"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
    return program


@pytest.mark.parametrize("case", ["2d", "3d"])
def test_to_sparse_csr_and_back_are_paddles(case):
    x = FEED[case]
    csr, coo = gradc.Executor().run(_program(x, None), {"x": x, "r": np.zeros(1, np.float32)}, ["csr", "coo"])
    assert isinstance(csr, SparseCsr) and isinstance(coo, SparseCoo)
    for part in ("crows", "cols", "values"):
        np.testing.assert_array_equal(getattr(csr, part), EXPECTED[f"{case}:{part}"], err_msg=part)
    np.testing.assert_array_equal(coo.indices, EXPECTED[f"{case}:coo_indices"])
    np.testing.assert_array_equal(csr.to_dense(), x)


@pytest.mark.parametrize("function", ["sin", "relu", "softmax"])
@pytest.mark.parametrize("case", ["2d", "3d"])
def test_functions_of_a_csr_tensor_and_their_gradients_are_paddles(case, function):
    x, r = FEED[case], FEED[f"{case}:{function}:r"]
    program = _program(x, function)
    (grad,) = gradc.gradients(program, "loss", ["x"])
    out, dx = gradc.Executor().run(program, {"x": x, "r": r}, ["values", grad])
    np.testing.assert_allclose(out, EXPECTED[f"{case}:{function}:out"], rtol=1e-6)
    sites = tuple(np.stack(np.nonzero(x)))
    np.testing.assert_allclose(dx[sites], EXPECTED[f"{case}:{function}:grad"], rtol=1e-5, atol=1e-7)
    assert not dx[x == 0].any()


def test_a_coo_tensor_with_repeated_unsorted_sites_becomes_the_csr_of_its_sum():
    rng = np.random.default_rng(2)
    indices = np.array([[1, 0, 1, 0, 1, 1], [0, 1, 0, 1, 2, 2], [3, 2, 1, 2, 0, 0]])   # two sites twice
    coo = SparseCoo(indices, rng.standard_normal(6), (2, 3, 4))
    csr = csr_of(coo)
    assert csr.nnz == 4 and csr.crows.shape == (2 * 4,)
    np.testing.assert_allclose(csr.to_dense(), coo.to_dense())
    for batch in range(2):   # each batch's rows from 0, its columns sorted within a row
        crows = csr.crows[batch * 4:(batch + 1) * 4]
        assert crows[0] == 0 and (np.diff(crows) >= 0).all()
    np.testing.assert_array_equal(csr.to_coo().indices, np.stack(np.nonzero(coo.to_dense())))
