"""Second derivatives of gradc.ops.fused_partial_rope: fused_partial_rope_grad is linear in out@GRAD (the rotation's
transpose) and flat in the rest, so its gradient at the grad of x@GRAD is the forward rotation of it, to any order."""

from __future__ import annotations

from ..registry import defgrad
from .composite import linear

defgrad("fused_partial_rope_grad", grad=linear("fused_partial_rope", x="x", passed=("cos", "sin"), out="out"),
        no_grad_inputs=["cos", "sin"])
