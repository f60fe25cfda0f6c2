"""A PIR graph -> a gradc Program of legacy ops, one table row per PIR op (gradc.pir.table).

SSA values become named vars (gradc.pir.naming); constants that feed legacy attributes are folded
and their ops dropped when nothing else reads them; control flow gets sub-blocks.
"""

from __future__ import annotations

from ..errors import FormatError
from ..ir import EMPTY_VAR, AttrType, Block, OpDesc, Program, VarDesc, VarType
from ..opdef import declared_type
from ..ops.creation import scalars  # assign_value's complex literal: Scalars, the only list attribute holding them
from ..verify import check_structure
from . import schema
from .dist import carry_op_dist, carry_op_role, localize_reshapes
from .folding import foldable, folded, tensor_attrs, unstacked
from .graph import Attr, Module, Op, TensorType, Value, VectorType
from .naming import Namer, file_names
from .stacks import origin
from .table.rows import TABLE
from .table.unmapped import check_mapped
from .zero_dims import unknown_for_zero

# the producers whose value gradc can fold into a legacy attribute
MISSING = object()


def to_program(module: Module, source: str = "<pir>") -> Program:
    return Translator(module, source).run()


class Translator:
    def __init__(self, module: Module, source: str):
        self.module, self.source = module, source
        self.program = Program()
        self.names: dict[Value, str | list[str]] = {}
        self.constant_ops: list[tuple[Block, OpDesc]] = []
        self.xshapes: dict[str, str] = {}   # a var -> the XShape var a reshape-like op wrote for it
        self.stacks: dict = {}              # a cf stack, inlet or outlet value -> its arrays (gradc.pir.stacks)
        self.pushes: dict | None = None   # gradc.pir.stacks fills these three on the first stack
        self.pops: dict = {}
        self.read_values: set = set()
        self.blocks: list[Block] = [self.program.global_block]
        self.fixed_names = file_names(module)
        self.namer = Namer(set(self.fixed_names.values()))

    # ------------------------------------------------------------ driver
    def run(self) -> Program:
        check_mapped(self.module, self.source)
        for name, value in self.module.body.kwargs.items():   # vars of the scope (auto-parallel's @GRAD@MERGE buffers)
            self.program.global_block.add_var(self.var(name, value.type, value)).persistable = True
            self.names[value] = name
        self.translate_block(self.module.body.ops)
        self._drop_unread_constants()
        localize_reshapes(self.program)
        unknown_for_zero(self.program)
        check_structure(self.program, self.source)
        return self.program

    @property
    def block(self) -> Block:
        return self.blocks[-1]

    def translate_block(self, ops: list[Op], block: Block | None = None) -> None:
        if block is not None:
            self.blocks.append(block)
        for op in ops:
            row, emitted = TABLE[op.name], len(self.block.ops)
            if row.special is not None:
                self._check_arity(row, op)
                row.special(op, self)
            else:
                self.generic(row, op)
            carry_op_dist(op, self.block.ops[emitted:])
            carry_op_role(op, self.block.ops[emitted:])
        if block is not None:
            self.blocks.pop()

    def fail(self, op: Op, message: str) -> FormatError:
        return FormatError(f"{self.source}: {op.where}: {message}")

    def _check_arity(self, row, op: Op) -> None:
        for what, expected, found in (("operands", row.arity[0], op.operands), ("results", row.arity[1], op.results)):
            if expected is not None and len(found) != expected:
                raise self.fail(op, f"has {len(found)} {what}; {op.name} has {expected}")

    def attr(self, op: Op, name: str, *types, default=MISSING):
        """An attribute of a type the translation relies on, or a clear error."""
        value = op.attr(name, MISSING)
        if value is MISSING and default is not MISSING:
            return default
        if value is MISSING or not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            wanted = " or ".join(t.__name__ for t in types)
            found = "no such attribute" if value is MISSING else f"{value!r:.60}"
            raise self.fail(op, f"attribute '{name}' must be {wanted}, got {found}")
        return value

    # ------------------------------------------------------------ values
    def name(self, value: Value | None, op: Op, position: int) -> str | list[str]:
        if value is None:
            raise self.fail(op, f"operand {position} is null, but gradc needs a value there")
        names = self.names.get(value)
        if names is None:
            producer = f"{value.op.name} result {value.index}" if value.op else "a block argument"
            raise self.fail(op, f"operand {position} (%{value.id}) comes from {producer}, which has no legacy "
                                f"counterpart gradc can read")
        return names

    def args(self, value: Value, op: Op, position: int) -> list[str]:
        names = self.name(value, op, position)
        return list(names) if isinstance(names, list) else [names]

    def define(self, value: Value, next_name, block: Block | None = None) -> str | list[str]:
        """Bind a result to new var(s) declared in ``block`` (default: the current one)."""
        block = block or self.block
        if isinstance(value.type, VectorType):
            names = [next_name() for _ in value.type.items]
            for name, item in zip(names, value.type.items):
                block.add_var(self.var(name, item, value))
        else:
            names = self.fixed_names.get(value) or next_name()
            block.add_var(self.var(names, value.type, value))
        self.names[value] = names
        return names

    def bind(self, value: Value, names: str | list[str]) -> None:
        self.names[value] = names

    @staticmethod
    def var(name: str, type_, value: Value) -> VarDesc:
        if isinstance(type_, TensorType):
            array = type_.kind == "t_dense_tensor_array"   # dims are its elements'; none written: unknown
            shape = None if array and not type_.dims else list(type_.dims)
            var = VarDesc(name, shape, type_.dtype, type=schema.TENSOR_TYPES[type_.kind])
            var.dist = type_.dist
        else:
            var = VarDesc(name, None, None, type=VarType.RAW)
        var.stop_gradient = True if value.stop_gradient and not _stops_as_its_inputs(value) else None
        var.persistable = True if value.persistable else None
        return var

    def constant(self, value: Value | None, fold: str, op: Op, operand: str, attr: str):
        return folded(origin(value, self.stacks), fold, op, operand, attr, self.fail)

    def _drop_unread_constants(self) -> None:
        readers, rewritten = set(), set()   # a constant another op writes in place is its initial value: kept
        constants = {id(op) for _, op in self.constant_ops}
        for block in self.program.blocks:
            for op in block.ops:
                readers.update(op.input_names())
                if id(op) not in constants:
                    rewritten.update(op.output_names())
        dropped = set()
        for block, op in self.constant_ops:
            if not any(name in readers or name in rewritten for name in op.output_names()):
                dropped.add(id(op))
                for name in op.output_names():
                    block.vars.pop(name, None)
        for block in {id(b): b for b, _ in self.constant_ops}.values():
            block.ops = [op for op in block.ops if id(op) not in dropped]

    # ------------------------------------------------------------ ops
    def emit(self, type: str, inputs: dict, outputs: dict, attrs: dict | None = None,
             attr_types: dict | None = None) -> OpDesc:
        empty_lists = {name: declared_type(type, name) for name, value in (attrs or {}).items() if value == []}
        op = OpDesc(type, inputs, outputs, attrs, {**{k: v for k, v in empty_lists.items() if v}, **(attr_types or {})})
        self.block.ops.append(op)   # an empty list's wire type is the declared one (a FLOATS scale, not INTS)
        return op

    def emit_constant(self, type: str, inputs: dict, outputs: dict, attrs: dict, attr_types: dict | None = None):
        """A constant-making op, dropped at the end if every reader folded it into an attribute."""
        op = self.emit(type, inputs, outputs, attrs, attr_types)
        self.constant_ops.append((self.block, op))
        return op

    def generic(self, row, op: Op) -> None:
        """One legacy op from one table row: operands to input slots or folded attributes, attributes
        renamed, results to new vars (or, in place, to an operand's var)."""
        if len(op.operands) != len(row.operands) or len(op.results) != len(row.results):
            raise self.fail(op, f"has {len(op.operands)} operands and {len(op.results)} results; gradc's table "
                                f"expects {len(row.operands)} ({' '.join(o.name for o in row.operands)}) and "
                                f"{len(row.results)} ({' '.join(r.name for r in row.results)})")
        inputs, attrs, attr_types = self._legacy_inputs(row, op)
        doubles = {}   # a PIR double attribute reaches Paddle's kernel as a double: not rounded into a legacy FLOAT
        for spec in row.attrs:
            attr = op.attrs.get(spec.name)
            if attr is not None and schema.attr_family(attr.kind) != schema.ATTR_FAMILIES[spec.kind]:   # for hooks
                raise self.fail(op, f"attribute '{spec.name}' is {attr.kind}, not {schema.ATTR_FAMILIES[spec.kind]}")
            if spec.legacy is not None and attr is not None:
                value = attrs[spec.legacy] = legacy_value(attr)
                if isinstance(value, list) and any(isinstance(v, complex) for v in value):
                    attrs[spec.legacy], attr_types[spec.legacy] = scalars(value), AttrType.SCALARS
                elif attr.holds_double():
                    doubles[spec.legacy] = value
        next_name = self.namer.for_op(row.legacy)
        outputs = self._legacy_outputs(row, op, next_name)
        for slot in row.extra_outputs:
            outputs[slot] = [self._extra_output(slot, inputs, next_name)]
        legacy = self.emit(row.legacy, inputs, outputs, attrs, attr_types)
        legacy.attrs.update(doubles)
        if row.hook is not None:
            row.hook(legacy, op, self)

    def _legacy_inputs(self, row, op: Op) -> tuple[dict, dict, dict]:
        inputs, attrs, attr_types = {}, dict(row.fixed), {}
        for position, (spec, value) in enumerate(zip(row.operands, op.operands)):
            if spec.attr is not None:
                computed = value is not None and not foldable(origin(value, self.stacks))
                if computed and spec.tensor_slots:
                    tensor, listed = (*spec.tensor_slots, spec.tensor_slots[0])[:2]
                    names = self.args(value, op, position)
                    if isinstance(value.type, VectorType):
                        inputs[listed] = names
                    elif tensor:
                        inputs[tensor] = names
                    else:   # the legacy op takes lists only: the tensor's elements
                        inputs[listed] = unstacked(self, value, names[0], op, spec.name)
                elif computed and spec.attr in tensor_attrs(row.legacy):   # read from its var(s) at run time
                    names = self.args(value, op, position)
                    listed = isinstance(value.type, VectorType)
                    attrs[spec.attr] = names if listed else names[0]
                    attr_types[spec.attr] = AttrType.VARS if listed else AttrType.VAR
                elif value is not None or not spec.optional:
                    attrs[spec.attr] = self.constant(value, spec.fold, op, spec.name, spec.attr)
            elif value is None:
                if spec.slot is not None and not spec.optional:
                    raise self.fail(op, f"operand '{spec.name}' is null, but legacy slot {spec.slot} needs a value")
            elif spec.slot == "XShape":
                inputs["XShape"] = [self.xshape_for(self.args(value, op, position)[0], op)]
            elif spec.slot is not None:
                inputs[spec.slot] = self.args(value, op, position)
        return inputs, attrs, attr_types

    def _legacy_outputs(self, row, op: Op, next_name) -> dict:
        outputs = {}
        for spec, value in zip(row.results, op.results):
            if spec.slot is None or value.type is None:   # a NULL type: a grad nobody asked for
                continue
            if isinstance(value.type, VectorType) and None in value.type.items:
                names = [EMPTY_VAR if item is None else next_name() for item in value.type.items]
                for name, item in zip(names, value.type.items):
                    if item is not None:
                        self.block.add_var(self.var(name, item, value))
                self.bind(value, names)
            elif spec.inplace is not None:
                position = row.operands.index(row.operand(spec.inplace))
                names = self.name(op.operands[position], op, position)
                if self.starts_gradient(names, value):
                    names = self.define(value, next_name)
                    self.bind(op.operands[position], names)   # later readers share Paddle's buffer: the new var
                else:
                    self.bind(value, names)
            else:
                names = self.define(value, next_name)
            outputs[spec.slot] = list(names) if isinstance(names, list) else [names]
        return outputs

    def starts_gradient(self, names, value: Value) -> bool:
        """An in-place write of a differentiable result into a local var that stops gradients (what a creation
        op such as empty makes): Paddle differentiates from this write on, so the result gets a var of its own."""
        var = self.block.vars.get(names) if isinstance(names, str) else None
        return value.stop_gradient is False and var is not None and bool(var.stop_gradient) and not var.persistable

    def _extra_output(self, slot: str, inputs: dict, next_name) -> str:
        """XShape: [0] + X's shape, no data (what legacy reshape2/transpose2/... write)."""
        name = next_name()
        x = self.block.find_var(inputs["X"][0]) if inputs.get("X") else None
        shape = [0] + list(x.shape) if x is not None and x.shape is not None else None
        self.block.add_var(VarDesc(name, shape, x.dtype if x is not None else VarType.FP32, stop_gradient=True))
        if x is not None:
            self.xshapes.setdefault(x.name, name)
        return name

    def xshape_for(self, x: str, op: Op) -> str:
        """The XShape var a legacy grad reads where PIR's reads the forward input ``x``: the forward op's
        XShape if it wrote one, else an empty [0, *x.shape] constant, or where x has unknown dims (a loop's value
        read from an array: Tacotron2's) the XShape a flattening reshape2 of x writes as it runs."""
        known = self.xshapes.get(x)
        if known is not None and self.block.find_var(known) is not None:
            return known
        var = self.block.find_var(x)
        shape = list(var.shape) if var is not None and var.shape is not None else None
        if var is None or shape is None:
            raise self.fail(op, f"the legacy grad needs the shape of '{x}' ({shape}) to be known")
        name = self.namer.fresh("xshape")
        self.block.create_var(name, [0] + shape, var.dtype, stop_gradient=True)
        if any(d < 0 for d in shape):
            flat = self.namer.fresh("flat")
            self.block.create_var(flat, [-1], var.dtype, stop_gradient=True)
            self.emit("reshape2", {"X": [x]}, {"Out": [flat], "XShape": [name]}, {"shape": [-1]})
        else:
            self.emit("fill_constant", {}, {"Out": [name]},
                      {"shape": [0] + shape, "dtype": int(var.dtype), "value": 0.0, "str_value": "0"}, {"shape": 11})
        self.xshapes[x] = name
        return name


def _stops_as_its_inputs(value: Value) -> bool:
    """Paddle marks an op's result stop_gradient when all its operands are: a mark the legacy backward derives
    itself, and one that must go where an operand's does (a tensor array's: plumbing.create_array)."""
    operands = [v for v in (value.op.operands if value.op is not None else ()) if v is not None]
    return bool(operands) and all(v.stop_gradient for v in operands)


def legacy_value(attr: Attr):
    """A PIR attribute as a legacy attribute value (a_dtype -> the VarType number, -1 if undefined)."""
    if attr.kind == "a_dtype":
        return schema.DTYPE_NAMES.get(attr.value, -1)
    return attr.plain()
