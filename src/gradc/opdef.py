"""What gradc knows about an op type: its OpDef, the single source of truth that the backward pass,
the executor, the verifier and the CLI all read (DESIGN section 3; docs/design.md).

An OpDef holds the op's slots (with Paddle's duplicable/dispensable flags), its attributes (default
and wire type), its shape inference, its grad maker, and kind flags for the few ops the passes treat
specially (control flow, loops, partial writers). Slots are written in a compact notation:

    "X"      one var            "X[]"     a list of vars (Paddle's duplicable)
    "Scale?" an optional var    "X[]?"    an optional list
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from .definition_check import compile_definition_check
from .ir import VAR_KINDS, AttrType, OpDesc, infer_attr_type, stored_attr_value
from .optable import OpTable


def NO_GRAD(g) -> list[OpDesc]:
    """The empty grad maker: the op has no gradient (comparisons, constants, integer ops)."""
    return []


@dataclass(frozen=True)
class Slot:
    name: str
    duplicable: bool = False   # holds a list of vars
    dispensable: bool = False  # may be empty
    extra: bool = False        # an output Paddle marks extra (a runtime buffer): saved inference programs drop it


def parse_slot(spec: str) -> Slot:
    """"X" | "X[]" | "X?" | "X[]?", each with a trailing "!" for an extra output -> Slot."""
    extra = spec.endswith("!")
    spec = spec.rstrip("!")
    dispensable = spec.endswith("?")
    spec = spec.rstrip("?")
    duplicable = spec.endswith("[]")
    return Slot(spec.removesuffix("[]"), duplicable, dispensable, extra)


def slot_names(specs: Iterable[str]) -> frozenset[str]:
    """The names of slots given in the notation (markers dropped)."""
    return frozenset(parse_slot(s).name for s in specs)


class Attr(NamedTuple):
    """An attribute default whose wire type the Python value does not tell (LONG, LONGS, BLOCK, ...)."""

    default: object
    type: AttrType


def typed(default, type: AttrType) -> Attr:
    return Attr(default, type)


def split_attrs(attrs: dict) -> tuple[dict[str, object], dict[str, AttrType]]:
    """{name: default or typed(default, type)} -> (defaults, wire types)."""
    defaults, types = {}, {}
    for name, value in attrs.items():
        if isinstance(value, Attr):
            defaults[name], types[name] = value.default, value.type
        else:
            defaults[name], types[name] = value, AttrType(infer_attr_type(value))
        defaults[name] = stored_attr_value(types[name], defaults[name])   # a FLOAT default as kernels read it
    return defaults, types


@dataclass
class OpDef:
    type: str
    inputs: tuple[str, ...] = ()                   # slot names, in Paddle's order
    outputs: tuple[str, ...] = ()
    attrs: dict[str, object] = field(default_factory=dict)          # name -> default
    attr_types: dict[str, AttrType] = field(default_factory=dict)   # name -> wire type
    slots: dict[str, Slot] = field(default_factory=dict)            # input and output slots by name
    grad: Callable | None = None                   # the grad maker; None: none registered
    no_grad_inputs: frozenset[str] = frozenset()   # slots that never get a gradient (labels, indices)
    no_grad_outputs: frozenset[str] = frozenset()  # outputs whose gradient no grad op reads (XShape, Mask)
    infer: Callable | None = None                  # shape/dtype inference, see gradc.ops.infer
    grad_op_of: str | None = None                  # on a grad op: the forward op type it differentiates
    # kind flags: the passes ask these instead of testing op types
    loop_carried: tuple[str, str] | None = None    # a loop: vars in both of these (input, output) slots are
                                                   # carried from one iteration to the next
    partial_write: bool = False                    # writes some of its outputs; the others keep their values
    unsupported_attrs: dict[str, str] = field(default_factory=dict)   # honoured only at their default: why
    # output slots holding the kernel's dtype whatever the program declares (Paddle's auc declares AUC int64 and
    # writes a float64 into it, which its cast reads as float64)
    kernel_dtype_outputs: frozenset[str] = frozenset()
    # the lod_level of output slots declared with the op (gradc.ops.infer.lod_levels); None: Paddle's ShareLoD
    lod_levels: Callable | None = None
    # attributes a program may give as a var (wire type VAR/VARS, Paddle's support_tensor): the kernel reads its
    # value at run time, and the op's shapes are the program's own
    tensor_attrs: frozenset[str] = frozenset()
    # input slots of a state the op writes back to the same var, empty until its first run (shuffle_batch's Seed):
    # the kernel then takes a default, so a read before any write is no fault
    state_inputs: frozenset[str] = frozenset()
    # input slots whose declared shapes Paddle's passes leave stale (multihead_matmul_fuse_pass_v3 declares the fused
    # W [hidden, 3, 3] whatever the heads' size): a parameter read through one is not held to its declared shape
    stale_shape_inputs: frozenset[str] = frozenset()
    # input slots whose declared dtype Paddle's converts leave stale (QuantWeightPass stores a weight declared float32
    # as int8, which the kernel takes): a persistable read through one alone may hold an int8 value
    int8_stored_inputs: frozenset[str] = frozenset()
    # output slots Paddle declares with a made-up rank where a shape tensor gives their dims (affine_grid's Output
    # of an OutputShape, [-1, -1, -1, -1, 3] for a 2-D grid): checks carry the inferred shape instead
    runtime_rank_outputs: frozenset[str] = frozenset()
    # output slots that name an input var and leave its value as it is (hierarchical_sigmoid's W_Out, a hook for
    # remote tables): no write a backward must keep the value from
    alias_outputs: frozenset[str] = frozenset()
    # input slots naming an object the building process keeps in its scope and never declares in the program
    # (create_py_reader's blocking_queue, the queue a DataLoader fills): their vars need no declaration
    undeclared_inputs: frozenset[str] = frozenset()

    @property
    def differentiable(self) -> bool:
        return self.grad is not None and self.grad is not NO_GRAD

    @cached_property
    def sub_block_attr(self) -> str | None:
        """The BLOCK attribute naming the block a control-flow op runs, or None."""
        return next((name for name, kind in self.attr_types.items() if kind == AttrType.BLOCK), None)

    @cached_property
    def input_rules(self) -> tuple[tuple[str, bool, bool], ...]:
        """(input slot, whether it must hold a var, whether it holds at most one): what slot_problem checks per op.
        A control-flow op's list of the outer vars its block reads is empty when the block reads none."""
        return tuple((name, not slot.dispensable and not (slot.duplicable and self.sub_block_attr), not slot.duplicable)
                     for name, slot in zip(self.inputs, map(self.slots.__getitem__, self.inputs)))

    @cached_property
    def attr_kinds(self) -> tuple[tuple[str, int], ...]:
        """(attribute, declared wire type) pairs: definition_problem walks them per op without a view of the dict."""
        return tuple(self.attr_types.items())

    @cached_property
    def input_checks(self) -> tuple[tuple[str, ...], tuple[tuple[str, bool, bool], ...]]:
        """input_rules split for definition_problem: the slots that must hold exactly one var (most), then the rest."""
        one_var = tuple(name for name, required, single in self.input_rules if required and single)
        return one_var, tuple(rule for rule in self.input_rules if rule[0] not in one_var)

    @cached_property
    def definition_check(self) -> Callable[[OpDesc], str | None]:
        """definition_problem's check of one op of this definition (gradc.definition_check)."""
        return compile_definition_check(*self.input_checks, bool(self.sub_block_attr), self.attr_kinds,
                                        slot_problem, attr_type_problem)

    def slot(self, name: str) -> Slot | None:
        return self.slots.get(name)


def make_opdef(type: str, inputs: Iterable[str], outputs: Iterable[str], attrs: dict | None = None,
               **fields) -> OpDef:
    ins, outs = [parse_slot(s) for s in inputs], [parse_slot(s) for s in outputs]
    defaults, types = split_attrs(dict(attrs or {}))
    return OpDef(type, tuple(s.name for s in ins), tuple(s.name for s in outs), defaults, types,
                 {s.name: s for s in ins + outs}, **fields)


OPS: OpTable = OpTable()   # op type -> OpDef; gradc.ops defers the built-in families to first use
_loaded = dict.get   # the table's own entries, each a whole definition: no Python-level method on the hot path


def get(type: str) -> OpDef | None:
    """The op's definition (None: unknown); ``OPS.get`` imports its family first where it is not loaded yet."""
    return _loaded(OPS, type) or OPS.get(type)


def unknown_types_note(types) -> str:
    """For an error over ops: '' when every type is registered, else which are not and how a user registers them."""
    unknown = sorted({t for t in types if get(t) is None})
    if not unknown:
        return ""
    return (f"; op type(s) gradc does not know: {', '.join(unknown)}: define each in a plugin (gradc.register_op "
            f"for its slots and grad maker, @gradc.executor.kernel for its kernel; README 'Your own op') and load "
            f"it first: gradc --plugin ./myops.py COMMAND ..., or import it in Python")


def attr_default(op: OpDesc, name: str):
    """The op's attribute, else the registered default (Paddle files carry all attrs; ours may not)."""
    if name in op.attrs:
        return op.attrs[name]
    opdef = _loaded(OPS, op.type) or OPS.get(op.type)
    if opdef is None or name not in opdef.attrs:
        raise KeyError(f"op '{op.type}' has no attribute '{name}'")
    return opdef.attrs[name]


def sub_block(op: OpDesc) -> int | None:
    """The index of the block a control-flow op runs, from its definition; None for other ops."""
    opdef = _loaded(OPS, op.type) or OPS.get(op.type)
    name = opdef.sub_block_attr if opdef is not None else None
    return None if name is None else attr_default(op, name)


def unsupported_setting(op: OpDesc) -> str | None:
    """Why the op cannot run as written: an attribute gradc honours only at its default is set otherwise."""
    opdef = _loaded(OPS, op.type) or OPS.get(op.type)
    for name, reason in (opdef.unsupported_attrs.items() if opdef is not None else ()):
        if name in op.attrs and op.attrs[name] != opdef.attrs[name]:
            return (f"attribute {name}={op.attrs[name]!r} is not supported ({reason}); "
                    f"gradc runs this op only with {name}={opdef.attrs[name]!r}")
    return None


_NUMBER_LISTS = {AttrType.INTS, AttrType.LONGS, AttrType.FLOATS, AttrType.FLOAT64S, AttrType.BOOLEANS}
_SAME_KIND = {AttrType.LONG: AttrType.INT, AttrType.LONGS: AttrType.INTS, AttrType.FLOAT64: AttrType.FLOAT,
              AttrType.FLOAT64S: AttrType.FLOATS}


def attr_type_problem(op: OpDesc) -> str | None:
    """An attribute whose wire type is not of the kind the op's definition declares (an int for a string,
    a var name for a value), which no kernel could read."""
    opdef = _loaded(OPS, op.type) or OPS.get(op.type)
    if opdef is None:
        return None
    if opdef.sub_block_attr and op.attr_types.get(opdef.sub_block_attr) != AttrType.BLOCK:
        return f"attribute '{opdef.sub_block_attr}' must name the block the op runs"
    declared_types = opdef.attr_types
    if declared_types.items() >= op.attr_types.items():   # every attribute of its declared type: most ops, no loop
        return None
    for name, kind in op.attr_types.items():
        declared = declared_types.get(name)
        if declared is None or declared == kind:
            continue
        if declared == AttrType.SCALARS and kind in _NUMBER_LISTS:   # numbers, as a program built in Python gives
            continue
        if kind in VAR_KINDS:
            if name not in opdef.tensor_attrs:
                return (f"attribute '{name}' is a var name, but op '{op.type}' takes it only as a value "
                        f"({AttrType(declared).name})")
        elif kind == AttrType.INT and declared == AttrType.BOOLEAN and op.attrs.get(name) in (0, 1):
            continue   # Paddle 1.x wrote is_test as an int, which Paddle 3 still reads as a bool
        elif _SAME_KIND.get(kind, kind) != _SAME_KIND.get(declared, declared):
            return (f"attribute '{name}' is {AttrType(kind).name}, but op '{op.type}' defines it as "
                    f"{AttrType(declared).name}")
    return None


def definition_problem(op: OpDesc) -> str | None:
    """slot_problem(op) or attr_type_problem(op), with the definition looked up once and the common case (every rule
    met, every attribute of its declared type) decided by its definition's straight-line check: the backward checks
    every op of a program."""
    return definition_check(op.type)(op)


def definition_check(type: str) -> Callable[[OpDesc], str | None]:
    """definition_problem for the ops of ``type``, which a loop over a program's ops looks up once a type."""
    opdef = _loaded(OPS, type) or OPS.get(type)
    return _no_problem if opdef is None else opdef.definition_check


class DefinitionChecks(dict):
    """op type -> definition_check(type), each type looked up once: for a loop over every op of a program."""

    def __missing__(self, type: str) -> Callable[[OpDesc], str | None]:
        check = self[type] = definition_check(type)
        return check


def _no_problem(op: OpDesc) -> None:
    """An op gradc has no definition of: nothing to check it against."""
    return None


def slot_problem(op: OpDesc) -> str | None:
    """A required input slot that is empty, or a single-var slot holding several."""
    opdef, given = _loaded(OPS, op.type) or OPS.get(op.type), op.inputs
    for name, required, single in opdef.input_rules if opdef is not None else ():
        args = given.get(name)
        if not args:
            if required:
                return f"the required input slot '{name}' is empty"
        elif single and len(args) > 1:
            return f"input slot '{name}' takes one var, not {len(args)}"
    return None


def declared_type(type: str, attr: str) -> AttrType | None:
    """The wire type an op's definition declares for an attribute (None: unknown op or attribute)."""
    opdef = _loaded(OPS, type) or OPS.get(type)
    return opdef.attr_types.get(attr) if opdef is not None else None


def make_op(type: str, inputs: dict[str, list[str]], outputs: dict[str, list[str]],
            attrs: dict | None = None) -> OpDesc:
    """A new OpDesc whose attributes get the wire types the op's definition declares."""
    op = OpDesc(type, inputs, outputs)
    for name, value in (attrs or {}).items():
        op.set_attr(name, value, declared_type(type, name))
    return op
