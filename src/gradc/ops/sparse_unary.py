"""paddle.sparse's elementwise ops on a COO tensor's values (paddle.sparse.sin, sqrt, pow, cast, ...; nn.ReLU6 and
nn.LeakyReLU), which Paddle 3.3.1 builds in PIR mode only (docs/sparse.md), and isnan. Each is its dense op on the
values, on the same sites: its gradient is the dense op's, written with differentiable ops (the values read out, the
dense op, the result put back on x's sites by sparse_values_grad), so derivatives of any order follow from theirs.
cast also casts the indices (index_dtype; -1 keeps a dtype); isnan has no gradient."""

from __future__ import annotations

from ..ir import VarType
from ..registry import NO_GRAD, defop
from .composite import expansion, first
from .infer import check_float, float_like

# sparse op -> (the dense op on its values, their shared attributes and defaults)
ON_VALUES = {
    **{f"sparse_{name}": (name, {}) for name in ("abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "expm1",
                                                  "log1p", "sin", "sinh", "sqrt", "square", "tan", "tanh", "relu6")},
    "sparse_leaky_relu": ("leaky_relu", {"alpha": 0.02}),
    "sparse_pow": ("pow", {"factor": 1.0}),
    "sparse_scale": ("scale", {"scale": 1.0, "bias": 0.0, "bias_after_scale": True}),
}


def _on_values(dense: str, attrs=lambda g: {name: g.attr(name) for name in ON_VALUES[g.fwd.type][1]}, dtype=None):
    @expansion
    def grad(f, g):
        """out = x's sites holding dense(values(x)): recomputed so, and differentiated."""
        x = first(g.I("x"))
        values = f.op("sparse_values", {"x": x}, x, slot="out", dims=lambda shape: [-1])
        mapped = f.op(dense, {"X": values}, values, attrs(g), dtype=dtype and dtype(g))
        return {"out": f.op("sparse_values_grad", {"x": x, "out@GRAD": mapped}, x, slot="x@GRAD",
                            dtype=dtype and dtype(g))}
    return grad


for _type, (_dense, _attrs) in ON_VALUES.items():
    defop(_type, ["x"], ["out"], attrs=dict(_attrs), infer=float_like("x", "out"), grad=_on_values(_dense))


def _value_dtype(g) -> int:
    return g.attr("value_dtype") if g.attr("value_dtype") != -1 else g.block.find_var(first(g.I("x"))).dtype


def _cast_infer(ctx):
    check_float(ctx, "x")
    return {"out": (ctx.shape("x"), ctx.attr("value_dtype") if ctx.attr("value_dtype") != -1 else ctx.dtype("x"))}


defop("sparse_cast", ["x"], ["out"], attrs={"index_dtype": -1, "value_dtype": -1}, infer=_cast_infer,
      grad=_on_values("cast", lambda g: {"in_dtype": int(g.block.find_var(first(g.I("x"))).dtype),
                                         "out_dtype": int(_value_dtype(g))}, _value_dtype))
defop("sparse_isnan", ["x"], ["out"], infer=lambda ctx: {"out": (ctx.shape("x"), VarType.BOOL)}, grad=NO_GRAD)
