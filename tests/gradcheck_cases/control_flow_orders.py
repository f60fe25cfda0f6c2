"""Third and fourth derivatives through control flow: the second derivative's replay (a conditional_block that always
runs) is itself differentiated, its conditional_block_grad replayed once more by the same maker, and so on. Each case
is a program of control_flow.py, control_flow_double.py or control_flow_outputs.py with its backward and its further
backwards, each with the mean squares of the last one's grads as its loss, checked end to end with check_program.
Among them are the second derivatives whose replays read copies of values overwritten in place
(GradContext.value_before: a branch at the top overwriting h, a loop over a fed var)."""

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
    _branches_overwriting_h,
    _loop_over_a_fed_var,
    _loops_in_a_row,
    _overwriting_branch,
    _pylayer_in_cond,
    _pylayer_in_while,
    _tensor_condition,
)
from .control_flow_outputs import _split_weights


def of_order(case: dict, order: int) -> dict:
    """The second derivative's program (_penalty_of), differentiated with respect to ``wrt`` again (``order`` - 2
    times), each time loss = the sum of the means of those grads' squares."""
    case = _penalty_of(case)
    program = case["program"]
    net = Net()
    net.program, net.block = program, program.global_block
    for _ in range(order - 2):
        grads = gradc.gradients(program, case["loss"], case["wrt"])
        case = {**case, "loss": net.op("sum", {"X": [net.mean(net.square(grad)) for grad in grads]})}
    return case


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

# fourth derivatives (1.5-3 s each for the loops): a cond, the top conds overwriting h (one; two in a row, whose
# backwards each copy h@GRAD), a cond in a while (its replays' loops write no @EMPTY@ var), loops in a row (two replays
# of while_grads updating one grad in place write it in turn, neither renamed nor summed)
FOURTH = {
    (("branch", "true"),): lambda: _cond(1.0),
    (("top", "cond overwriting h"), ("reads h", True), ("taken", True)):
        lambda: _branch_overwriting_h(True, True, False),
    (("top", "two conds overwriting h"), ("taken", True)): lambda: _branches_overwriting_h(True),
}
FOURTH_LOOPS = {
    (("nested", "cond"), ("branch", "true"), ("iterations", 1)): lambda: _cond_in_while(1.0, 1),
    (("loops", "two in a row"), ("iterations", 1)): lambda: _loops_in_a_row(1),
}

CASES = [
    *[Case(op, {}, {"order": order, **dict(attrs)}, program=lambda build=build, order=order: of_order(build(), order))
      for op, order, builds in [("conditional_block_grad", 3, BUILDS), ("while_grad", 3, LOOPS),
                                ("conditional_block_grad", 4, FOURTH), ("while_grad", 4, FOURTH_LOOPS)]
      for attrs, build in builds.items()],
]
