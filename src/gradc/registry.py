"""Op type -> OpDef: slots, attribute defaults, shape/dtype inference, grad maker, flags.

A grad maker is a function ``maker(g: GradContext) -> list[OpDesc]`` (DESIGN section 3). Most ops
register through one-line helpers that hold the shared policy:

    defop("relu", ["X"], ["Out"], infer=same_as("X"), grad=grad_op("Out"))   # default <type>_grad
    defop("less_than", ["X", "Y"], ["Out"], grad=NO_GRAD)                     # explicitly no gradient

The compiler side never imports numpy: kernels live in gradc.executor.kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .errors import GradError
from .ir import EMPTY_VAR, OpDesc, grad_name

GradMaker = Callable[["GradContext"], list[OpDesc]]


def NO_GRAD(g: GradContext) -> list[OpDesc]:
    """The empty maker: the op has no gradient (comparisons, constants, integer ops)."""
    return []


@dataclass
class OpDef:
    type: str
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    attrs: dict[str, object] = field(default_factory=dict)
    grad: GradMaker | None = None                  # None: no maker registered
    no_grad_inputs: frozenset[str] = frozenset()   # slots that never get a gradient (labels, indices)
    no_grad_outputs: frozenset[str] = frozenset()  # outputs whose gradient no grad op reads (XShape, Mask)
    infer: Callable | None = None                  # shape/dtype inference, see gradc.ops.infer
    grad_op_of: str | None = None                  # set on `<type>_grad` ops made by grad_op()

    @property
    def differentiable(self) -> bool:
        return self.grad is not None and self.grad is not NO_GRAD


OPS: dict[str, OpDef] = {}


def register(opdef: OpDef, *, replace: bool = False) -> OpDef:
    if opdef.type in OPS and not replace:
        raise ValueError(f"op '{opdef.type}' is already registered")
    OPS[opdef.type] = opdef
    return opdef


def defop(type: str, inputs: Iterable[str] = (), outputs: Iterable[str] = ("Out",), *,
          attrs: dict | None = None, grad: GradMaker | None = None,
          no_grad_inputs: Iterable[str] = (), no_grad_outputs: Iterable[str] = (),
          infer: Callable | None = None, replace: bool = False) -> OpDef:
    """Register an op. A maker built by grad_op() also registers the `<type>_grad` op it emits."""
    opdef = register(OpDef(type, tuple(inputs), tuple(outputs), dict(attrs or {}), grad,
                           frozenset(no_grad_inputs), frozenset(no_grad_outputs), infer),
                     replace=replace)
    spec = getattr(grad, "grad_op_spec", None)
    if spec is not None:
        grad_type = spec.grad_type or f"{type}_grad"
        if grad_type not in OPS or replace:
            ins = [s for s in spec.uses] + [s + "@GRAD" for s in opdef.outputs if s not in opdef.no_grad_outputs]
            outs = [s + "@GRAD" for s in opdef.inputs if s not in opdef.no_grad_inputs]
            register(OpDef(grad_type, tuple(ins), tuple(outs), dict(opdef.attrs), grad_op_of=type),
                     replace=True)
    return opdef


def register_op(type: str, inputs: Iterable[str] = ("X",), outputs: Iterable[str] = ("Out",), **options):
    """Decorator: register a user op whose grad maker is the decorated function.

        @gradc.register_op("cube", inputs=["X"])
        def cube_grad(g):
            return [g.op("cube_grad", {"X": g.I("X"), "Out@GRAD": g.OG("Out")}, {"X@GRAD": g.IG("X")})]
    """

    def decorate(maker: GradMaker) -> GradMaker:
        defop(type, inputs, outputs, grad=maker, **options)
        return maker

    return decorate


def get(type: str) -> OpDef | None:
    return OPS.get(type)


def attr_default(op: OpDesc, name: str):
    """The op's attribute, else the registered default (Paddle files carry all attrs; ours may not)."""
    if name in op.attrs:
        return op.attrs[name]
    opdef = OPS.get(op.type)
    if opdef is None or name not in opdef.attrs:
        raise KeyError(f"op '{op.type}' has no attribute '{name}'")
    return opdef.attrs[name]


class GradContext:
    """What a grad maker sees: the forward op and helpers in the style of GradOpDescMakerBase.

    I/O give forward input/output var names of a slot; OG the grads of outputs; IG the grads of
    inputs, with EMPTY_VAR where no gradient is wanted (stop_gradient, no-grad set, integer vars).
    """

    __slots__ = ("fwd", "opdef", "_wants_grad", "_new_tmp", "_backward_block")

    def __init__(self, fwd: OpDesc, opdef: OpDef, wants_grad: Callable[[str], bool],
                 new_tmp: Callable[[str], str], backward_block: Callable | None = None):
        self.fwd = fwd
        self.opdef = opdef
        self._wants_grad = wants_grad
        self._new_tmp = new_tmp
        self._backward_block = backward_block

    def I(self, slot: str) -> list[str]:  # noqa: E743 - the seeds' names
        return self.fwd.input(slot)

    def O(self, slot: str) -> list[str]:  # noqa: E743
        return self.fwd.output(slot)

    def OG(self, slot: str) -> list[str]:
        return [grad_name(n) for n in self.fwd.output(slot)]

    def IG(self, slot: str) -> list[str]:
        if slot in self.opdef.no_grad_inputs:
            return [EMPTY_VAR] * len(self.fwd.input(slot))
        return [grad_name(n) if self._wants_grad(n) else EMPTY_VAR for n in self.fwd.input(slot)]

    def attr(self, name: str):
        return attr_default(self.fwd, name)

    def tmp(self, like: str) -> str:
        """A fresh intermediate var, declared with the shape and dtype of ``like``."""
        return self._new_tmp(like)

    def backward_block(self, inputs: str, outputs: str):
        """Differentiate the op's ``sub_block`` (control flow): the backward pass appends a backward
        block for the sub-block's ops between the vars of slot ``inputs`` and those of slot ``outputs``
        and returns a gradc.backward.control_flow.BlockGrad (its index, the outer grads it reads, the
        vars it computes grads of)."""
        if self._backward_block is None:
            raise GradError(f"op '{self.fwd.type}': this backward pass cannot differentiate sub-blocks")
        return self._backward_block(self.fwd, inputs, outputs)

    def op(self, type: str, inputs: dict[str, list[str]], outputs: dict[str, list[str]],
           attrs: dict | None = None, *, forward_attrs: bool = False) -> OpDesc:
        """A grad op. An output slot with no wanted grad is left empty, as Paddle does; a list slot
        with some keeps its EMPTY_VAR placeholders, so grads stay aligned with the forward vars."""
        op = OpDesc(type, inputs, {s: args if any(n != EMPTY_VAR for n in args) else []
                                   for s, args in outputs.items()})
        if forward_attrs:
            op.attrs = dict(self.fwd.attrs)
            op.attr_types = dict(self.fwd.attr_types)
        for name, value in (attrs or {}).items():
            op.set_attr(name, value)
        return op


@dataclass(frozen=True)
class GradOpSpec:
    uses: tuple[str, ...]
    grad_type: str | None


def grad_op(*uses: str, grad_type: str | None = None) -> GradMaker:
    """The default maker: one `<type>_grad` op reading the forward slots in ``uses`` and every output
    grad, writing every input grad, with the forward attributes."""

    def maker(g: GradContext) -> list[OpDesc]:
        opdef = g.opdef
        inputs = {slot: (g.I(slot) if slot in opdef.inputs else g.O(slot)) for slot in uses}
        for slot in opdef.outputs:
            if slot not in opdef.no_grad_outputs:
                inputs[slot + "@GRAD"] = g.OG(slot)
        outputs = {slot + "@GRAD": g.IG(slot) for slot in opdef.inputs if slot not in opdef.no_grad_inputs}
        return [g.op(grad_type or f"{opdef.type}_grad", inputs, outputs, forward_attrs=True)]

    maker.grad_op_spec = GradOpSpec(uses, grad_type)
    return maker


def missing_grad_error(offenders: list[tuple[int, int, str]]) -> GradError:
    listing = "; ".join(f"block {b}, op {i} ({t})" for b, i, t in offenders)
    return GradError(f"{len(offenders)} op(s) on the path to the loss have no grad maker: {listing}")
