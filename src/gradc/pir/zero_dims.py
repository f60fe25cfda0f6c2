"""Paddle 3.3.1 types some results of an input dim it does not know (-1) with a dim of 0: a Conv1DTranspose's
length (HiFiGAN's upsampling), and the ops after it inherit the 0, or a size computed from it (a reflection pad of
it by 1 and 1 is typed 2: Multi-band MelGAN). Paddle infers shapes again at run time; gradc's checks read the
declarations, so each such 0, and each dim of an op reading a repaired var, becomes -1 where gradc's inference, from
the inputs as declared (in op order, so a repaired dim reaches the ops after it), does not know it either."""

from __future__ import annotations

from .. import registry
from ..ir import Program
from ..ops.infer import InferContext


def unknown_for_zero(program: Program) -> None:
    for block in program.blocks:
        if not any(var.shape and 0 in var.shape for var in block.vars.values()):
            continue   # most programs declare no 0 dim
        repaired: set[str] = set()
        for idx, op in enumerate(block.ops):
            opdef = registry.get(op.type)
            if opdef is None or opdef.infer is None or op.var_attrs:
                continue
            try:
                inferred = opdef.infer(InferContext(op, block, idx))
            except Exception:  # noqa: BLE001 - an op the rule cannot read keeps its declarations
                continue
            downstream = not repaired.isdisjoint(op.input_names())
            for slot, result in (inferred or {}).items():
                names = op.outputs.get(slot) or []
                if not isinstance(result, tuple) or len(names) != 1 or result[0] is None:
                    continue
                var = block.find_var(names[0])
                if var is None or not var.shape or len(var.shape) != len(result[0]):
                    continue
                shape = [-1 if s == -1 and (d == 0 or downstream) else d for d, s in zip(var.shape, result[0])]
                if shape != var.shape:
                    var.shape = shape
                    repaired.add(names[0])
