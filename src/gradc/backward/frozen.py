"""Parameters Paddle froze (ParamAttr(trainable=False)) though the program no longer says so: a legacy ProgramDesc drops
a parameter's stop_gradient, but keeps that of what the parameter computes. Paddle marks an op's outputs stop_gradient
exactly when all its inputs are, so an op reading the parameter beside stop_gradient inputs alone (a frozen VGG's conv
of the content image, the reshape of its bias) tells whether the parameter was."""

from __future__ import annotations

from .. import registry
from ..ir import Block, OpDesc
from ..pairing import FORWARD, op_kinds


def recorded_frozen(block: Block) -> list[str]:
    """The parameters of ``block`` whose every telling forward reader writes stop_gradient outputs only (at least one
    such reader); one telling reader writing a var that is not stop_gradient shows the parameter trainable. A reader
    is telling when its other inputs are all stop_gradient and it passes a gradient to the parameter's slot. A program
    in which some parameter is shown both ways has flags set by hand, and none is inferred."""
    verdicts: dict[str, set[bool]] = {}
    for op, kind in zip(block.ops, op_kinds(block)):
        if kind != FORWARD or any(attr in op.attrs for attr in ("sub_block", "blocks")):
            continue   # a control-flow op's outputs are the sub-block's, whose flags say nothing of its inputs
        for name in _candidate_parameters(block, op):
            if _tells(block, op, name):
                frozen = all(_stopped(block, out) for out in op.output_names())
                verdicts.setdefault(name, set()).add(frozen)
    if any(len(seen) > 1 for seen in verdicts.values()):
        return []   # a parameter both ways: outputs marked by hand (a paddle.no_grad region), so no flag tells
    return sorted(name for name, seen in verdicts.items() if seen == {True})


def _candidate_parameters(block: Block, op: OpDesc) -> list[str]:
    names = set(op.input_names())
    return [name for name in names if (var := block.find_var(name)) is not None and var.is_parameter
            and not var.stop_gradient]


def _tells(block: Block, op: OpDesc, param: str) -> bool:
    opdef = registry.get(op.type)
    slots = {slot for slot, args in op.inputs.items() if param in args}
    if opdef is None or opdef.grad in (None, registry.NO_GRAD) or slots <= opdef.no_grad_inputs:
        return False   # an op Paddle marks stop_gradient whatever it reads (a shape, an argmax)
    others = set(op.input_names()) - {param}
    return bool(op.output_names()) and all((var := block.find_var(name)) is not None and var.stop_gradient
                                           for name in others)


def _stopped(block: Block, name: str) -> bool:
    var = block.find_var(name)
    return var is None or var.stop_gradient
