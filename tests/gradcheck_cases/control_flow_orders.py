"""Third derivatives through control flow: the second derivative's replay (a conditional_block that always runs) is
itself differentiated, its conditional_block_grad replayed once more by the same maker. Each case is a program of
control_flow.py, control_flow_double.py or control_flow_outputs.py with its backward and its second backward, whose
grads' squares are the loss, checked end to end with check_program. The second derivatives whose replays read copies
of values overwritten in place (GradContext.value_before: a branch at the top overwriting h, a loop over a fed var) are
among them."""

import gradc
from programs import Net

from . import Case
from .control_flow import (
    _cond,
    _cond_in_while,
    _cond_in_while_in_cond,
    _nested_cond,
    _penalty_of,
    _square_in_branch,
    _while,
    _while_in_cond,
    _while_in_while,
)
from .control_flow_double import (
    _branch_overwriting_h,
    _loop_over_a_fed_var,
    _loops_in_a_row,
    _overwriting_branch,
    _pylayer_in_cond,
    _pylayer_in_while,
    _tensor_condition,
)
from .control_flow_outputs import _split_weights


def third_order(case: dict) -> dict:
    """The second derivative's program (_penalty_of), differentiated with respect to ``wrt`` again, and loss = the
    mean of those grads' squares."""
    second = _penalty_of(case)
    program = second["program"]
    grads = gradc.gradients(program, second["loss"], second["wrt"])
    net = Net()
    net.program, net.block = program, program.global_block
    return {**second, "loss": net.op("sum", {"X": [net.mean(net.square(grad)) for grad in grads]})}


BUILDS = {
    (("branch", "true"),): lambda: _cond(1.0),
    (("branch", "false"),): lambda: _cond(-1.0),
    (("branch", "true"), ("reads", "h twice")): _square_in_branch,
    (("nested", "cond"), ("inner", "true")): lambda: _nested_cond(1.0),
    (("nested", "cond"), ("inner", "false")): lambda: _nested_cond(-1.0),
    (("nested", "cond overwriting h"), ("inner", "true")): lambda: _overwriting_branch(1.0, True),
    (("nested", "pylayer"),): lambda: _pylayer_in_cond(1.0),
    (("condition", "tensor"),): lambda: _tensor_condition(True, False),
    (("nested", "cond on a tensor"), ("runs", "true")): lambda: _tensor_condition(True, True),
    (("nested", "while"), ("branch", "true")): lambda: _while_in_cond(1.0),
    (("nested", "cond in while"),): _cond_in_while_in_cond,
    (("outputs", "two"), ("branch", "true")): lambda: _split_weights(1.0),
    (("outputs", "two, one constant"), ("branch", "false")): lambda: _split_weights(-1.0, True),
    **{(("top", "cond overwriting h"), ("reads h", reads_it), ("taken", taken)):
       lambda reads_it=reads_it, taken=taken: _branch_overwriting_h(taken, reads_it, False)
       for reads_it in (True, False) for taken in (True, False)},
    **{(("top", "cond on a tensor overwriting h"), ("taken", taken)): lambda taken=taken: _branch_overwriting_h(
        taken, True, True) for taken in (True, False)},
}
LOOPS = {
    (("iterations", 3),): lambda: _while(3),
    (("iterations", 0),): lambda: _while(0),
    (("nested", "cond"), ("branch", "true")): lambda: _cond_in_while(1.0),
    (("nested", "while"),): _while_in_while,
    (("nested", "pylayer"),): _pylayer_in_while,
    (("loops", "two in a row"),): _loops_in_a_row,
    **{(("loop var", "fed"), ("iterations", n)): lambda n=n: _loop_over_a_fed_var(n) for n in (2, 0)},
}

CASES = [
    *[Case("conditional_block_grad", {}, {"order": 3, **dict(attrs)}, program=lambda build=build: third_order(build()))
      for attrs, build in BUILDS.items()],
    *[Case("while_grad", {}, {"order": 3, **dict(attrs)}, program=lambda build=build: third_order(build()))
      for attrs, build in LOOPS.items()],
]
