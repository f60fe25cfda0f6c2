"""Cases for the differentiable MoE exchange ops at one rank (gradc.ops.moe_routing): 5 rows to 3 experts, one of
them sent none; second order: second_order_variants.py."""

import numpy as np

from . import Case, rng

r = rng(71)
EXCHANGE = {"X": r.standard_normal((5, 3)), "local_count": np.array([2, 0, 3], np.int64),
            "global_count": np.array([2, 0, 3], np.int64)}

CASES = [Case(op, EXCHANGE, wrt=["X"]) for op in ("global_scatter", "global_gather")]
