"""Cases for gradc.ops.sparse_matmul (matmul, mv, addmm, masked_matmul): mean(dense(op(...)) * r) of a COO tensor made
of fed values at fixed sites (unsorted, one repeated), or its CSR tensor, times fed dense operands (or, for matmul,
a second sparse tensor of x's layout: its values fed, at Y_SITES), in 2-D and in a batch of 2; against central
differences in every fed float input (but the mask's values, which masked_matmul does not read), and second
derivatives through the backward as tests/gradcheck_cases/sparse.py does them. Paddle 3.3.1 has no CPU kernel of
these ops (docs/sparse.md)."""

import numpy as np

import gradc

from . import rng
from .sparse import _case, _second_order

r = rng(67)
F64, I64 = gradc.VarType.FP64, gradc.VarType.INT64
COO, CSR = gradc.VarType.SPARSE_COO, gradc.VarType.SPARSE_CSR
SITES = {2: np.array([[2, 0, 1, 0, 2, 1], [3, 1, 0, 1, 0, 2]]),     # (0, 1) twice
         3: np.array([[1, 0, 1, 0, 1], [2, 0, 0, 1, 2], [3, 1, 0, 1, 0]])}
# y [4, 2] (or [2, 4, 2]): row 3 empty, so x's column 3 reaches nothing; (2, 1) twice
Y_SITES = {2: np.array([[2, 0, 1, 2, 2], [1, 0, 1, 0, 1]]), 3: np.array([[0, 1, 1, 0], [1, 0, 2, 2], [0, 1, 1, 1]])}


def _sparse(block, values: str, indices: str, shape: list[int], csr: bool, name: str) -> str:
    """The COO tensor of ``values`` at ``indices`` (as CSR when ``csr``), named ``name``."""
    block.create_var(name, shape, F64, type=COO)
    block.append_op("sparse_sparse_coo_tensor", {"values": [values], "indices": [indices]}, {"out": [name]},
                    {"shape": shape})
    if not csr:
        return name
    block.create_var(f"{name}_csr", shape, F64, type=CSR)
    block.append_op("sparse_to_sparse_csr", {"x": [name]}, {"out": [f"{name}_csr"]})
    return f"{name}_csr"


def _op(op: str, rank: int = 2, csr: bool = False, attrs: dict | None = None, sparse_y: bool = False):
    def build():
        program = gradc.Program()
        block = program.global_block
        lead = [2] if rank == 3 else []
        x_shape, sites = [*lead, 3, 4], SITES[rank]
        feed = {"val": r.standard_normal(sites.shape[1]), "idx": sites}
        if op == "sparse_masked_matmul":   # dense x [3, 4] @ y [4, 3] at the sparse mask's [3, 3] sites
            x_shape = [*lead, 3, 3]
            feed.update(a=r.standard_normal([*lead, 3, 4]), y=r.standard_normal([*lead, 4, 3]),
                        idx=np.minimum(sites, 2))
            out_shape = x_shape
        elif op == "sparse_mv":
            feed["vec"] = r.standard_normal(4)
            out_shape = [3]
        elif sparse_y:
            feed.update(y_val=r.standard_normal(Y_SITES[rank].shape[1]), y_idx=Y_SITES[rank])
            out_shape = [*lead, 3, 2]
        else:
            feed["y"] = r.standard_normal([*lead, 4, 2])
            out_shape = [*lead, 3, 2]
            if op == "sparse_addmm":
                feed["input"] = r.standard_normal(out_shape)
        feed["r"] = r.standard_normal(out_shape)
        for name, value in feed.items():
            block.create_var(name, list(value.shape), I64 if name.endswith("idx") else F64)
        sparse = _sparse(block, "val", "idx", x_shape, csr, "coo")
        y = _sparse(block, "y_val", "y_idx", [*lead, 4, 2], csr, "y_coo") if sparse_y else "y"
        inputs = {"sparse_matmul": {"x": [sparse], "y": [y]}, "sparse_mv": {"x": [sparse], "vec": ["vec"]},
                  "sparse_addmm": {"input": ["input"], "x": [sparse], "y": ["y"]},
                  "sparse_masked_matmul": {"x": ["a"], "y": ["y"], "mask": [sparse]}}[op]
        dense = "out"
        sparse_out = op == "sparse_masked_matmul" or sparse_y
        block.create_var("out", out_shape, F64, type=(CSR if csr else COO) if sparse_out else None)
        block.append_op(op, inputs, {"out": ["out"]}, attrs or {})
        if sparse_out:
            dense = "dense"
            block.create_var("dense", out_shape, F64)
            block.append_op("sparse_to_dense", {"x": ["out"]}, {"out": ["dense"]})
        for name, shape in (("product", out_shape), ("loss", [])):
            block.create_var(name, shape, F64)
        block.append_op("elementwise_mul", {"X": [dense], "Y": ["r"]}, {"Out": ["product"]}, {"axis": -1})
        block.append_op("reduce_mean", {"X": ["product"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
        wrt = [name for name in feed
               if name not in ("idx", "y_idx", "r") and (name, op) != ("val", "sparse_masked_matmul")]
        return {"program": program, "feed": feed, "params": {}, "loss": "loss", "wrt": wrt}
    return build


BUILDS = [("sparse_matmul", {}), ("sparse_addmm", {"alpha": 0.5, "beta": -2.0}), ("sparse_masked_matmul", {})]
CASES = [_case(op, _op(op, rank, csr, attrs)) for op, attrs in BUILDS for rank in (2, 3) for csr in (False, True)]
CASES += [_case("sparse_mv", _op("sparse_mv", 2, csr)) for csr in (False, True)]
CASES += [_case(op, _second_order(_op(op, 2, True, attrs))) for op, attrs in [*BUILDS, ("sparse_mv", {})]]
CASES += [_case("sparse_matmul", _op("sparse_matmul", rank, csr, sparse_y=True)) for rank in (2, 3)
          for csr in (False, True)]
CASES += [_case("sparse_matmul", _second_order(_op("sparse_matmul", 2, csr, sparse_y=True))) for csr in (False, True)]
