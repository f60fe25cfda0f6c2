"""assign_value: a constant tensor written from an attribute (what Paddle's to_tensor puts into a static
program; Rprop's learning_rate_range and etas). Its values are Paddle Scalars, kept as their wire bytes."""

from __future__ import annotations

from ..ir import AttrType
from ..registry import NO_GRAD, defop, typed

# dtype and shape have no default in Paddle's op
defop("assign_value", ["ValuesTensor?"], attrs={"dtype": 5, "shape": [], "values": typed([], AttrType.SCALARS)},
      infer=lambda ctx: {"Out": (list(ctx.attr("shape")), ctx.attr("dtype"))}, grad=NO_GRAD)
