"""Control flow: conditional_block and while run a sub-block (attribute ``sub_block``); their grad
makers ask the backward pass for a backward block (gradc.backward.control_flow) and emit the
`conditional_block_grad` / `while_grad` op that runs it. select_input / select_output merge and
split the values of the two branches of a cond (each is the other's gradient).
"""

from __future__ import annotations

from ..ir import EMPTY_VAR, AttrType
from ..registry import defop, typed
from .infer import same_as

SUB_BLOCK = {"sub_block": typed(0, AttrType.BLOCK)}


def updated_in_place(block) -> set[str]:
    """Vars some op of ``block`` both reads and writes (a loop counter's increment). Paddle's while keeps
    no per-iteration copy of these: every iteration, and the backward, sees the one shared var."""
    return {name for op in block.ops for name in set(op.input_names()) & set(op.output_names())}


def _input_grads(g, slot: str, computed: set[str], carried: frozenset) -> list[str]:
    """The grads of ``slot``, positionally aligned (the grad kernel matches them to the inputs):
    @EMPTY@ where the backward block computes none and no step before needs it (``carried``)."""
    return [g.grad_of(name) if name in carried else ig if name in computed else EMPTY_VAR
            for name, ig in zip(g.I(slot), g.IG(slot))]


def _control_grad(g, type: str, inputs: dict, x_slot: str, sub, carried: frozenset = frozenset()) -> list:
    """The grad op; outputs the body may leave untouched are extra inputs whose grads pass through."""
    inputs[x_slot] = inputs[x_slot] + sub.passes
    op = g.op(type, {**inputs, "Out": g.O("Out"), "Out@GRAD": sub.reads}, {}, forward_attrs=True)
    op.outputs[x_slot + "@GRAD"] = _input_grads(g, x_slot, sub.grads, carried) + [g.grad_of(n) for n in sub.passes]
    op.set_attr("sub_block", sub.idx, AttrType.BLOCK)
    return [op]


def _conditional_block_grad(g):
    sub = g.backward_block("Input", "Out")
    return _control_grad(g, "conditional_block_grad",
                         {"Cond": g.I("Cond"), "Input": g.I("Input"), "Scope": g.O("Scope")}, "Input", sub)


def _carried_grads(g, sub) -> frozenset:
    """Loop vars whose grad the backward block reads: Paddle's while_grad hands a step's grad of a loop var to the
    step before only through the var's X@GRAD (an @EMPTY@ one keeps the last step's grad for every step), so it
    is named even where nothing before the loop wants it (a cache that starts as a constant)."""
    reads, outs = set(sub.reads), set(g.O("Out"))
    return frozenset(name for name in g.I("X") if name in outs and g.grad_of(name) in reads)


def _while_grad(g):
    sub = g.backward_block("X", "Out")
    ops = _control_grad(g, "while_grad", {"X": g.I("X"), "StepScopes": g.O("StepScopes")}, "X", sub,
                        _carried_grads(g, sub))
    ops[0].set_attr("original_output_grad", list(sub.reads), AttrType.STRINGS)
    return ops


def _select_input_grad(g):
    op = g.op("select_output", {"X": g.OG("Out"), "Mask": g.I("Mask")}, {})
    op.outputs["Out"] = g.IG("X")   # aligned with the mask: @EMPTY@ kept
    return [op]


def _select_output_grad(g):
    """select_input of the outputs' grads. An output no grad reaches (or @EMPTY@) gets zeros shaped like X: the
    backward's zeros would be shaped like the output, which select_output leaves unwritten unless the mask picks it."""
    ops, grads, zero = [], [], None
    for out, grad in zip(g.O("Out"), g.OG("Out")):
        if out != EMPTY_VAR and g.has_grad(grad):
            grads.append(grad)
            continue
        if zero is None:
            zero = g.tmp(g.I("X")[0])
            ops.append(g.op("fill_any_like", {"X": g.I("X")}, {"Out": [zero]}, {"value": 0.0, "dtype": -1}))
        grads.append(zero)
    return [*ops, g.op("select_input", {"X": grads, "Mask": g.I("Mask")}, {"Out": g.IG("X")})]


defop("conditional_block", ["Cond[]", "Input[]"], ["Out[]", "Scope"],
      attrs={**SUB_BLOCK, "is_scalar_condition": False},
      no_grad_inputs=["Cond"], no_grad_outputs=["Scope"], grad=_conditional_block_grad)
defop("conditional_block_grad", ["Cond[]", "Input[]", "Out[]", "Out@GRAD[]", "Scope"], ["Input@GRAD[]?"],
      attrs={**SUB_BLOCK, "is_scalar_condition": False})
defop("while", ["Condition[]", "X[]"], ["Out[]", "StepScopes"], attrs={**SUB_BLOCK, "is_test": False},
      no_grad_inputs=["Condition"], no_grad_outputs=["StepScopes"], grad=_while_grad, loop_carried=("X", "Out"))
defop("while_grad", ["X[]", "Out[]", "Out@GRAD[]", "StepScopes"], ["X@GRAD[]?"],
      attrs={**SUB_BLOCK, "is_test": False, "original_output_grad": typed([], AttrType.STRINGS)})
defop("select_input", ["X[]", "Mask"], no_grad_inputs=["Mask"], infer=same_as("X"), grad=_select_input_grad)
defop("select_output", ["X", "Mask"], ["Out[]"], no_grad_inputs=["Mask"], grad=_select_output_grad,
      partial_write=True)
