"""Registering ops: op type -> OpDef (gradc.opdef), with its grad maker (gradc.makers).

Most ops register in one line through helpers that hold the shared policy:

    defop("relu", ["X"], ["Out"], infer=same_as("X"), grad=grad_op("Out"))   # default <type>_grad
    defop("less_than", ["X", "Y"], ["Out"], grad=NO_GRAD)                     # explicitly no gradient

A maker built by grad_op() also registers the `<type>_grad` op it emits, with slots derived from the
forward op and shape inference "each input grad is shaped like its input". defgrad() gives a grad op
its own maker (higher-order gradients, Paddle's `*_grad_grad` ops) and inference. The compiler side
never imports numpy: kernels live in gradc.executor.kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from .ir import grad_name
from .makers import NO_GRAD, GradContext, GradMaker, GradOp, grad_op, missing_grad_error
from .opdef import (
    OPS,
    DefinitionChecks,
    OpDef,
    Slot,
    attr_default,
    attr_type_problem,
    definition_problem,
    get,
    make_op,
    make_opdef,
    slot_names,
    slot_problem,
    sub_block,
    typed,
    unsupported_setting,
)

__all__ = ["NO_GRAD", "OPS", "GradContext", "GradMaker", "GradOp", "OpDef", "Slot", "attr_default",
           "DefinitionChecks", "attr_type_problem", "defgrad", "definition_problem",
           "defop", "get", "grad_op", "make_op", "missing_grad_error", "register", "register_op", "sub_block",
           "sub_blocks_run",
           "slot_problem", "typed", "unsupported_setting"]


def sub_blocks_run(block) -> dict[int, int]:
    """Sub-block index -> the index of the op of ``block`` that runs it (a control-flow op; the last, if several)."""
    types = {op.type for op in block.ops}   # most blocks run no sub-block: no call per op
    if not any(getattr(get(type), "sub_block_attr", None) for type in types):
        return {}
    return {sub: idx for idx, op in enumerate(block.ops) if (sub := sub_block(op)) is not None}


def register(opdef: OpDef, *, replace: bool = False) -> OpDef:
    OPS.before_registering(opdef.type, replace)
    if OPS.holds(opdef.type) and not replace:
        raise ValueError(f"op '{opdef.type}' is already registered: give yours another name, or pass replace=True "
                         f"to override the registered one")
    OPS[opdef.type] = opdef
    return opdef


def defop(type: str, inputs: Iterable[str] = (), outputs: Iterable[str] = ("Out",), *,
          attrs: dict | None = None, grad: GradMaker | None = None,
          no_grad_inputs: Iterable[str] = (), no_grad_outputs: Iterable[str] = (),
          infer: Callable | None = None, loop_carried: tuple[str, str] | None = None,
          partial_write: bool = False, unsupported_attrs: dict[str, str] | None = None,
          lod_levels: Callable | None = None, kernel_dtype_outputs: Iterable[str] = (),
          tensor_attrs: Iterable[str] = (), state_inputs: Iterable[str] = (), stale_shape_inputs: Iterable[str] = (),
          int8_stored_inputs: Iterable[str] = (), runtime_rank_outputs: Iterable[str] = (),
          alias_outputs: Iterable[str] = (), undeclared_inputs: Iterable[str] = (), replace: bool = False) -> OpDef:
    """Register an op (slots in gradc.opdef's notation). A GradOp maker also registers its grad op."""
    opdef = register(make_opdef(type, inputs, outputs, attrs, grad=grad, no_grad_inputs=slot_names(no_grad_inputs),
                                no_grad_outputs=slot_names(no_grad_outputs), infer=infer,
                                loop_carried=loop_carried, partial_write=partial_write,
                                unsupported_attrs=dict(unsupported_attrs or {}), lod_levels=lod_levels,
                                kernel_dtype_outputs=frozenset(kernel_dtype_outputs),
                                tensor_attrs=frozenset(tensor_attrs), state_inputs=frozenset(state_inputs),
                                stale_shape_inputs=frozenset(stale_shape_inputs),
                                int8_stored_inputs=frozenset(int8_stored_inputs),
                                runtime_rank_outputs=frozenset(runtime_rank_outputs),
                                alias_outputs=frozenset(alias_outputs),
                                undeclared_inputs=frozenset(undeclared_inputs)),
                      replace=replace)
    if isinstance(grad, GradOp):
        grad_type = grad.type_for(opdef)
        if not OPS.holds(grad_type) or replace:
            register(_grad_opdef(opdef, grad_type, grad.uses), replace=replace)
    return opdef


def _grad_opdef(fwd: OpDef, grad_type: str, uses: tuple[str, ...]) -> OpDef:
    """The `<type>_grad` op of a GradOp maker: reads ``uses`` and the output grads, writes the input grads
    (each optional: a grad nobody wants is left out), with the forward attributes."""
    def as_grad(slot: Slot, dispensable: bool) -> Slot:
        return replace(slot, name=grad_name(slot.name), dispensable=dispensable)

    ins = [fwd.slots[s] for s in uses]
    ins += [as_grad(fwd.slots[s], fwd.slots[s].dispensable) for s in fwd.outputs if s not in fwd.no_grad_outputs]
    outs = [as_grad(fwd.slots[s], True) for s in fwd.inputs if s not in fwd.no_grad_inputs]
    return OpDef(grad_type, tuple(s.name for s in ins), tuple(s.name for s in outs), dict(fwd.attrs),
                 dict(fwd.attr_types), {s.name: s for s in ins + outs}, infer=grads_like_inputs,
                 grad_op_of=fwd.type, tensor_attrs=fwd.tensor_attrs)


def grads_like_inputs(ctx):
    """A grad op's inference: each `S@GRAD` output is shaped like the op's input S, where it reads S."""
    inputs, find_var, results = ctx.op.inputs, ctx.block.find_var, {}
    for slot in ctx.op.outputs:
        source = slot.removesuffix("@GRAD")
        if slot != source and inputs.get(source):
            results[slot] = [(None, None) if var is None else
                             (None if var.shape is None else list(var.shape), var.dtype)
                             for var in map(find_var, inputs[source])]
    return results


def defgrad(grad_type: str, *, grad: GradMaker | None = None, infer: Callable | None = None,
            inputs: Iterable[str] | None = None, outputs: Iterable[str] | None = None, attrs: dict | None = None,
            no_grad_inputs: Iterable[str] = (), no_grad_outputs: Iterable[str] = (), of: str | None = None) -> OpDef:
    """Give a grad op its own maker (its gradient: higher-order derivatives) and inference. A grad op that
    a forward op's grad_op() registered keeps its slots; another one (a Paddle `*_grad_grad` op, or the grad op
    of a composite maker) is registered here with the slots given. ``of``: the op type it differentiates."""
    opdef = OPS.get(grad_type)
    if opdef is None:
        if inputs is None or outputs is None:
            raise ValueError(f"grad op '{grad_type}' is not registered: give its inputs and outputs")
        opdef = register(make_opdef(grad_type, inputs, outputs, attrs))
    opdef.grad_op_of = of if of is not None else opdef.grad_op_of
    opdef.grad = grad if grad is not None else opdef.grad
    opdef.infer = infer if infer is not None else opdef.infer
    opdef.no_grad_inputs |= slot_names(no_grad_inputs)
    opdef.no_grad_outputs |= slot_names(no_grad_outputs)
    return opdef


def register_op(type: str, inputs: Iterable[str] = ("X",), outputs: Iterable[str] = ("Out",), **options):
    """Decorator: register a user op whose grad maker is the decorated function.

        @gradc.register_op("cube", inputs=["X"], infer=same_as("X"))
        def cube_grad(g):
            return [g.op("cube_grad", {"X": g.I("X"), "Out@GRAD": g.OG("Out")}, {"X@GRAD": g.IG("X")})]
    """

    def decorate(maker: GradMaker) -> GradMaker:
        defop(type, inputs, outputs, grad=maker, **options)
        return maker

    return decorate
