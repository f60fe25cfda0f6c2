"""Cases for the CSR forms of subtract, multiply, divide, divide by a number, transpose, reshape, slice and sum
(gradc.ops.sparse_binary, sparse_shape on SPARSE_CSR vars): mean(to_dense(op(x[, y])) * r), x and y the CSR tensors
of COO tensors made of fed values at fixed sites (x repeats a site), 2-D and batched 3-D, against central
differences in both tensors' values; second derivatives through the backward as tests/gradcheck_cases/sparse.py does
them. y shares some of x's sites and not others, or all of them; divide's y holds every site, away from 0."""

import numpy as np

import gradc

from . import rng
from .sparse import _case, _second_order
from .sparse_csr import SHAPES, SITES

r = rng(67)
F64, I64 = gradc.VarType.FP64, gradc.VarType.INT64
COO, CSR = gradc.VarType.SPARSE_COO, gradc.VarType.SPARSE_CSR
OTHER_SITES = {2: np.array([[0, 2, 1, 2], [1, 3, 3, 2]]),                       # two of x's sites, two others
               3: np.array([[1, 0, 0, 1], [2, 0, 2, 1], [3, 1, 3, 0]])}
EVERY_SITE = {rank: np.stack(np.unravel_index(np.arange(np.prod(shape)), shape)) for rank, shape in SHAPES.items()}


def _csr_op(op: str, attrs: dict | None = None, out_shape=None, rank: int = 2, y_sites=None):
    """The case's build; with ``y_sites`` op takes a second CSR tensor (values away from 0 when it holds every
    site)."""
    def build():
        program = gradc.Program()
        block = program.global_block
        shape = SHAPES[rank]
        out = shape if out_shape is None else out_shape
        tensors = {"x": ("val", "idx", SITES[rank])}
        if y_sites is not None:
            tensors["y"] = ("vay", "idy", y_sites)
        feed = {"r": r.standard_normal(out)}
        for name, (values, indices, sites) in tensors.items():
            count = sites.shape[1]
            feed[values] = (r.choice([-1, 1], count) * r.uniform(0.5, 1.5, count) if count == np.prod(shape)
                            else r.uniform(-1, 1, count))
            feed[indices] = sites
            block.create_var(values, [count], F64)
            block.create_var(indices, list(sites.shape), I64)
            block.create_var(f"{name}_coo", shape, F64, type=COO)
            block.create_var(name, shape, F64, type=CSR)
            block.append_op("sparse_sparse_coo_tensor", {"values": [values], "indices": [indices]},
                            {"out": [f"{name}_coo"]}, {"shape": shape})
            block.append_op("sparse_to_sparse_csr", {"x": [f"{name}_coo"]}, {"out": [name]})
        for name, dims in (("r", out), ("dense", out), ("product", out), ("loss", [])):
            block.create_var(name, dims, F64)
        block.create_var("out", out, F64, type=CSR)
        block.append_op(op, {slot: [slot] for slot in tensors}, {"out": ["out"]}, attrs or {})
        block.append_op("sparse_to_dense", {"x": ["out"]}, {"out": ["dense"]})
        block.append_op("elementwise_mul", {"X": ["dense"], "Y": ["r"]}, {"Out": ["product"]}, {"axis": -1})
        block.append_op("reduce_mean", {"X": ["product"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
        return {"program": program, "feed": feed, "params": {}, "loss": "loss",
                "wrt": ["val", "vay"] if y_sites is not None else ["val"]}
    return build


PAIRS = [_csr_op(op, rank=rank, y_sites=sites) for op in ("sparse_subtract", "sparse_multiply") for rank in (2, 3)
         for sites in (OTHER_SITES[rank], SITES[rank])]
DIVIDES = [_csr_op("sparse_divide", rank=rank, y_sites=EVERY_SITE[rank]) for rank in (2, 3)]
TRANSPOSES = [_csr_op("sparse_transpose", {"perm": [1, 0]}, [4, 3]),
              *(_csr_op("sparse_transpose", {"perm": perm}, [SHAPES[3][p] for p in perm], 3)
                for perm in ([0, 2, 1], [1, 0, 2], [2, 0, 1], [2, 1, 0]))]
RESHAPES = [_csr_op("sparse_reshape", {"shape": [2, 6]}, [2, 6]), _csr_op("sparse_reshape", {"shape": [2, 2, 3]},
                                                                          [2, 2, 3]),
            _csr_op("sparse_reshape", {"shape": [4, 3, 2]}, [4, 3, 2], 3),
            _csr_op("sparse_reshape", {"shape": [6, -1]}, [6, 4], 3)]
SLICES = [_csr_op("sparse_slice", {"axes": [0, 1], "starts": [1, 1], "ends": [3, 3]}, [2, 2]),
          _csr_op("sparse_slice", {"axes": [1, 2], "starts": [1, 0], "ends": [3, 3]}, [2, 2, 3], 3)]
SUMS = [_csr_op("sparse_sum", {"axis": []}, [1, 1]), _csr_op("sparse_sum", {"axis": [-1]}, [3, 1]),
        _csr_op("sparse_sum", {"axis": [-1], "keepdim": True}, [2, 3, 1], 3),
        _csr_op("sparse_sum", {"axis": [2]}, [2, 3], 3),
        _csr_op("sparse_sum", {"axis": [], "keepdim": True}, [1, 1, 1], 3)]
FIRST = {"sparse_subtract": PAIRS[:4], "sparse_multiply": PAIRS[4:], "sparse_divide": DIVIDES,
         "sparse_divide_scalar": [_csr_op("sparse_divide_scalar", {"scalar": -2.5}, rank=rank) for rank in (2, 3)],
         "sparse_transpose": TRANSPOSES, "sparse_reshape": RESHAPES, "sparse_slice": SLICES, "sparse_sum": SUMS}
CASES = [_case(op, build) for op, builds in FIRST.items() for build in builds]
SECOND = {"sparse_multiply_grad": PAIRS[4:], "sparse_divide_grad": DIVIDES, "sparse_transpose_grad": TRANSPOSES[1:3],
          "sparse_reshape_grad": RESHAPES[2:], "sparse_slice_grad": SLICES, "sparse_sum_grad": SUMS[1:4]}
CASES += [_case(op, _second_order(build)) for op, builds in SECOND.items() for build in builds]
