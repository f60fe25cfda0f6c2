"""Cases for gradc.ops.sparse_matmul (matmul, mv, addmm, masked_matmul): mean(dense(op(...)) * r) of a COO tensor made
of fed values at fixed sites (unsorted, one repeated), or its CSR tensor, times fed dense operands, in 2-D and in a
batch of 2; against central differences in every fed float input (but the mask's values, which masked_matmul does
not read), and second derivatives through the backward as tests/gradcheck_cases/sparse.py does them. Paddle 3.3.1
has no CPU kernel of these ops (docs/sparse.md)."""

import numpy as np

import gradc

from . import rng
from .sparse import _case, _second_order

r = rng(67)
F64, I64 = gradc.VarType.FP64, gradc.VarType.INT64
COO, CSR = gradc.VarType.SPARSE_COO, gradc.VarType.SPARSE_CSR
SITES = {2: np.array([[2, 0, 1, 0, 2, 1], [3, 1, 0, 1, 0, 2]]),     # (0, 1) twice
         3: np.array([[1, 0, 1, 0, 1], [2, 0, 0, 1, 2], [3, 1, 0, 1, 0]])}


def _op(op: str, rank: int = 2, csr: bool = False, attrs: dict | None = None):
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
        else:
            feed["y"] = r.standard_normal([*lead, 4, 2])
            out_shape = [*lead, 3, 2]
            if op == "sparse_addmm":
                feed["input"] = r.standard_normal(out_shape)
        feed["r"] = r.standard_normal(out_shape)
        for name, value in feed.items():
            block.create_var(name, list(value.shape), I64 if name == "idx" else F64)
        block.create_var("coo", x_shape, F64, type=COO)
        block.append_op("sparse_sparse_coo_tensor", {"values": ["val"], "indices": ["idx"]}, {"out": ["coo"]},
                        {"shape": x_shape})
        sparse = "coo"
        if csr:
            block.create_var("csr", x_shape, F64, type=CSR)
            block.append_op("sparse_to_sparse_csr", {"x": ["coo"]}, {"out": ["csr"]})
            sparse = "csr"
        inputs = {"sparse_matmul": {"x": [sparse], "y": ["y"]}, "sparse_mv": {"x": [sparse], "vec": ["vec"]},
                  "sparse_addmm": {"input": ["input"], "x": [sparse], "y": ["y"]},
                  "sparse_masked_matmul": {"x": ["a"], "y": ["y"], "mask": [sparse]}}[op]
        dense = "out"
        block.create_var("out", out_shape, F64, type=(CSR if csr else COO) if op == "sparse_masked_matmul" else None)
        block.append_op(op, inputs, {"out": ["out"]}, attrs or {})
        if op == "sparse_masked_matmul":
            dense = "dense"
            block.create_var("dense", out_shape, F64)
            block.append_op("sparse_to_dense", {"x": ["out"]}, {"out": ["dense"]})
        for name, shape in (("product", out_shape), ("loss", [])):
            block.create_var(name, shape, F64)
        block.append_op("elementwise_mul", {"X": [dense], "Y": ["r"]}, {"Out": ["product"]}, {"axis": -1})
        block.append_op("reduce_mean", {"X": ["product"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
        wrt = [name for name in feed if name not in ("idx", "r") and (name, op) != ("val", "sparse_masked_matmul")]
        return {"program": program, "feed": feed, "params": {}, "loss": "loss", "wrt": wrt}
    return build


BUILDS = [("sparse_matmul", {}), ("sparse_addmm", {"alpha": 0.5, "beta": -2.0}), ("sparse_masked_matmul", {})]
CASES = [_case(op, _op(op, rank, csr, attrs)) for op, attrs in BUILDS for rank in (2, 3) for csr in (False, True)]
CASES += [_case("sparse_mv", _op("sparse_mv", 2, csr)) for csr in (False, True)]
CASES += [_case(op, _second_order(_op(op, 2, True, attrs))) for op, attrs in [*BUILDS, ("sparse_mv", {})]]
