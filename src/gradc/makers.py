"""The grad-maker API (DESIGN section 3). A grad maker is a function of the forward op, seen through a
GradContext, that returns its grad OpDescs; it reads like the seeds' GradOpDescMakerBase:

    I(slot) forward inputs    O(slot) forward outputs    OG(slot) output grads    IG(slot) input grads

``grad_op(*uses)`` is the default maker (one Paddle-style `<type>_grad` op); composite makers write
the gradient with existing ops; NO_GRAD says the op has none.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from .errors import GradError
from .grad_op_code import one_var_maker
from .ir import EMPTY_VAR, OpDesc, grad_name
from .opdef import NO_GRAD, OpDef, attr_default, declared_type, parse_slot, unknown_types_note
from .opdef import get as get_opdef

__all__ = ["NO_GRAD", "GradContext", "GradMaker", "GradOp", "grad_op", "missing_grad_error"]

GradMaker = Callable[["GradContext"], list[OpDesc]]


class GradContext:
    """What a grad maker sees: the forward op and helpers in the style of GradOpDescMakerBase.

    I/O give forward input/output var names of a slot; OG the grads of outputs; IG the grads of
    inputs, with EMPTY_VAR where no gradient is wanted (stop_gradient, no-grad set, integer vars).
    ``grad_of`` names the grad of a var (``v@GRAD``; another name where a backward already took it).
    """

    __slots__ = ("fwd", "opdef", "_wants_grad", "_new_tmp", "_backward_block", "grad_of", "_shape", "block",
                 "_earlier", "_has_grad", "checks_slots")

    def __init__(self, fwd: OpDesc, opdef: OpDef, wants_grad: Callable[[str], bool],
                 new_tmp: Callable[[str], str], backward_block: Callable | None = None,
                 grad_of: Callable[[str], str] = grad_name, shape: Callable[[str], list[int] | None] | None = None,
                 block=None, earlier=None, has_grad: Callable[[str], bool] | None = None):
        self.fwd = fwd
        self.opdef = opdef
        self._wants_grad = wants_grad
        self._new_tmp = new_tmp
        self._backward_block = backward_block
        self.grad_of = grad_of
        self._shape = shape
        self.block = block   # the block the grad ops go into (control-flow makers add blocks to its program)
        self._earlier = earlier   # gradc.backward.emit.Earlier: values before an earlier op, and their grads
        self._has_grad = has_grad   # whether a grad op emitted so far writes a grad (None: assume it does)
        self.checks_slots = False   # a plugin's maker: each slot it names must be declared (gradc's may not)

    def for_op(self, fwd: OpDesc) -> GradContext:
        """The context of another forward op in the same backward (an op a maker builds and differentiates)."""
        return GradContext(fwd, get_opdef(fwd.type), self._wants_grad, self._new_tmp, self._backward_block,
                           self.grad_of, self._shape, self.block, self._earlier, self._has_grad)

    def value_before(self, name: str, op: OpDesc) -> str:
        """A copy of the value ``name`` holds just before the earlier forward op ``op`` of this block (made
        there, its grad wanted where the value's is), for a grad op that reads a value that op overwrites;
        add_grad_before gives its grad back."""
        if self._earlier is None:
            raise GradError(f"op '{self.fwd.type}': this backward pass keeps no values of earlier ops")
        return self._earlier.value_before(name, op)

    def overwritten(self, name: str, op: OpDesc) -> bool:
        """Whether the value ``name`` holds just before the earlier forward op ``op`` of this block is gone when the
        backward runs (``op`` or a later op writes it)."""
        return self._earlier is not None and self._earlier.overwritten(name, op)

    def add_grad_before(self, name: str, op: OpDesc, grad: str) -> None:
        """Add ``grad`` to the grad of the value ``name`` held just before forward op ``op``: where the reverse
        pass has gone past ``op``."""
        self._earlier.add_grad_before(name, op, grad)

    def I(self, slot: str) -> list[str]:  # noqa: E743 - the seeds' names
        return self.fwd.input(self._declared(slot, self.opdef.inputs, "input") if self.checks_slots else slot)

    def O(self, slot: str) -> list[str]:  # noqa: E743
        return self.fwd.output(self._declared(slot, self.opdef.outputs, "output") if self.checks_slots else slot)

    def OG(self, slot: str) -> list[str]:
        return [self.grad_of(n) for n in self.O(slot)]

    def IG(self, slot: str) -> list[str]:
        args = self.I(slot)
        if slot in self.opdef.no_grad_inputs:
            return [EMPTY_VAR] * len(args)
        wants, grad_of = self._wants_grad, self.grad_of
        return [grad_of(n) if wants(n) else EMPTY_VAR for n in args]

    def _declared(self, slot: str, slots: tuple[str, ...], kind: str) -> str:
        """A slot the op's definition declares: a misspelt one would give no vars, and its gradient silently none."""
        if slot in slots:
            return slot
        raise GradError(f"its grad maker asks for {kind} slot '{slot}', which '{self.fwd.type}' does not declare "
                        f"(its {kind}s: {', '.join(slots) or 'none'}): fix the slot name in the maker")

    def shape(self, name: str) -> list[int] | None:
        """The declared shape of a var (-1 for a dim known at run time only), or None when unknown."""
        return self._shape(name) if self._shape is not None else None

    def wants(self, name: str) -> bool:
        """Whether the var ``name`` gets a gradient in this backward."""
        return self._wants_grad(name)

    def has_grad(self, grad: str) -> bool:
        """Whether a grad op emitted so far in this backward writes ``grad`` (an output's grad the maker would
        read). Where none does, the backward fills it with zeros shaped like its var's value, which a maker whose
        op may leave that var unwritten (select_output) must not read."""
        return self._has_grad is None or self._has_grad(grad)

    def attr(self, name: str):
        return attr_default(self.fwd, name)

    def tmp(self, like: str, dims: Callable[[list[int]], list[int]] | None = None, dtype=None) -> str:
        """A fresh intermediate var, declared with the dtype and shape of ``like``, or with ``dtype`` and
        ``dims(shape)`` when given (a sum along an axis keeps it as 1)."""
        return self._new_tmp(like, dims, dtype) if dims is not None or dtype is not None else self._new_tmp(like)

    def backward_block(self, inputs: str, outputs: str):
        """Differentiate the op's sub-block (control flow): the backward pass appends a backward block
        for the sub-block's ops between the vars of slot ``inputs`` and those of slot ``outputs`` and
        returns a gradc.backward.control_flow.BlockGrad (its index, the outer grads it reads, the vars
        it computes grads of)."""
        if self._backward_block is None:
            raise GradError(f"op '{self.fwd.type}': this backward pass cannot differentiate sub-blocks")
        return self._backward_block(self.fwd, inputs, outputs)

    def op(self, type: str, inputs: dict[str, list[str]], outputs: dict[str, list[str]],
           attrs: dict | None = None, *, forward_attrs: bool = False) -> OpDesc:
        """A grad op, its attributes typed as its definition says. An output slot with no wanted grad
        is left empty, as Paddle does; a list slot with some keeps its EMPTY_VAR placeholders, so grads
        stay aligned with the forward vars."""
        if self.checks_slots and (target := get_opdef(type)) is not None:
            _check_slots(self.fwd.type, target, inputs, outputs)
        op = OpDesc.__new__(OpDesc)   # make_op's op, its dicts filled once
        op.type = type
        op.inputs = {slot: list(args) for slot, args in inputs.items()}
        op.outputs = {slot: list(args) if args.count(EMPTY_VAR) != len(args) else [] for slot, args in outputs.items()}
        op.attrs, op.attr_types = with_defaults(self.fwd, self.opdef) if forward_attrs else ({}, {})
        op.is_target = None
        op.repeated_attrs = ()
        op.var_attrs = self.fwd.var_attrs if forward_attrs else ()
        for name, value in (attrs or {}).items():
            op.set_attr(name, value, declared_type(type, name))
        return op


def _check_slots(maker_of: str, target: OpDef, inputs: dict, outputs: dict) -> None:
    """A grad op given a slot its definition lacks would fail later, at another op, or lose a gradient."""
    for kind, given, declared in (("input", inputs, target.inputs), ("output", outputs, target.outputs)):
        if unknown := [slot for slot in given if slot not in declared]:
            raise GradError(f"its grad maker builds op '{target.type}' with {kind} slot '{unknown[0]}', which "
                            f"'{target.type}' does not declare (its {kind}s: {', '.join(declared) or 'none'}): "
                            f"fix the slot name in the maker of '{maker_of}'")


def with_defaults(fwd: OpDesc, opdef: OpDef) -> tuple[dict, dict]:
    """The forward op's attributes and their types, for its grad op, with its definition's defaults for any it
    lacks: a program of an older Paddle may lack one added since (softmax's axis, pool2d's padding_algorithm),
    which Paddle's grad kernel reads, its grad ops having no defaults of their own."""
    if opdef.attrs.keys() <= fwd.attrs.keys():
        return dict(fwd.attrs), dict(fwd.attr_types)
    return {**opdef.attrs, **fwd.attrs}, {**opdef.attr_types, **fwd.attr_types}


class _Layout(NamedTuple):
    """A GradOp's grad op for one op definition."""
    opdef: OpDef
    grad_type: str
    uses: tuple[tuple[str, bool], ...]            # (forward slot it reads, whether an input slot)
    output_grads: tuple[tuple[str, str], ...]     # (forward output slot, the grad op's input slot of its grad)
    input_grads: tuple[tuple[str, str], ...]      # (forward input slot, the grad op's output slot of its grad)
    attr_names: tuple[str, ...]                   # the definition's attributes, which the forward op should have
    one_var_maker: Callable                       # gradc.grad_op_code.one_var_maker of the fields above


@dataclass(frozen=True)
class GradOp:
    """The default maker: one ``grad_type`` op (default `<type>_grad`) reading the forward slots in
    ``uses`` and every output grad, writing every input grad, with the forward attributes. Registering
    a forward op with it also registers the grad op it emits (gradc.registry.defop)."""

    uses: tuple[str, ...]
    grad_type: str | None = None
    _layouts: dict = field(default_factory=dict, init=False, compare=False, repr=False)   # op type -> its _Layout

    def type_for(self, opdef: OpDef) -> str:
        return self.grad_type or f"{opdef.type}_grad"

    def _new_layout(self, opdef: OpDef) -> tuple:
        """The grad op's slots for this definition (a _Layout's fields as a plain tuple, which grad_ops unpacks faster),
        worked out once per op type (grad_ops looks it up in _layouts first; a definition registered again gets its
        own)."""
        uses = tuple((slot, slot in opdef.inputs) for slot in self.uses)
        output_grads = tuple((slot, grad_name(slot)) for slot in opdef.outputs if slot not in opdef.no_grad_outputs)
        input_grads = tuple((slot, grad_name(slot)) for slot in opdef.inputs if slot not in opdef.no_grad_inputs)
        layout = self._layouts[opdef.type] = tuple(_Layout(
            opdef, self.type_for(opdef), uses, output_grads, input_grads, tuple(opdef.attrs),
            one_var_maker(opdef, self.type_for(opdef), uses, output_grads, input_grads, tuple(opdef.attrs))))
        return layout

    def __call__(self, g: GradContext) -> list[OpDesc]:
        return self.grad_ops(g.fwd, g.opdef, _Lookup(g.grad_of), _Lookup(g._wants_grad))

    def grad_ops(self, fwd: OpDesc, opdef: OpDef, grad_names: Mapping[str, str],
                 wanted: Container[str]) -> list[OpDesc]:
        return [self.grad_op_of(fwd, opdef, grad_names, wanted)[0]]

    def one_var_maker(self, opdef: OpDef) -> Callable:
        """grad_op_of's straight-line path for ``opdef`` (gradc.grad_op_code): the backward looks it up once a type and
        calls it per op, grad_op_of only where it gives None."""
        layout = self._layouts.get(opdef.type)
        if layout is None or layout[0] is not opdef:
            layout = self._new_layout(opdef)
        return layout[-1]

    def grad_op_of(self, fwd: OpDesc, opdef: OpDef, grad_names: Mapping[str, str],
                   wanted: Container[str]) -> tuple[OpDesc, list[str], list[str]]:
        """g.op(type, {uses, OG(out)...}, {IG(in)...}, forward_attrs=True), built in one go, with its input_names() and
        output_names(): this maker makes most of a backward's ops (the backward calls it without a GradContext, with
        its GradNames and wanted set: a subscript and an 'in' test cost less than calls of their bound methods; and
        takes the one op without a list around it, and its names as they were made, not walked again)."""
        made = self.one_var_maker(opdef)(fwd, grad_names, wanted)
        if made is not None:   # every slot it reads holds one var: most ops
            return made
        _, grad_type, uses, output_grads, input_grads, attr_names, _ = self._layouts[opdef.type]
        forward_inputs, forward_outputs = fwd.inputs, fwd.outputs
        inputs = {}
        for slot, is_input in uses:
            inputs[slot] = [*(forward_inputs if is_input else forward_outputs).get(slot, ())]
        for slot, grad_slot in output_grads:
            inputs[grad_slot] = [grad_names[n] for n in forward_outputs.get(slot, ())]
        outputs = {}
        for slot, grad_slot in input_grads:
            grads = [grad_names[n] if n in wanted else EMPTY_VAR for n in forward_inputs.get(slot, ())]
            outputs[grad_slot] = grads if grads.count(EMPTY_VAR) != len(grads) else []
        op = OpDesc.__new__(OpDesc)
        op.type, op.inputs, op.outputs, op.var_attrs = grad_type, inputs, outputs, fwd.var_attrs
        op.attrs, op.attr_types = with_defaults(fwd, opdef)
        op.is_target, op.repeated_attrs = None, ()
        return op, op.input_names(), op.output_names()


class _Lookup:
    """A GradContext's function (grad_of, wants) seen as the mapping or set GradOp.grad_ops reads."""

    __slots__ = ("function",)

    def __init__(self, function: Callable[[str], object]):
        self.function = function

    def __getitem__(self, name: str):
        return self.function(name)

    def __contains__(self, name: str) -> bool:
        return bool(self.function(name))


def grad_op(*uses: str, grad_type: str | None = None) -> GradOp:
    """The default maker reading the forward slots ``uses`` (slot notation accepted)."""
    return GradOp(tuple(parse_slot(u).name for u in uses), grad_type)


def missing_grad_error(offenders: list[tuple[int, int, str]]) -> GradError:
    listing = "; ".join(f"block {b}, op {i} ({t})" for b, i, t in offenders)
    note = unknown_types_note(t for _, _, t in offenders) + "".join(
        f"; {t} differentiates {d.grad_op_of}: its own gradient (a second derivative) needs a maker, "
        f"gradc.registry.defgrad('{t}', grad=MAKER), or {d.grad_op_of}'s written with differentiable ops"
        for t in sorted({t for _, _, t in offenders}) if (d := get_opdef(t)) is not None and d.grad_op_of)
    return GradError(f"{len(offenders)} op(s) on the path to the loss have no grad maker: {listing}{note}")
