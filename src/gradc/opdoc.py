"""A readable description of an op's definition: slots with their flags, attributes with wire type and
default, what its grad maker emits, and whether it has a kernel (`gradc ops TYPE`)."""

from __future__ import annotations

from . import registry
from .opdef import OpDef, Slot


def slot_text(slot: Slot) -> str:
    return slot.name + ("[]" if slot.duplicable else "") + ("?" if slot.dispensable else "")


def grad_text(opdef: OpDef) -> str:
    if opdef.grad is registry.NO_GRAD:
        return "none (not differentiable)"
    if opdef.grad is None:
        return f"no maker (a grad op of {opdef.grad_op_of})" if opdef.grad_op_of else "no maker registered"
    if isinstance(opdef.grad, registry.GradOp):
        grad = registry.get(opdef.grad.type_for(opdef))
        ins = ", ".join(slot_text(grad.slots[s]) for s in grad.inputs)
        outs = ", ".join(slot_text(grad.slots[s]) for s in grad.outputs)
        return f"{grad.type}({ins}) -> {outs}"
    doc = " ".join((opdef.grad.__doc__ or "").split())
    return f"a maker of its own ({opdef.grad.__name__})" + (f": {doc}" if doc else "")


def describe(opdef: OpDef, has_kernel: bool) -> str:
    kinds = [name for name, on in (("loop", opdef.loop_carried), ("partial writer", opdef.partial_write),
                                   (f"runs block attribute '{opdef.sub_block_attr}'", opdef.sub_block_attr)) if on]
    lines = [opdef.type + (f"  ({', '.join(kinds)})" if kinds else ""),
             "  inputs:  " + (", ".join(slot_text(opdef.slots[s]) for s in opdef.inputs) or "none"),
             "  outputs: " + (", ".join(slot_text(opdef.slots[s]) for s in opdef.outputs) or "none")]
    if opdef.no_grad_inputs or opdef.no_grad_outputs:
        lines.append("  no gradient through: " + ", ".join(sorted(opdef.no_grad_inputs | opdef.no_grad_outputs)))
    lines.append("  attributes:" + ("" if opdef.attrs else " none"))
    lines += [f"    {name}: {opdef.attr_types[name].name} = {value!r}" for name, value in opdef.attrs.items()]
    lines.append(f"  grad: {grad_text(opdef)}")
    lines.append(f"  kernel: {'yes' if has_kernel else 'no'}")
    lines.append("  ([] a list of vars, ? optional)")
    return "\n".join(lines)
