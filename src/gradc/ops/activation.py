"""Elementwise activations. Each grad op reads the forward slots Paddle's `<type>_grad` reads: Out where
the derivative is a function of the output (X can then be freed early), X otherwise.

Attributes out of range fail in inference where Paddle rejects them (its op or its Python API) or where
the function is undefined: celu's alpha 0 divides by zero, softshrink's negative lambda makes Paddle's
kernel add both branches. `relu6.threshold` and `swish.beta` are honoured (docs/ops-activation-math.md):
Paddle 3.3.1 marks them extra and ignores them, Paddle 2.x computed with them; their defaults give
Paddle 3.3.1's fixed functions, so every program 3.3.1 writes computes the same.
"""

from __future__ import annotations

from ..registry import defgrad, defop, grad_op
from .infer import same_as


def activation(name: str, *uses: str, attrs: dict | None = None, rules=(), lowercase: bool = False,
               infer=None) -> None:
    """An elementwise X -> Out op whose `<name>_grad` reads the forward slots ``uses``; its attributes
    must pass ``rules``, each (attribute or tuple of attributes, test of their values, the requirement in words).
    Paddle names the slots x/out on its newer ops (``lowercase``); ``infer`` replaces the inference."""
    x, out = ("x", "out") if lowercase else ("X", "Out")
    infer = infer or (_along_axis if "axis" in (attrs or {}) else _checked(rules) if rules else same_as(x, out))
    defop(name, [x], [out], attrs=attrs, infer=infer, grad=grad_op(*uses))


def _checked(rules):
    def infer(ctx):
        for names, test, requirement in rules:
            names = (names,) if isinstance(names, str) else names
            values = [ctx.attr(name) for name in names]
            if not test(*values):
                shown = ", ".join(f"{name}={value!r}" for name, value in zip(names, values))
                subject = f"attributes {shown} are" if len(names) > 1 else f"attribute {shown} is"
                ctx.fail(f"{subject} out of range: it must be {requirement}")
        return same_as("X")(ctx)
    return infer


def _along_axis(ctx):
    """Out is shaped like X; the axis (softmax's) must be one of X's (0 or -1 for a 0-d X)."""
    ctx.axis(ctx.attr("axis"), len(ctx.shape("X")))
    return same_as("X")(ctx)


activation("relu", "Out")


def _relu_double_grad(g):
    """X@GRAD = dOut * (Out > 0) is linear in dOut with the same mask, and flat in Out: Paddle 3.3.1's
    relu_grad_grad gives grad_out@GRAD = grad_x@GRAD * (Out > 0)."""
    return [g.op("relu_grad_grad", {"Out": g.I("Out"), "grad_x@GRAD": g.OG("X@GRAD")},
                 {"grad_out@GRAD": g.IG("Out@GRAD")})]


defgrad("relu_grad", grad=_relu_double_grad, no_grad_inputs=["Out"])
def _relu_triple_grad(g):
    """relu_grad_grad masks grad_x@GRAD the same way: linear in it, flat in Out."""
    return [g.op("relu_grad_grad", {"Out": g.I("Out"), "grad_x@GRAD": g.OG("grad_out@GRAD")},
                 {"grad_out@GRAD": g.IG("grad_x@GRAD")})]


defgrad("relu_grad_grad", inputs=["Out", "grad_x@GRAD"], outputs=["grad_out@GRAD"],
        infer=same_as("grad_x@GRAD", "grad_out@GRAD"), grad=_relu_triple_grad, no_grad_inputs=["Out"], of="relu_grad")
activation("sigmoid", "Out")
activation("tanh", "Out")
activation("softmax", "Out", attrs={"axis": -1})
activation("log_softmax", "Out", attrs={"axis": -1})
activation("gelu", "X", attrs={"approximate": False})
activation("leaky_relu", "X", attrs={"alpha": 0.02})
activation("elu", "X", "Out", attrs={"alpha": 1.0})
activation("silu", "X", "Out")
activation("swish", "X", attrs={"beta": 1.0})   # x * sigmoid(beta * x)
activation("softplus", "X", attrs={"beta": 1.0, "threshold": 20.0}, rules=[("beta", lambda b: b != 0, "nonzero")])
activation("hard_sigmoid", "Out", attrs={"slope": 0.2, "offset": 0.5})
activation("hard_swish", "X", attrs={"threshold": 6.0, "scale": 6.0, "offset": 3.0})
activation("softsign", "X")
activation("relu6", "Out", attrs={"threshold": 6.0})   # min(max(x, 0), threshold)
activation("brelu", "X", attrs={"t_min": 0.0, "t_max": 24.0},        # nn.Hardtanh: clip to [t_min, t_max]
           rules=[(("t_min", "t_max"), lambda low, high: low <= high, "t_min <= t_max")])
activation("celu", "X", attrs={"alpha": 1.0}, rules=[("alpha", lambda a: a != 0, "nonzero")])
activation("hard_shrink", "X", attrs={"threshold": 0.5},             # x where |x| >= threshold, else 0
           rules=[("threshold", lambda v: v >= 0, ">= 0")])
activation("logsigmoid", "X")
activation("mish", "X", attrs={"threshold": 20.0})                   # x tanh(softplus(x)), softplus(x) = x past it
# selu_grad reads Out, which tells the two branches apart only for scale > 0 and alpha >= 0
activation("selu", "Out", attrs={"alpha": 1.6732631921768188, "scale": 1.0507010221481323},
           rules=[("scale", lambda v: v > 0, "> 0"), ("alpha", lambda v: v >= 0, ">= 0")])
activation("softshrink", "X", attrs={"lambda": 0.5}, rules=[("lambda", lambda v: v >= 0, ">= 0")])
activation("tanh_shrink", "X")                                       # x - tanh(x)
activation("thresholded_relu", "X", attrs={"threshold": 1.0, "value": 0.0})   # x past threshold, else value
