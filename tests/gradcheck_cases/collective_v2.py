"""Cases for gradc.ops.collective_v2 over a group of one rank, where each is exactly defined: a reduction over one
rank is X (root holds it), a gather or scatter of one rank is X, all_to_all of one rank is x. tests/test_ranks_v2.py
checks the same ops across ranks; the max, min and prod reductions refuse to be differentiated."""

from functools import partial

import numpy as np

from gradc.layers import ProgramBuilder

from . import Case, rng
from .second_order import second_order

r = rng(137)


def randn(*shape):
    return r.standard_normal(shape)


ONE = {"nranks": 1}
CASES = [
    Case("c_allgather", {"X": randn(3, 4)}, ONE),
    Case("c_allgather", {"X": np.array(0.7)}, ONE),
    Case("c_reducescatter", {"X": randn(3, 4)}, ONE),
    Case("c_reduce_sum", {"X": randn(2, 5)}),
    Case("c_broadcast", {"X": randn(2, 5)}),
    Case("reduce", {"x": randn(3, 2)}, {"reduce_type": 0}),
    Case("broadcast", {"x": randn(3, 2)}),
    Case("all_to_all", {"x": randn(4, 3)}),
    second_order("c_allgather", {"X": randn(3, 4)}, ONE, grad_type="c_reducescatter"),
    second_order("c_reducescatter", {"X": randn(3, 4)}, ONE, grad_type="c_allgather"),
    second_order("c_reduce_sum", {"X": randn(2, 5)}, grad_type="c_broadcast"),
    second_order("c_broadcast", {"X": randn(2, 5)}, grad_type="c_reduce_sum"),
    second_order("reduce", {"x": randn(3, 2)}, grad_type="broadcast"),
    second_order("broadcast", {"x": randn(3, 2)}, grad_type="reduce"),
    second_order("all_to_all", {"x": randn(4, 3)}, grad_type="all_to_all"),
]


def _reduced(op_type: str) -> dict:
    """loss = sum(op_type(x)): its maker refuses."""
    net = ProgramBuilder()
    x = net.data("x", [2, 3], "float64", stop_gradient=False)
    out = net.op(op_type, {"X": x}, {})[0]
    loss = net.op("reduce_sum", {"X": out}, {"reduce_all": True})[0]
    return {"program": net.program, "feed": {x: randn(2, 3)}, "loss": loss, "wrt": [x]}


REFUSED = [Case(f"c_{kind}_{how}", {}, program=partial(_reduced, f"c_{kind}_{how}"))
           for kind in ("allreduce", "reduce") for how in ("max", "min", "prod")]
