"""feed / fetch as Paddle writes them in saved inference programs: a holder var (FEED_MINIBATCH or
FETCH_LIST) and a ``col`` attribute naming the position in it; and data, which paddle.static.data writes ahead of
the program in legacy mode when FLAGS_enable_pir_in_executor is set (its out is the fed var itself)."""

from __future__ import annotations

from ..ir import AttrType
from ..registry import NO_GRAD, defop, typed
from .creation import DTYPE_BYTES

defop("feed", ["X"], attrs={"col": 0}, grad=NO_GRAD)
defop("fetch", ["X"], attrs={"col": 0}, grad=NO_GRAD)


def _data_infer(ctx):
    if ctx.attr("dtype") not in DTYPE_BYTES:
        ctx.fail(f"dtype {ctx.attr('dtype')} is not a tensor dtype")
    return {"out": (list(ctx.attr("shape")), ctx.attr("dtype"))}


defop("data", ["ShapeTensor?", "ShapeTensorList[]?"], ["out"], attrs={
    "name": "", "shape": typed([], AttrType.LONGS), "dtype": 5, "place": 0}, infer=_data_infer, grad=NO_GRAD)
