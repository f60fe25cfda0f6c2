"""Cases for gradc.ops.linalg_extra: eig (its eigenvalues with random complex weights; its eigenvectors through their
moduli, which do not depend on the phase LAPACK picks), eigvalsh (both triangles read), lu_solve (each trans, batched)
and svdvals, and the second derivatives of svdvals_grad, lu_solve_grad, eigvalsh_grad and eig_grad (real and complex
spectra, phase-free losses). Matrices are well conditioned, spectra
without repeated values."""

import numpy as np

import gradc
from gradc.ir import VarType

from . import Case, rng
from .second_order import second_order

r = rng(53)


def randn(*shape):
    return r.standard_normal(shape)


def shifted(*shape, by=3.0):
    return randn(*shape) + by * np.eye(shape[-1])


def _packed_lu(a: np.ndarray) -> dict:
    """lu_solve's lu and pivots inputs: gradc's own lu of ``a``."""
    program = gradc.Program()
    block = program.global_block
    block.create_var("a", list(a.shape), VarType.FP64)
    for name in ("lu", "pivots", "infos"):
        block.create_var(name, None, None)
    block.append_op("lu", {"X": ["a"]}, {"Out": ["lu"], "Pivots": ["pivots"], "Infos": ["infos"]}, {"pivots": True})
    lu, pivots = gradc.Executor().run(program, {"a": a}, ["lu", "pivots"], gradc.Scope())
    return {"lu": lu, "pivots": pivots}


def _lu_solve(b_shape, a_shape, trans="N") -> tuple[dict, dict]:
    return {"b": randn(*b_shape), **_packed_lu(randn(*a_shape) + 2 * np.eye(a_shape[-1]))}, {"trans": trans}


def _eig_loss(x: np.ndarray, of_vectors: bool) -> dict:
    """loss = sum(W * as_real(w)) of eig's eigenvalues w, or sum(W * |V|) of its eigenvectors V (phase-free)."""
    program = gradc.Program()
    block = program.global_block
    shape = list(x.shape) if of_vectors else [*x.shape[:-1], 2]
    block.create_var("x", list(x.shape), VarType.FP64).stop_gradient = False
    block.create_var("values", list(x.shape[:-1]), VarType.COMPLEX128)
    block.create_var("vectors", list(x.shape), VarType.COMPLEX128)
    for name, dims in (("w", shape), ("parts", shape), ("weighted", shape), ("loss", [])):
        block.create_var(name, dims, VarType.FP64)
    block.append_op("eig", {"X": ["x"]}, {"Eigenvalues": ["values"], "Eigenvectors": ["vectors"]})
    block.append_op("abs" if of_vectors else "as_real", {"X": ["vectors" if of_vectors else "values"]},
                    {"Out": ["parts"]})
    block.append_op("elementwise_mul", {"X": ["parts"], "Y": ["w"]}, {"Out": ["weighted"]})
    block.append_op("reduce_sum", {"X": ["weighted"]}, {"Out": ["loss"]}, {"reduce_all": True})
    return {"program": program, "feed": {"x": x, "w": randn(*shape)}, "wrt": ["x"], "loss": "loss"}


def _eigvalsh_vectors(x: np.ndarray, uplo: str) -> dict:
    """loss = sum(W * V^2) of eigvalsh's Eigenvectors V (sign-free): its maker emits eigh_grad, which reads V's grad."""
    program = gradc.Program()
    block = program.global_block
    block.create_var("x", list(x.shape), VarType.FP64).stop_gradient = False
    for name, dims in (("values", list(x.shape[:-1])), ("vectors", list(x.shape)), ("squares", list(x.shape)),
                       ("w", list(x.shape)), ("weighted", list(x.shape)), ("loss", [])):
        block.create_var(name, dims, VarType.FP64)
    block.append_op("eigvalsh", {"X": ["x"]}, {"Eigenvalues": ["values"], "Eigenvectors": ["vectors"]}, {"UPLO": uplo})
    block.append_op("square", {"X": ["vectors"]}, {"Out": ["squares"]})
    block.append_op("elementwise_mul", {"X": ["squares"], "Y": ["w"]}, {"Out": ["weighted"]})
    block.append_op("reduce_sum", {"X": ["weighted"]}, {"Out": ["loss"]}, {"reduce_all": True})
    return {"program": program, "feed": {"x": x, "w": randn(*x.shape)}, "wrt": ["x"], "loss": "loss"}


def _eig_twice(x: np.ndarray, of_vectors: bool, unknown: bool = False) -> dict:
    """_eig_loss's program, its backward, then loss2 = sum(W2 * x@GRAD): loss2 differentiated with respect to x and
    W1 (the first loss's weights) checks eig_grad's maker; each term of loss1 is phase-free, so loss2 is too.
    ``unknown``: the matrix size declared -1 (x, its grad, the eigenvalues and eigenvectors)."""
    case = _eig_loss(x, of_vectors)
    program, block = case["program"], case["program"].global_block
    block.var("w").stop_gradient = False
    gradc.append_backward(program, "loss", parameter_list=["x"])
    for name, dims in (("w2", list(x.shape)), ("weighted2", list(x.shape)), ("loss2", [])):
        block.create_var(name, dims, VarType.FP64)
    block.append_op("elementwise_mul", {"X": ["x@GRAD"], "Y": ["w2"]}, {"Out": ["weighted2"]})
    block.append_op("reduce_sum", {"X": ["weighted2"]}, {"Out": ["loss2"]}, {"reduce_all": True})
    for name in ("x", "x@GRAD", "values", "vectors") if unknown else ():
        var = block.var(name)
        var.shape = [*var.shape[:x.ndim - 2], *[-1] * (len(var.shape) - x.ndim + 2)]
    return {**case, "feed": {**case["feed"], "w2": randn(*x.shape)}, "wrt": ["x", "w"], "loss": "loss2"}


LU_SOLVE = [_lu_solve((3, 2), (3, 3)), _lu_solve((2, 4, 3), (2, 4, 4), "T"), _lu_solve((3, 1), (3, 3), "C")]
EIG_REAL = np.array([[2.0, 1.0, 0.5], [0.3, -1.0, 0.2], [0.1, 0.4, 0.5]])   # real, distinct eigenvalues
EIG_COMPLEX = np.array([[0.5, -1.2, 0.3], [1.0, 0.2, -0.4], [0.2, 0.6, 1.5]])   # 0.33 +- 1.19i and 1.54

CASES = [
    Case("eig", {}, {"loss": "w"}, program=lambda: _eig_loss(randn(3, 3), False)),
    Case("eig", {}, {"loss": "w batched"}, program=lambda: _eig_loss(randn(2, 4, 4), False)),
    Case("eig", {}, {"loss": "w real"}, program=lambda: _eig_loss(EIG_REAL, False)),
    Case("eig", {}, {"loss": "|V|"}, program=lambda: _eig_loss(randn(3, 3), True)),
    Case("eig", {}, {"loss": "|V| batched"}, program=lambda: _eig_loss(randn(2, 4, 4), True)),
    Case("eig", {}, {"loss": "|V| real"}, program=lambda: _eig_loss(EIG_REAL, True)),
    Case("eigvalsh", {"X": randn(3, 3)}),
    Case("eigvalsh", {"X": randn(2, 4, 4)}, {"UPLO": "U"}),
    Case("eigvalsh", {}, {"loss": "V^2"}, program=lambda: _eigvalsh_vectors(randn(3, 3), "L")),
    Case("eigvalsh", {}, {"loss": "V^2 batched", "UPLO": "U"}, program=lambda: _eigvalsh_vectors(randn(2, 4, 4), "U")),
    *[Case("lu_solve", inputs, attrs) for inputs, attrs in LU_SOLVE],
    Case("svdvals", {"x": randn(4, 3)}),
    Case("svdvals", {"x": randn(2, 3, 5)}),
    second_order("svdvals", {"x": randn(3, 3)}),
    second_order("svdvals", {"x": randn(2, 4, 3)}),
    *[second_order("lu_solve", inputs, attrs) for inputs, attrs in LU_SOLVE],
    Case("eig_grad", {}, {"loss": "w"}, program=lambda: _eig_twice(EIG_COMPLEX, False)),
    Case("eig_grad", {}, {"loss": "w batched"}, program=lambda: _eig_twice(randn(2, 3, 3), False)),
    Case("eig_grad", {}, {"loss": "w real"}, program=lambda: _eig_twice(EIG_REAL, False)),
    Case("eig_grad", {}, {"loss": "|V|"}, program=lambda: _eig_twice(EIG_COMPLEX, True)),
    Case("eig_grad", {}, {"loss": "|V| batched"}, program=lambda: _eig_twice(randn(2, 3, 3), True)),
    Case("eig_grad", {}, {"loss": "|V| real"}, program=lambda: _eig_twice(EIG_REAL, True)),
    second_order("eigvalsh", {"X": randn(3, 3)}),
    second_order("eigvalsh", {"X": randn(2, 4, 4)}, {"UPLO": "U"}),
    # matrix sizes known at run time only
    Case("eig_grad", {}, {"loss": "w, size -1"}, program=lambda: _eig_twice(EIG_COMPLEX, False, unknown=True)),
    Case("eig_grad", {}, {"loss": "|V| batched, size -1"},
         program=lambda: _eig_twice(randn(2, 3, 3), True, unknown=True)),
    second_order("svdvals", {"x": randn(2, 4, 3)}, unknown={"x": [1, 2], "s": [1]}),
    second_order("eigvalsh", {"X": randn(2, 3, 3)}, unknown={"X": [1, 2], "Eigenvalues": [1], "Eigenvectors": [1, 2]}),
]

