"""Cases for gradc.ops.sparse_binary (subtract, multiply, divide, divide_scalar, transpose, coalesce):
mean(to_dense(op(x, y)) * r) of COO tensors x and y made of fed values at fixed sites, against central differences in
both tensors' values; second derivatives through the backward as tests/gradcheck_cases/sparse.py does them.
x and y share some sites and not others (the union's path), or all of them (the same-sites path); x repeats a
site (coalesce merges it); divide's y holds every site, so no quotient is 0/0."""

import numpy as np

import gradc

from . import rng
from .sparse import _case, _one_op, _second_order

r = rng(59)
F64, I64 = gradc.VarType.FP64, gradc.VarType.INT64
X_SITES = np.array([[0, 1, 1, 0, 1], [2, 0, 1, 1, 2], [3, 0, 1, 3, 2]])
Y_SITES = np.array([[1, 0, 1, 0], [0, 2, 2, 0], [0, 3, 1, 1]])   # two of x's sites, two others
EVERY_SITE = np.stack(np.unravel_index(np.arange(24), (2, 3, 4)))
REPEATED = np.array([[0, 1, 0, 0, 1], [2, 0, 2, 1, 2], [3, 0, 3, 3, 2]])   # x's site (0, 2, 3) twice


def _two_op(op: str, x_sites=X_SITES, y_sites=Y_SITES, y_values=None):
    def build():
        program = gradc.Program()
        block = program.global_block
        dims = [2, 3, 4, 2]
        feed = {"val": r.standard_normal((x_sites.shape[1], 2)), "idx": x_sites, "r": r.standard_normal(dims),
                "vay": r.standard_normal((y_sites.shape[1], 2)) if y_values is None else y_values, "idy": y_sites}
        for name, value in feed.items():
            block.create_var(name, list(value.shape), I64 if name.startswith("id") else F64)
        for name, var_dims in (("dense", dims), ("product", dims), ("loss", [])):
            block.create_var(name, var_dims, F64)
        for name in ("x", "y", "out"):
            block.create_var(name, dims, F64, type=gradc.VarType.SPARSE_COO)
        for name, values, indices in (("x", "val", "idx"), ("y", "vay", "idy")):
            block.append_op("sparse_sparse_coo_tensor", {"values": [values], "indices": [indices]},
                            {"out": [name]}, {"shape": dims})
        block.append_op(op, {"x": ["x"], "y": ["y"]}, {"out": ["out"]})
        block.append_op("sparse_to_dense", {"x": ["out"]}, {"out": ["dense"]})
        block.append_op("elementwise_mul", {"X": ["dense"], "Y": ["r"]}, {"Out": ["product"]}, {"axis": -1})
        block.append_op("reduce_mean", {"X": ["product"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
        return {"program": program, "feed": feed, "params": {}, "loss": "loss", "wrt": ["val", "vay"]}
    return build


AWAY_FROM_ZERO = np.where(r.uniform(0, 1, (24, 2)) < 0.5, -1, 1) * r.uniform(0.5, 1.5, (24, 2))
TRANSPOSE = {"perm": [2, 0, 1, 3]}
CASES = [_case(op, _two_op(op)) for op in ("sparse_subtract", "sparse_multiply")]
CASES += [_case(op, _two_op(op, X_SITES, X_SITES)) for op in ("sparse_subtract", "sparse_multiply")]
CASES += [_case("sparse_multiply_grad", _second_order(_two_op("sparse_multiply", REPEATED))),
          _case("sparse_multiply_grad", _second_order(_two_op("sparse_multiply", X_SITES, X_SITES))),
          _case("sparse_divide", _two_op("sparse_divide", REPEATED, EVERY_SITE, AWAY_FROM_ZERO)),
          _case("sparse_divide_scalar", _one_op("sparse_divide_scalar", r.standard_normal((5, 2)), {"scalar": -2.5})),
          _case("sparse_transpose", _one_op("sparse_transpose", r.standard_normal((5, 2)), TRANSPOSE, [4, 2, 3, 2])),
          _case("sparse_transpose_grad", _second_order(_one_op("sparse_transpose", r.standard_normal((5, 2)),
                                                                 TRANSPOSE, [4, 2, 3, 2]))),
          _case("sparse_coalesce", _one_op("sparse_coalesce", r.standard_normal((5, 2)), indices=REPEATED)),
          _case("sparse_coalesce_grad", _second_order(_one_op("sparse_coalesce", r.standard_normal((5, 2)),
                                                                indices=REPEATED)))]
CASES += [_case("sparse_divide_grad", _second_order(_two_op("sparse_divide", REPEATED, EVERY_SITE, AWAY_FROM_ZERO)))]
