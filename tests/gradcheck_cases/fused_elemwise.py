"""Cases for gradc.ops.fused_elemwise: every functor pair Paddle implements, Y broadcast (axis -1 and a middle axis),
with and without save_intermediate_out, first order through the grad op's kernel and second order through the
unfused ops its grad op's maker emits. Relu's inputs stay away from its kink."""

from gradc.ops.fused_elemwise import COMPOUNDS

from . import Case
from .second_order import away, randn, second_order

ACTIVATION = "fused_elemwise_activation"
ADD = "fused_elemwise_add_activation"


def _attrs(functors, axis=-1, scale=0.0, save=True):
    return {"functor_list": list(functors), "axis": axis, "scale": scale, "save_intermediate_out": save}


def _inputs(functors, x=(2, 3), y=(2, 3)):
    """X and Y; where relu reads X + Y, X alone away from 0 and Y small, so the sum stays off relu's kink."""
    if functors == ("relu", "elementwise_add"):
        return {"X": away(*x, gap=0.6), "Y": randn(*y, scale=0.1)}
    return {"X": randn(*x), "Y": away(*y)}


CASES = [Case(ADD if "elementwise_add" in pair else ACTIVATION, _inputs(pair), _attrs(pair, scale=1.5))
         for pair in COMPOUNDS]
CASES += [
    Case(ACTIVATION, _inputs(("elementwise_mul", "tanh"), (2, 3, 4), (3,)), _attrs(("elementwise_mul", "tanh"), 1)),
    Case(ADD, _inputs(("relu", "elementwise_add"), (2, 3, 4), (4,)), _attrs(("relu", "elementwise_add"), save=False)),
    Case(ACTIVATION, _inputs(("gelu", "elementwise_add"), (2, 3), (3,)), _attrs(("gelu", "elementwise_add"), -1)),
    second_order(ACTIVATION, _inputs(("elementwise_mul", "sigmoid")), _attrs(("elementwise_mul", "sigmoid"))),
    second_order(ACTIVATION, _inputs(("tanh", "elementwise_add"), (2, 3), (3,)), _attrs(("tanh", "elementwise_add"))),
    second_order(ACTIVATION, _inputs(("elementwise_mul", "scale"), (2, 3, 2), (3,)),
                 _attrs(("elementwise_mul", "scale"), axis=1, scale=-0.5, save=False)),
    second_order(ADD, _inputs(("elementwise_add", "relu")), _attrs(("elementwise_add", "relu"))),
    second_order(ADD, _inputs(("gelu", "elementwise_add")), _attrs(("gelu", "elementwise_add"))),
]
