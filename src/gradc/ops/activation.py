"""Activations. Each grad op reads the forward slots Paddle's `<type>_grad` reads: Out where the
derivative is a function of the output (X can then be freed early), X otherwise."""

from __future__ import annotations

from ..registry import defgrad, defop, grad_op
from .infer import same_as


def activation(name: str, *uses: str, attrs: dict | None = None) -> None:
    """An elementwise X -> Out op whose `<name>_grad` reads the forward slots ``uses``."""
    defop(name, ["X"], attrs=attrs, infer=_along_axis if "axis" in (attrs or {}) else same_as("X"),
          grad=grad_op(*uses))


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
defgrad("relu_grad_grad", inputs=["Out", "grad_x@GRAD"], outputs=["grad_out@GRAD"],
        infer=same_as("grad_x@GRAD", "grad_out@GRAD"))
activation("sigmoid", "Out")
activation("tanh", "Out")
activation("softmax", "Out", attrs={"axis": -1})
activation("log_softmax", "Out", attrs={"axis": -1})
activation("gelu", "X", attrs={"approximate": False})
activation("leaky_relu", "X", attrs={"alpha": 0.02})
activation("elu", "X", "Out", attrs={"alpha": 1.0})
activation("silu", "X", "Out")
activation("swish", "X")                        # x * sigmoid(x): the legacy op has no beta
activation("softplus", "X", attrs={"beta": 1.0, "threshold": 20.0})
activation("hard_sigmoid", "Out", attrs={"slope": 0.2, "offset": 0.5})
activation("hard_swish", "X", attrs={"threshold": 6.0, "scale": 6.0, "offset": 3.0})
activation("softsign", "X")
activation("relu6", "Out")                      # Paddle 3.x: no threshold attribute, the cap is 6
