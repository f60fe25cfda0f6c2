"""A readable description of an op's definition: slots with their flags, attributes with wire type and
default, what its grad maker emits (the maker is run on a sample op), whether it has a kernel, and an
example (`gradc ops TYPE`; `gradc ops --markdown` for the whole reference, docs/ops.md)."""

from __future__ import annotations

import json
import re

from . import registry
from .backward.control_flow import BlockGrad
from .backward.vars import declare_like
from .errors import GradcError
from .ir import EMPTY_VAR, OpDesc, Program, grad_name
from .opdef import OpDef, Slot


def slot_text(slot: Slot) -> str:
    return slot.name + ("[]" if slot.duplicable else "") + ("?" if slot.dispensable else "")


def grad_kind(opdef: OpDef) -> str:
    """One word for the op list: the grad op type, composite, none, or what the op is a grad of."""
    if opdef.grad is registry.NO_GRAD:
        return "none"
    if opdef.grad is None:
        return f"(grad of {opdef.grad_op_of})" if opdef.grad_op_of else "-"
    if isinstance(opdef.grad, registry.GradOp):
        return opdef.grad.type_for(opdef)
    return "composite"


def _var_for(slot: str) -> str:
    """A sample var name for a slot: X -> x, ParamOut -> param_out, Out@GRAD -> out@GRAD."""
    stem, at, rest = slot.partition("@")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", stem).lower() + at + rest


def _value(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list):
        return "[" + ", ".join(map(_value, value)) + "]"
    return repr(value)


def sample_op(opdef: OpDef) -> OpDesc:
    """The op with its required slots filled with sample vars (a list slot with two) and default attributes:
    what the example and the grad listing show."""
    def args(slot: str) -> list[str]:
        name = _var_for(slot)
        return [f"{name}0", f"{name}1"] if opdef.slots[slot].duplicable else [name]

    inputs = {s: args(s) for s in opdef.inputs if not opdef.slots[s].dispensable}
    required = [s for s in opdef.outputs if not opdef.slots[s].dispensable]
    outputs = {s: args(s) for s in required or opdef.outputs}   # a grad op's outputs are all optional
    return registry.make_op(opdef.type, inputs, outputs, dict(opdef.attrs))


SAMPLE_RANKS = (2, 3, 4, 1)   # tried in order where a maker reads its vars' shapes: the first that works is shown


def sample_grad_ops(opdef: OpDef) -> tuple[list[OpDesc], int | None]:
    """The grad ops the maker emits for the sample op, every input wanting a gradient, and the rank its vars were
    declared with (None: the maker read no shape). Raises GradcError when the maker needs more than an op and
    sample shapes (a control-flow op differentiates its block)."""
    fwd = sample_op(opdef)
    try:
        return _emitted(opdef, fwd, None), None
    except GradcError:
        raise
    except Exception:  # noqa: BLE001 - a maker that reads shapes or the block: retried on declared sample vars
        pass
    for rank in SAMPLE_RANKS:
        try:
            program = _sample_program(fwd, rank)
            return _emitted(opdef, fwd, program.global_block), rank
        except GradcError:
            raise
        except Exception:  # noqa: BLE001 - a rank the maker cannot take: the next
            continue
    raise GradcError("the maker needs a real program: it reads shapes or vars that sample inputs of rank "
                     f"{', '.join(map(str, SAMPLE_RANKS))} do not give")


def _sample_program(fwd: OpDesc, rank: int) -> Program:
    """A program declaring the sample op's vars and their grads, float32 of shape [2, 3, 4, 5][:rank]."""
    program = Program()
    for name in fwd.input_names() + fwd.output_names():
        for var in (name, grad_name(name)):
            program.global_block.create_var(var, [2, 3, 4, 5][:rank])
    return program


def _emitted(opdef: OpDef, fwd: OpDesc, block) -> list[OpDesc]:
    count = iter(range(1, 1000))

    def backward_block(op: OpDesc, inputs: str, outputs: str) -> BlockGrad:
        """A control-flow op's backward block, as block 1: it reads every output grad, computes every input's."""
        return BlockGrad(1, [grad_name(n) for n in op.output(outputs)], set(op.input(inputs)), [])

    def new_tmp(like: str | None, dims=None, dtype=None) -> str:   # as backward's TmpVars is called
        stem = "" if like is None else f"{like.split('.tmp')[0]}."   # x.tmp2, not x.tmp1.tmp2: the var it is like
        name = f"{stem}tmp{next(count)}"
        source = None if block is None or like is None else block.find_var(like)
        if source is not None:   # declared as the backward declares it: makers read their temporaries' vars
            declare_like(block, source, name, dims, dtype)
        return name

    def shape(name: str) -> list[int] | None:
        var = block.find_var(name)
        return None if var is None else list(var.shape)

    context = registry.GradContext(fwd, opdef, lambda name: True, new_tmp, backward_block,
                                   shape=None if block is None else shape, block=block)
    return list(opdef.grad(context))


def _args(args: list[str]) -> str:
    return args[0] if len(args) == 1 else "[" + ", ".join(args) + "]"


def op_call(op: OpDesc, fwd: OpDesc | None = None) -> str:
    """`outs = type(Slot=var, ...)  {attrs}`; with ``fwd``, only attributes it does not carry over."""
    outs = ", ".join(f"{_args(args)}" for args in op.outputs.values() if args) or "()"
    ins = ", ".join(f"{slot}={_args(args)}" for slot, args in op.inputs.items() if args)
    attrs = {k: v for k, v in op.attrs.items() if fwd is not None and fwd.attrs.get(k, EMPTY_VAR) != v}
    shown = ", ".join(f"{k}={_value(v)}" for k, v in attrs.items())
    return f"{outs} = {op.type}({ins})" + (f"  {{{shown}}}" if shown else "")


def grad_lines(opdef: OpDef) -> list[str]:
    """What the grad maker gives, as lines: none, the grad ops of the sample op, or why it cannot be shown."""
    if opdef.grad is registry.NO_GRAD:
        return ["none (not differentiable)"]
    if opdef.grad is None:
        return [f"no maker (a grad op of {opdef.grad_op_of})" if opdef.grad_op_of else "no maker registered"]
    if isinstance(opdef.grad, registry.GradOp):   # the grad op's own slots, then what it reads for the example
        grad = registry.get(opdef.grad.type_for(opdef))
        ins = ", ".join(slot_text(grad.slots[s]) for s in grad.inputs)
        doc = f"{grad.type}({ins}) -> " + ", ".join(slot_text(grad.slots[s]) for s in grad.outputs)
    else:
        doc = " ".join((opdef.grad.__doc__ or "").split())
    try:
        ops, rank = sample_grad_ops(opdef)
    except GradcError as exc:
        return [doc or f"a maker of its own ({getattr(opdef.grad, '__name__', type(opdef.grad).__name__)}): {exc}"]
    fwd = sample_op(opdef)
    block = ["(block 1: the backward block of the block the op runs, appended to the program)"
             ] if opdef.sub_block_attr else []
    shapes = [] if rank is None else [f"(for sample vars of rank {rank}: the maker reads their shapes)"]
    return ([doc] if doc else []) + shapes + [op_call(op, fwd) for op in ops] + block


def example_lines(opdef: OpDef) -> list[str]:
    op = sample_op(opdef)
    lines = [op_call(op)]
    if opdef.infer is not None and not opdef.grad_op_of:
        inputs = ", ".join(f'"{slot}": ' + (f'"{args[0]}"' if len(args) == 1 else json.dumps(args))
                           for slot, args in op.inputs.items())
        lines.append(f'python: net.op("{opdef.type}", {{{inputs}}})   # net = gradc.layers.ProgramBuilder()')
    return lines


def _kinds(opdef: OpDef) -> list[str]:
    return [name for name, on in (("loop", opdef.loop_carried), ("partial writer", opdef.partial_write),
                                  (f"runs block attribute '{opdef.sub_block_attr}'", opdef.sub_block_attr)) if on]


def _from_var(opdef: OpDef, name: str) -> str:
    return " (or a var's value)" if name in opdef.tensor_attrs else ""


def describe(opdef: OpDef, has_kernel: bool) -> str:
    kinds = _kinds(opdef)
    lines = [opdef.type + (f"  ({', '.join(kinds)})" if kinds else ""),
             "  inputs:  " + (", ".join(slot_text(opdef.slots[s]) for s in opdef.inputs) or "none"),
             "  outputs: " + (", ".join(slot_text(opdef.slots[s]) for s in opdef.outputs) or "none")]
    if opdef.no_grad_inputs or opdef.no_grad_outputs:
        lines.append("  no gradient through: " + ", ".join(sorted(opdef.no_grad_inputs | opdef.no_grad_outputs)))
    lines.append("  attributes:" + ("" if opdef.attrs else " none"))
    lines += [f"    {name}: {opdef.attr_types[name].name} = {_value(value)}{_from_var(opdef, name)}"
              for name, value in opdef.attrs.items()]
    grads = grad_lines(opdef)
    lines.append(f"  grad: {grads[0]}")
    lines += [f"        {line}" for line in grads[1:]]
    lines.append(f"  kernel: {'yes' if has_kernel else 'no'}")
    lines.append("  example:")
    lines += [f"    {line}" for line in example_lines(opdef)]
    lines.append("  ([] a list of vars, ? optional; the example fills the required slots)")
    return "\n".join(lines)


def _markdown_op(opdef: OpDef, has_kernel: bool) -> list[str]:
    def slots(names) -> str:
        return ", ".join(f"`{slot_text(opdef.slots[s])}`" for s in names) or "none"

    kinds = _kinds(opdef)
    lines = [f"### {opdef.type}", ""]
    if kinds:
        lines += [f"*{', '.join(kinds)}*", ""]
    lines.append(f"- inputs: {slots(opdef.inputs)}")
    lines.append(f"- outputs: {slots(opdef.outputs)}")
    if opdef.no_grad_inputs or opdef.no_grad_outputs:
        lines.append("- no gradient through: " + ", ".join(f"`{s}`" for s in sorted(opdef.no_grad_inputs
                                                                                     | opdef.no_grad_outputs)))
    if opdef.attrs:
        lines.append("- attributes: " + ", ".join(f"`{name}` {opdef.attr_types[name].name} = `{_value(value)}`"
                                                  f"{_from_var(opdef, name)}" for name, value in opdef.attrs.items()))
    lines.append(f"- kernel: {'yes' if has_kernel else 'no'}")
    grads = grad_lines(opdef)
    code = [line for line in grads if "=" in line and "(" in line]
    text = [line for line in grads if line not in code]
    lines.append("- grad: " + (" ".join(text) if text else "the maker emits, for the example:"))
    if code:
        lines += ["", "  ```", *[f"  {line}" for line in code], "  ```"]
    lines += ["", "  example:", "", "  ```", *[f"  {line}" for line in example_lines(opdef)], "  ```", ""]
    return lines


def markdown_reference(kernels: set[str]) -> str:
    """Every registered op, alphabetically: the page docs/ops.md is (a test fails when it is stale)."""
    names = sorted(registry.OPS)
    forward = [n for n in names if not registry.OPS[n].grad_op_of]
    lines = ["# Op reference", "",
             "Generated by `gradc ops --markdown docs/ops.md`; do not edit. Slots: `[]` a list of vars, `?` "
             "optional. The grad lines are what each grad maker emits for the example op (required slots "
             f"filled, default attributes, every input wanting a gradient). {len(names)} ops, "
             f"{len(forward)} of them forward ops, {sum(1 for n in names if n in kernels)} with kernels.", "",
             "Index: " + ", ".join(f"[{n}](#{n})" for n in forward), ""]
    for name in names:
        lines += _markdown_op(registry.OPS[name], name in kernels)
    return "\n".join(lines).rstrip() + "\n"

