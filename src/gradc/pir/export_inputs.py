"""How a program's inputs become PIR values (gradc.pir.export's Exporter inherits these methods): the vars of block 0
read before any op writes them, in sub-blocks too. Persistable ones become builtin.parameter, the others pd_op.data
the caller feeds; a var read first only in a slot that holds an op's state (OpDef.state_inputs: shuffle_batch's Seed,
empty before the op's first run) becomes an empty pd_op.full, as Paddle's PIR layers make it. Persistable vars the
program makes rather than updates in place stay in the scope through builtin.set_parameter or builtin.shadow_output.
"""

from __future__ import annotations

from .. import registry
from ..ir import EMPTY_VAR, OpDesc, VarType
from . import schema
from .graph import Attr, TensorType, Value

# not inputs: holders, and tensor arrays a loop fills (created empty where first needed: pd_op.create_array)
HOLDERS = {VarType.FEED_MINIBATCH, VarType.FETCH_LIST, VarType.STEP_SCOPES, VarType.DENSE_TENSOR_ARRAY}
TENSOR_KINDS = {VarType.DENSE_TENSOR: "t_dtensor", VarType.SELECTED_ROWS: "t_selected_rows",
                VarType.DENSE_TENSOR_ARRAY: "t_dense_tensor_array", VarType.SPARSE_COO: "t_sparse_coo_tensor",
                VarType.SPARSE_CSR: "t_sparse_csr_tensor"}


def _state_names(op: OpDesc) -> set[str]:
    opdef = registry.get(op.type)
    return {name for slot in opdef.state_inputs for name in op.inputs.get(slot, ())} if opdef is not None else set()


class InputsExport:
    """The exporter's inputs (it provides program, block, current, where, emit and new_value)."""

    def _inputs(self) -> None:
        """Parameters (persistable) first, then the others, in first-read order."""
        written, state_only = set(), {}   # each input: whether every read of it before a write is of a state
        stack = [iter(self.block.ops)]
        while stack:
            op = next(stack[-1], None)
            if op is None:
                stack.pop()
                continue
            states = _state_names(op)
            for name in op.input_names():
                if name not in written and name != EMPTY_VAR and name in self.block.vars:
                    state_only[name] = state_only.get(name, True) and name in states
            stack += [iter(self.program.blocks[sub].ops) for sub in reversed(self.program.blocks_run_by(op))]
            written.update(op.output_names())
        names = [n for n in state_only if self.block.find_var(n) is None or self.block.find_var(n).type not in HOLDERS]
        params = [n for n in names if self.block.find_var(n) is not None and self.block.find_var(n).persistable]
        for name in params:
            self.where = f"parameter '{name}'"
            self.current[name] = self.parameter(name)
        # Paddle's Predictor orders a PIR model's inputs by its data ops, a legacy one's by the feed ops' col
        fed = sorted((op for op in self.block.ops if op.type == "feed"), key=lambda op: int(op.attrs.get("col", 0)))
        for name in [op.output("Out")[0] for op in fed]:
            self.where = f"input '{name}'"
            self.current[name] = self.data(name)
        for name in names:
            if name not in self.current:
                self.where = f"input '{name}'"
                self.current[name] = self.empty_state(name) if state_only[name] else self.data(name)
        self.inputs = set(self.current)

    def _keep_made_persistables(self) -> None:
        for name, var in self.block.vars.items():
            if var.persistable and name in self.current and name not in self.inputs and var.type in TENSOR_KINDS:
                key = "parameter_name" if var.is_parameter else "output_name"
                self.emit("builtin.set_parameter" if var.is_parameter else "builtin.shadow_output",
                          [self.current[name]], [], {key: Attr("a_str", name)})

    def parameter(self, name: str) -> Value:
        var = self.block.find_var(name)
        value = self.new_value(name)
        trainable = bool(var.is_parameter) and not var.stop_gradient
        value.stop_gradient = not trainable
        self.emit("builtin.parameter", [], [value], {
            "is_distributed": Attr("a_bool", False), "is_parameter": Attr("a_bool", True),
            "need_clip": Attr("a_bool", True), "parameter_name": Attr("a_str", name),
            "trainable": Attr("a_bool", trainable)})
        return value

    def data(self, name: str) -> Value:
        value = self.new_value(name)
        self.emit("pd_op.data", [], [value], {
            "name": Attr("a_str", name), "shape": Attr("a_intarray", list(value.type.dims)),
            "dtype": Attr("a_dtype", schema.DTYPE_BY_VARTYPE[value.type.dtype]),
            "place": Attr("a_place", list(schema.PLACE_UNDEFINED))})
        return value

    def empty_state(self, name: str) -> Value:
        """An op's state before its first run: an empty tensor of the var's dtype."""
        value = self.new_value(name)
        value.type = TensorType(value.type.kind, value.type.dtype, (0,))
        self.emit("pd_op.full", [], [value], {
            "shape": Attr("a_intarray", [0]), "value": Attr("a_f64", 0.0),
            "dtype": Attr("a_dtype", schema.DTYPE_BY_VARTYPE[value.type.dtype]),
            "place": Attr("a_place", list(schema.PLACE_CPU))})
        return value
