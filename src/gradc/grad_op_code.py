"""The default maker's grad op (gradc.makers.GradOp) for an op whose every slot it reads holds one var, as
straight-line code made once per op definition: the backward makes most of its ops this way."""

from __future__ import annotations

from collections.abc import Callable

from .ir import OpDesc


def one_var_maker(
    opdef, grad_type: str, uses: tuple, output_grads: tuple, input_grads: tuple, attr_names: tuple[str, ...]
) -> Callable:
    """``make(fwd, grad_names, wanted)``: GradOp.grad_op_of's (grad op, its input_names(), its output_names()), the
    names made with its lists, or None where a slot is missing or holds another number of vars (the maker's loops
    handle those). The dicts' keys come in the loops' order; the attributes are the forward op's, with ``opdef``'s
    defaults where it lacks one of ``attr_names``."""
    local: dict[tuple[str, bool], str] = {}  # (forward slot, whether an input slot) -> the local holding its var

    def var(slot: str, is_input: bool) -> str:
        return local.setdefault((slot, is_input), f"v{len(local)}")

    read_slots = [slot for slot, _ in uses] + [grad for _, grad in output_grads]
    if len(set(read_slots)) < len(read_slots):  # a use named as an output's grad slot: the loops' dict, one list
        return lambda *args: None
    read_vars = [var(slot, is_input) for slot, is_input in uses] + [f"g{k}" for k in range(len(output_grads))]
    lines = [f"g{k} = grad_names[{var(slot, False)}]" for k, (slot, _) in enumerate(output_grads)]
    lines += [
        f"w{k} = [grad_names[{var(slot, True)}]] if {var(slot, True)} in wanted else []"
        for k, (slot, _) in enumerate(input_grads)
    ]
    inputs = ", ".join(f"{slot!r}: [{name}]" for slot, name in zip(read_slots, read_vars))
    outputs = ", ".join(f"{grad!r}: w{k}" for k, (_, grad) in enumerate(input_grads))
    written = ", ".join(f"*w{k}" for k in range(len(input_grads)))
    unpack = ", ".join(f"({name},)" for name in local.values())
    lists = ", ".join(f"{'inputs' if is_input else 'outputs'}[{slot!r}]" for slot, is_input in local)
    source = "def make(fwd, grad_names, wanted):\n    inputs, outputs = fwd.inputs, fwd.outputs\n"
    if local:  # a missing slot (KeyError) or one of another length (ValueError) is the loops' case
        source += f"    try:\n        {unpack}, = {lists},\n    except (KeyError, ValueError):\n        return None\n"
    source += "".join(f"    {line}\n" for line in lines)
    has_all = " and ".join(f"{name!r} in attrs" for name in attr_names) or "True"
    source += (
        f"    op = new(OpDesc)\n"
        f"    op.type, op.inputs, op.outputs, op.var_attrs = grad_type, {{{inputs}}}, {{{outputs}}}, "
        f"fwd.var_attrs\n"
        f"    attrs = fwd.attrs\n"
        f"    if {has_all}:\n"
        f"        op.attrs, op.attr_types = attrs.copy(), fwd.attr_types.copy()\n"
        f"    else:\n"
        f"        op.attrs, op.attr_types = {{**opdef.attrs, **attrs}}, {{**opdef.attr_types, **fwd.attr_types}}\n"
        f"    op.is_target, op.repeated_attrs = None, ()\n"
        f"    if op.var_attrs:   # its attributes name vars it reads too\n"
        f"        return op, op.input_names(), op.output_names()\n"
        f"    return op, [{', '.join(read_vars)}], [{written}]\n"
    )
    namespace: dict = {"new": OpDesc.__new__, "OpDesc": OpDesc, "grad_type": grad_type, "opdef": opdef}
    exec(compile(source, "<gradc grad op>", "exec"), namespace)
    return namespace["make"]
