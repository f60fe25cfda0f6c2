"""Eager accumulation of shared gradients.

The backward pass sums the gradient of a var read by several ops once all its parts exist: each part is
written under its own name (``v@GRAD@RENAME@block0@k``) and one ``sum`` op adds them before the first
reader, so all the parts are alive together. This pass adds each part to a running sum as soon as it is
written instead: the first part is written as ``v@GRAD`` itself, each later one is followed by
``sum(v@GRAD, part) -> v@GRAD``. The parts are added in the same order (the sum kernel adds left to right),
so the gradients are the same bit for bit, and at most one part is alive at a time.

    gradc compile net.pb -o train.pb --accumulate eager
"""

from __future__ import annotations

from ..ir import Block, OpDesc, Program, VarType, roles
from .base import Pass, register_pass


@register_pass
class EagerAccumulationPass(Pass):
    name = "eager-accumulation"

    def apply(self, program: Program) -> str:
        rewritten = sum(_accumulate_eagerly(block) for block in program.blocks)
        return f"{rewritten} gradient sums made running sums"


def _is_grad_sum(block: Block, op: OpDesc) -> bool:
    """A sum the backward made: a backward op adding renamed parts of the var it writes (tensors, not arrays)."""
    out = op.output("Out")
    var = block.find_var(out[0]) if len(out) == 1 else None
    return (op.type == "sum" and var is not None and var.type == VarType.DENSE_TENSOR and len(op.input("X")) > 1
            and all(name == out[0] or name.startswith(out[0] + "@RENAME@") for name in op.input("X"))
            and roles.BACKWARD & (op.attrs.get("op_role") or 0) == roles.BACKWARD)


def _accumulate_eagerly(block: Block) -> int:
    writer: dict[str, tuple[int, OpDesc, str, int]] = {}   # part -> (op index, op, slot, position)
    after: dict[int, list[OpDesc]] = {}
    dropped = set()
    for idx, op in enumerate(block.ops):
        if _is_grad_sum(block, op) and all(n in writer or n == op.output("Out")[0] for n in op.input("X")):
            total, adds = op.output("Out")[0], []
            for k, part in enumerate(op.input("X")):
                if part == total:   # a grad given from outside: the running sum starts from it
                    continue
                at, source, slot, pos = writer[part]
                if k == 0:
                    source.outputs[slot][pos] = total
                    continue
                adds.append(OpDesc("sum", {"X": [total, part]}, {"Out": [total]}))
                roles.set_role(adds[-1], op.attrs.get("op_role", roles.BACKWARD))
                after.setdefault(at, []).append(adds[-1])
            adds[-1].attrs["op_role_var"] = op.attrs.get("op_role_var", [])   # it writes the grad last
            dropped.add(idx)
        for slot, args in op.outputs.items():
            for pos, name in enumerate(args):
                writer[name] = (idx, op, slot, pos)
    if dropped:
        block.ops = [new for idx, op in enumerate(block.ops) if idx not in dropped
                     for new in (op, *after.get(idx, ()))]
    return len(dropped)
