"""py_func (paddle.static.py_func): an op that calls a Python function. The program holds only the function's id in
the registry of the process that built it (forward_callable_id, backward_callable_id): gradc runs the op with the
functions registered under those ids with gradc.register_py_func, and refuses it, naming the id, otherwise.

The grad maker is Paddle's: one py_func calling the backward function (its forward_callable_id, no backward of its
own) on the forward inputs, outputs and output grads in that order, less the vars named in backward_skip_vars,
writing the input grads (EMPTY_VAR where none is wanted, so they stay aligned). A py_func with no backward function
(that grad op among them) on the path to the loss is refused: Paddle's backward leaves the grads before it unwritten."""

from __future__ import annotations

from ..errors import GradError
from ..ir import AttrType
from ..registry import defop, typed

NO_CALLABLE = -1


def _py_func_grad(g):
    """A py_func calling function backward_callable_id on X, Out and Out@GRAD less backward_skip_vars, writing
    X@GRAD; refused where the op has no backward function (backward_callable_id -1)."""
    backward_id = g.attr("backward_callable_id")
    if backward_id < 0:
        raise GradError(f"py_func calling Python function {g.attr('forward_callable_id')} has no backward function "
                        f"(backward_callable_id -1): give paddle.static.py_func a backward_func, or stop the gradient "
                        f"before it")
    skipped = set(g.attr("backward_skip_vars"))
    reads = [name for name in g.I("X") + g.O("Out") + g.OG("Out") if name not in skipped]
    return [g.op("py_func", {"X": reads}, {"Out": g.IG("X")},
                 {"forward_callable_id": backward_id, "backward_callable_id": NO_CALLABLE, "backward_skip_vars": []})]


# outputs keep the shapes their vars were declared with (paddle.static.py_func makes the user create them)
defop("py_func", ["X[]"], ["Out[]"], attrs={"forward_callable_id": 0, "backward_callable_id": NO_CALLABLE,
                                           "backward_skip_vars": typed([], AttrType.STRINGS)}, grad=_py_func_grad)
