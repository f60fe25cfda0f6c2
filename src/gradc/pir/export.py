"""A gradc Program of legacy ops -> a PIR graph (gradc.pir.graph.Module), the table read backwards.

Legacy vars become SSA values: each write of a var makes a new value, each read takes the latest.
Vars read before any op writes them are inputs (gradc.pir.export_inputs): persistable ones become builtin.parameter,
the others pd_op.data. Constants that legacy ops hold as attributes become pd_op.full_int_array / pd_op.full
operands. Control flow and its gradients become regions (gradc.pir.export_control, export_grads).
"""

from __future__ import annotations

import warnings

from ..errors import GradcNotice, ProgramError, op_location
from ..ir import EMPTY_VAR, OpDesc, Program, VarType
from ..ir import Block as LegacyBlock
from ..registry import OPS
from . import schema
from .dist import op_dist_attr_of
from .export_checks import check_exportable
from .export_control import copied_before_overwrite, in_place_target
from .export_grads import plan_saves
from .export_inputs import TENSOR_KINDS, InputsExport
from .export_special import SPECIAL_EXPORTS, encode_attr_value
from .graph import Attr, Block, Module, Op, TensorType, Value, VectorType
from .naming import training_names
from .table.hooks import dense_weight_grad
from .table.quant_rows import UNNAMED_STATE_TYPES
from .table.rows import EXPORTS

# results a legacy program may leave out but Paddle's PIR op always has
_MISSING_RESULT_TYPES = {("pd_op.batch_norm_", "reserve_space"): TensorType("t_dtensor", VarType.UINT8, (-1,)),
                         ("pd_op.hsigmoid_loss", "w_out"): TensorType("t_dtensor", VarType.FP32, ()),
                         **UNNAMED_STATE_TYPES}


def _writes_dense(row) -> bool:
    """Whether the row's PIR op writes dense results where a legacy program declares SelectedRows: a sparse
    embedding's weight grad (its row drops is_sparse), and nce's and hsigmoid's (their rows' ``back``)."""
    return row.pir == "pd_op.embedding_grad" or row.back is dense_weight_grad


def to_module(program: Program, fetch: list[str] | tuple = (), training_outputs: bool = True) -> Module:
    return Exporter(program).run(fetch, training_outputs)


def _note_dense_sparse_grads(block: LegacyBlock) -> None:
    """Say which SelectedRows gradients an optimizer reads that the PIR file holds dense (as Paddle's PIR backward
    writes an Embedding(sparse=True)'s): lazy Adam, and the other sparse update rules, then see every row."""
    dense = sorted(op.input("Param")[0] for op in block.ops if op.type != "sgd"   # its sparse rule is the dense one
                   and op.inputs.get("Grad") and op.inputs.get("Param")
                   and getattr(block.find_var(op.input("Grad")[0]), "type", None) == VarType.SELECTED_ROWS)
    if dense:
        warnings.warn(f"PIR holds the sparse (SelectedRows) gradients of {', '.join(dense)} dense, as Paddle's PIR "
                      f"backward writes them: their optimizer updates every row (lazy_mode included), not the rows "
                      f"a batch touches; a .pb keeps them sparse", GradcNotice, stacklevel=2)


class Exporter(InputsExport):
    def __init__(self, program: Program):
        self.program = program
        self.block: LegacyBlock = program.global_block
        self.body = Block()
        self.target = self.body                     # where emit() puts ops
        self.current: dict[str, Value] = {}
        self.xshape_source: dict[str, Value] = {}   # an XShape var -> the value of the X it describes
        self.saves = plan_saves(program)            # forward block -> the names its grad block reads of it
        self.stacks: dict[int, tuple] = {}          # forward block -> its cf stack (stack, inlet, outlet)
        self.where = ""
        self.exporting: LegacyBlock = self.block     # the legacy block being exported
        self.last_read: dict[str, int] = {}          # its vars -> the index of their last reader
        self.index = -1                              # the current op's index in it
        self.fetched_at_end: set[str] = set()

    def run(self, fetch, training_outputs: bool = True) -> Module:
        """``training_outputs``: fetch the loss and gradients too (not in an inference model that keeps backward
        ops for a fetched derivative: its outputs are its fetch ops)."""
        check_exportable(self.program)
        _note_dense_sparse_grads(self.block)
        self._inputs()
        trained = training_names(self.program) if training_outputs else []
        self.fetched_at_end = {*fetch, *trained}
        self.export_block(self.block, self.body)
        self._keep_made_persistables()
        fetched = [name for op in self.block.ops if op.type == "fetch" for name in op.input("X")]
        kept = [name for name in trained if name not in fetched and name not in fetch]
        for col, name in enumerate([*fetch, *kept], start=len(fetched)):
            self.where = f"fetch target '{name}'"
            self.append_fetch(name, col)
        return Module(self.body, schema.WRITE_VERSION, True)

    def fail(self, message: str) -> ProgramError:
        return ProgramError(f"cannot write as PIR: {self.where}: {message}")

    def export_block(self, legacy: LegacyBlock, target: Block) -> None:
        """The ops of a legacy block into a PIR block (the program's body or a region's block)."""
        outer, self.target = (self.target, self.exporting, self.last_read, self.index), target
        self.exporting = legacy
        self.last_read = {name: i for i, op in enumerate(legacy.ops) for name in op.input_names()}
        for self.index, op in enumerate(legacy.ops):
            self.where = op_location(legacy.idx, self.index, op.type)
            exporter = SPECIAL_EXPORTS.get(op.type)
            if exporter is not None:
                exporter(op, self)
            else:
                self.generic(_pick_row(op, self), op)
        self.target, self.exporting, self.last_read, self.index = outer

    # ------------------------------------------------------------ values
    def var(self, name: str):
        """A var of any block (sub-block vars have unique names in the programs gradc writes)."""
        for block in self.program.blocks:
            if name in block.vars:
                return block.vars[name]
        return None

    def type_of(self, name: str):
        var = self.var(name)
        if var is None:
            raise self.fail(f"no var named '{name}'")
        kind = TENSOR_KINDS.get(var.type)
        if kind is None or var.dtype not in schema.ELEMENT_TYPE_NAMES:
            raise self.fail(f"var '{name}' is not a tensor of a dtype PIR has (type {var.type}, dtype {var.dtype})")
        return TensorType(kind, int(var.dtype), tuple(var.shape or ()), dist=var.dist)

    def new_value(self, name: str) -> Value:
        var = self.var(name)
        return Value(0, self.type_of(name), stop_gradient=bool(var.stop_gradient), persistable=bool(var.persistable))

    def read(self, name: str) -> Value:
        value = self.current.get(name)
        if value is None and getattr(self.var(name), "type", None) == VarType.DENSE_TENSOR_ARRAY:
            return in_place_target(self, name)   # an array read before its first write (a list's length): empty
        if value is None:
            raise self.fail(f"reads var '{name}', which nothing wrote before")
        return value

    def emit(self, name: str, operands: list, results: list[Value], attrs: dict) -> Op:
        op = Op(name, operands, results, attrs)
        for index, value in enumerate(results):
            value.op, value.index = op, index
        self.target.ops.append(op)
        return op

    def constant(self, fold: str, value) -> Value:
        """The pd_op.full_int_array / pd_op.full that Paddle makes for an attribute-like operand."""
        cpu = Attr("a_place", list(schema.PLACE_CPU))
        if fold == "ints":
            values = [int(v) for v in (value if isinstance(value, (list, tuple)) else [value])]
            result = Value(0, TensorType("t_dtensor", VarType.INT64, (len(values),)), stop_gradient=True)
            self.emit("pd_op.full_int_array", [], [result], {
                "value": Attr("a_array", [Attr("a_i64", v) for v in values]), "dtype": Attr("a_dtype", "int64"),
                "place": cpu})
            return result
        dtype = {"int": "int32", "long": "int64", "float": "float32", "double": "float64"}.get(fold, fold)  # or dtype
        number = value[0] if isinstance(value, (list, tuple)) else value
        result = Value(0, TensorType("t_dtensor", schema.DTYPE_NAMES[dtype], (1,)), stop_gradient=True)
        self.emit("pd_op.full", [], [result], {"shape": Attr("a_intarray", [1]), "value": Attr("a_f64", float(number)),
                                               "dtype": Attr("a_dtype", dtype), "place": cpu})
        return result

    def attribute_operand(self, op: OpDesc, attr: str, fold: str, value) -> Value:
        """A legacy attribute PIR takes as an operand: its var(s) where it is tensor-valued, else a constant."""
        if fold == "value":   # Paddle's full_with_tensor reads its value as a tensor of its output's dtype
            fold = schema.DTYPE_BY_VARTYPE.get(op.attrs.get("dtype"), "float32")
        if attr not in op.var_attrs:
            return self.constant(fold, value)
        return self.read(value) if isinstance(value, str) else self.combine([self.read(n) for n in value])

    def combine(self, values: list[Value]) -> Value:
        result = Value(0, VectorType(tuple(v.type for v in values)))
        self.emit("builtin.combine", values, [result], {})
        return result

    def append_fetch(self, name: str, col: int) -> None:
        source = self.read(name)
        result = Value(0, source.type, stop_gradient=source.stop_gradient, persistable=True)
        self.emit("pd_op.fetch", [source], [result], {"name": Attr("a_str", name), "col": Attr("a_i32", col)})

    # ------------------------------------------------------------ ops
    def generic(self, row, op: OpDesc) -> None:
        """One PIR op from one table row: input slots to operands (attributes to constant operands),
        attributes to the row's PIR kinds, output vars to new values."""
        if row.back is not None:
            op = row.back(op, self)
        legacy_attrs = {**OPS[op.type].attrs, **op.attrs} if op.type in OPS else dict(op.attrs)
        for name, value in row.fixed.items():
            if legacy_attrs.get(name, value) != value:
                raise self.fail(f"attribute {name}={legacy_attrs[name]!r} has no {row.pir} counterpart")
        operands = copied_before_overwrite(self, row, op, self._operands(row, op, legacy_attrs))
        pir_only = op.attrs if row.back is not None else {}   # what a ``back`` hook set under a PIR-only name
        attrs = {spec.name: encode_attr_value(spec.kind, pir_only.get(spec.name, spec.default) if spec.legacy is None
                                              else legacy_attrs.get(spec.legacy, spec.default), self)
                 for spec in row.attrs} | op_dist_attr_of(op)
        for slot in row.extra_outputs:   # remember which value an XShape describes before X is rewritten
            if op.output(slot) and op.input("X"):
                self.xshape_source[op.output(slot)[0]] = self.read(op.input("X")[0])
        results, bindings, splits = self._results(row, op)
        self.emit(row.pir, operands, results, attrs)
        self.current.update(bindings)
        for value, names in splits:
            parts = [Value(0, None) if n == EMPTY_VAR else self.new_value(n) for n in names]
            self.emit("builtin.split", [value], parts, {})
            self.current.update((n, part) for n, part in zip(names, parts) if n != EMPTY_VAR)

    def _operands(self, row, op: OpDesc, legacy_attrs: dict) -> list:
        operands, consumed = [], set(row.dropped_inputs)
        for spec in row.operands:
            if spec.attr is not None:
                computed = self._computed_operand(spec, op)
                if computed is not None:
                    operands.append(computed)
                    consumed.update(spec.tensor_slots)
                    continue
                if spec.attr not in legacy_attrs:
                    raise self.fail(f"has no attribute '{spec.attr}', which {row.pir} takes as operand '{spec.name}'")
                operands.append(self.attribute_operand(op, spec.attr, spec.fold, legacy_attrs[spec.attr]))
                continue
            names = [n for n in op.input(spec.slot) if n != EMPTY_VAR] if spec.slot else []
            consumed.add(spec.slot)
            target = next((r for r in row.results if r.inplace == spec.name), None) if spec.slot is None else None
            if target is not None:   # PIR writes into this operand; the legacy op only names its output
                operands.append(in_place_target(self, op.output(target.slot)[0]))
            elif not names:
                if spec.slot is not None and not spec.optional:
                    raise self.fail(f"input slot {spec.slot} is empty; {row.pir} needs operand '{spec.name}'")
                operands.append(None)
            elif spec.is_list:
                operands.append(self.combine([self.read(n) for n in names]))
            elif spec.slot == "XShape":
                operands.append(self._xshape_source(names[0]))
            elif len(names) == 1:
                operands.append(self.read(names[0]))
            else:
                raise self.fail(f"input slot {spec.slot} holds {len(names)} vars; {row.pir} takes one")
        _refuse_unmapped_slots(self, op.inputs, consumed, "input")
        return operands

    def _computed_operand(self, spec, op: OpDesc) -> Value | None:
        """The value of a legacy tensor (or tensor list) input that stands for an attribute."""
        for position, slot in enumerate(spec.tensor_slots):
            names = [n for n in op.input(slot) if n != EMPTY_VAR]
            if names:
                return self.combine([self.read(n) for n in names]) if position == 1 else self.read(names[0])
        return None

    def _results(self, row, op: OpDesc) -> tuple[list, dict, list]:
        """The op's result values, the vars they become, and the lists a builtin.split takes apart."""
        results, bindings, splits = [], {}, []
        for spec in row.results:
            if spec.is_list and op.output(spec.slot):   # an empty optional list (no master weights) is null
                names = op.output(spec.slot)
                value = Value(0, VectorType(tuple(None if n == EMPTY_VAR else self.type_of(n) for n in names)))
                splits.append((value, names))
            else:
                names = [n for n in op.output(spec.slot) if n != EMPTY_VAR] if spec.slot else []
                if names:
                    value = bindings[names[0]] = self.new_value(names[0])
                    if _writes_dense(row) and value.type.kind == "t_selected_rows":
                        value.type = TensorType("t_dtensor", value.type.dtype, value.type.dims)
                else:   # a grad nobody asked for, or an output legacy programs may leave out
                    value = Value(0, _MISSING_RESULT_TYPES.get((row.pir, spec.name)), stop_gradient=True)
            results.append(value)
        _refuse_unmapped_slots(self, op.outputs, {r.slot for r in row.results} | set(row.extra_outputs), "output")
        return results, bindings, splits

    def _xshape_source(self, name: str) -> Value:
        """PIR grads of reshape-like ops read the forward input where legacy ones read its XShape."""
        if name not in self.xshape_source:
            raise self.fail(f"XShape var '{name}' does not come from an op this program exports")
        return self.xshape_source[name]


def _pick_row(op: OpDesc, exporter: Exporter):
    return next(row for row in EXPORTS[op.type] if row.when is None or row.when(op, exporter))


def _refuse_unmapped_slots(exporter: Exporter, slots: dict, mapped: set, what: str) -> None:
    extra = sorted(slot for slot, args in slots.items() if slot not in mapped and any(a != EMPTY_VAR for a in args))
    if extra:
        raise exporter.fail(f"{what} slot(s) {', '.join(extra)} have no counterpart in gradc's PIR table")
