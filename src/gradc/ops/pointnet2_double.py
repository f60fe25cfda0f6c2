"""Second derivatives of gradc.ops.pointnet2's gathers: each grad op scatters dOut back and is linear in it, so
d/d(dOut) is the forward gather of ddX (composite.linear), and third derivatives follow."""

from __future__ import annotations

from ..registry import defgrad
from .composite import linear
from .pointnet2 import STACK_INDEX

defgrad("gather_operation_grad", grad=linear("gather_operation", x="points", out="out", passed=("idx",)),
        no_grad_inputs=["idx", "points"])
defgrad("grouping_operation_batch_grad", grad=linear("grouping_operation_batch", x="points_tensor", out="out_tensor",
                                                     passed=("idx_tensor",)),
        no_grad_inputs=["idx_tensor", "points_tensor"])
defgrad("grouping_operation_stack_grad", grad=linear("grouping_operation_stack", x="features_tensor",
                                                     out="out_tensor", passed=STACK_INDEX),
        no_grad_inputs=["features_tensor", *STACK_INDEX])
