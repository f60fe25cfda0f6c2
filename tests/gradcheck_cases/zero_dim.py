"""Cases with 0-d inputs: an axis 0 or -1 of a 0-d tensor names the whole tensor, as in Paddle
(a reduce or a cumsum over it is the identity, a softmax over it is 1)."""

import numpy as np

from . import Case

X0 = np.array(0.7)

CASES = [
    *[Case(op, {"X": X0}, {"dim": dim, "keep_dim": keep})
      for op in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod")
      for dim, keep in (([0], False), ([-1], True))],
    Case("reduce_sum", {"X": X0}, {"dim": [0, -1]}),
    Case("cumsum", {"X": X0}),
    Case("cumsum", {"X": X0}, {"axis": 0, "reverse": True}),
    Case("cumsum", {"X": X0}, {"flatten": True}),
    Case("p_norm", {"X": X0}),
    Case("p_norm", {"X": -X0}, {"porder": 3.0, "axis": 0, "keepdim": True}),
    Case("p_norm", {"X": -X0}, {"porder": float("inf")}),
    Case("softmax", {"X": X0}),
    Case("log_softmax", {"X": X0}, {"axis": 0}),
    Case("top_k_v2", {"X": X0}, {"k": 1}, outputs={"Out": 1, "Indices": 1}),
    Case("stack", {"X": [X0, -X0]}, {"axis": -1}),
    Case("gather", {"X": np.arange(1.0, 5.0), "Index": np.array(2)}),
    Case("squeeze2", {"X": X0}, {"axes": [-1]}, outputs={"Out": 1, "XShape": 1}),
    Case("unsqueeze2", {"X": X0}, {"axes": [-1]}, outputs={"Out": 1, "XShape": 1}),
    Case("flatten_contiguous_range", {"X": X0}, {"start_axis": 0, "stop_axis": -1},
         outputs={"Out": 1, "XShape": 1}),
]
