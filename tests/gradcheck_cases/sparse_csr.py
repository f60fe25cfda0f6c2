"""Cases for gradc.ops.sparse_csr (to_sparse_csr, to_sparse_coo) and the CSR forms of the elementwise ops, relu and
softmax: mean(to_dense(ops(csr)) * r), the CSR tensor made of fed values at fixed sites (a COO tensor converted, its
sites in no order, one repeated), or of a dense tensor fed (no entry 0), against central differences; second
derivatives through the backward as tests/gradcheck_cases/sparse.py does them."""

import numpy as np

import gradc

from . import rng
from .sparse import _case, _second_order

r = rng(61)
F64, I64 = gradc.VarType.FP64, gradc.VarType.INT64
COO, CSR = gradc.VarType.SPARSE_COO, gradc.VarType.SPARSE_CSR
SITES = {2: np.array([[2, 0, 1, 0, 2, 1, 0], [3, 1, 0, 1, 0, 2, 3]]),     # (0, 1) twice
         3: np.array([[1, 0, 1, 0, 1], [2, 0, 0, 1, 2], [3, 1, 0, 1, 0]])}
SHAPES = {2: [3, 4], 3: [2, 3, 4]}


def _chain(steps, rank: int = 2, dense: bool = False, values=None):
    """steps: (op, attrs, var type of its result), applied in turn to the CSR tensor of the fed values."""
    def build():
        program = gradc.Program()
        block = program.global_block
        shape, sites = SHAPES[rank], SITES[rank]
        feed = {"val": r.uniform(0.3, 1.5, shape) if dense else (r.uniform(-0.8, 0.8, sites.shape[1])
                                                                  if values is None else values),
                "r": r.standard_normal(shape)}
        for name in ("val", "r", "dense", "product"):
            block.create_var(name, list(feed.get(name, feed["r"]).shape), F64)
        block.create_var("loss", [], F64)
        if dense:
            source = "val"
        else:
            feed["idx"] = sites
            block.create_var("idx", list(sites.shape), I64)
            block.create_var("coo", shape, F64, type=COO)
            block.append_op("sparse_sparse_coo_tensor", {"values": ["val"], "indices": ["idx"]}, {"out": ["coo"]},
                            {"shape": shape})
            source = "coo"
        block.create_var("x", shape, F64, type=CSR)
        block.append_op("sparse_to_sparse_csr", {"x": [source]}, {"out": ["x"]})
        last = "x"
        for i, (op, attrs, var_type) in enumerate(steps):
            block.create_var(f"s{i}", shape, F64, type=var_type)
            block.append_op(op, {"x": [last]}, {"out": [f"s{i}"]}, attrs)
            last = f"s{i}"
        block.append_op("sparse_to_dense", {"x": [last]}, {"out": ["dense"]})
        block.append_op("elementwise_mul", {"X": ["dense"], "Y": ["r"]}, {"Out": ["product"]}, {"axis": -1})
        block.append_op("reduce_mean", {"X": ["product"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
        return {"program": program, "feed": feed, "params": {}, "loss": "loss", "wrt": ["val"]}
    return build


TO_COO = ("sparse_to_sparse_coo", {"sparse_dim": 2}, COO)
CHAINS = {
    "sparse_to_sparse_csr": [_chain([]), _chain([], rank=3), _chain([], dense=True)],
    "sparse_to_sparse_coo": [_chain([TO_COO, ("sparse_sin", {}, COO)]),
                             _chain([("sparse_to_dense", {}, F64), TO_COO])],
}
CASES = [_case(op, build) for op, builds in CHAINS.items() for build in builds]
CASES += [_case(op, _second_order(build)) for op, builds in CHAINS.items() for build in builds]
CASES += [_case(op, _chain([(op, {}, CSR)], rank)) for op in ("sparse_sin", "sparse_tanh", "sparse_relu")
          for rank in (2, 3)]
CASES += [_case("sparse_softmax", _chain([("sparse_softmax", {}, CSR)], rank)) for rank in (2, 3)]
CASES += [_case("sparse_softmax_grad", _second_order(_chain([("sparse_softmax", {}, CSR)], 3)))]
