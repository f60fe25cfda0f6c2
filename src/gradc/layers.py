"""Build forward programs from Python with Paddle's names (fc_0.w_0, fc_0.tmp_1, ...).

    net = ProgramBuilder()
    x = net.data("x", [-1, 16])
    label = net.data("label", [-1, 1], "int64")
    hidden = net.fc(x, 32, act="relu")
    loss = net.cross_entropy_loss(net.fc(hidden, 10), label)
    net.program, net.startup   # the forward program and the parameter initialiser

Output vars are declared through each op's registered shape inference.
"""

from __future__ import annotations

from collections import defaultdict

from . import registry
from .errors import ProgramError, op_location
from .ir import DIFFERENTIABLE_DTYPES, Program, dtype_fits, dtype_name, to_var_type
from .ops.infer import InferContext, lod_levels
from .shapes import dims_match
from .verify_shapes import check_complex_inputs


class ProgramBuilder:
    def __init__(self, seed: int = 0, program: Program | None = None):
        """``program``: append to it (a loaded program: a PINN's residual after ``gradients()``) instead of a new
        one; a name it has already is not given again."""
        self.program = Program() if program is None else program
        self.startup = Program()
        self.block = self.program.global_block
        self.seed = seed
        self._counters: dict[str, int] = defaultdict(int)

    def unique(self, prefix: str) -> int:
        count = self._counters[prefix]
        self._counters[prefix] += 1
        return count

    def _free_stem(self, prefix: str, first: str) -> str:
        """``{prefix}_{n}`` for the next n whose first var (``first``, the stem's suffix) the program has not."""
        while True:
            stem = f"{prefix}_{self.unique(prefix)}"
            if stem + first not in self.block.vars:
                return stem

    def data(self, name: str, shape, dtype="float32", stop_gradient: bool | None = None, lod_level: int = 0) -> str:
        """A fed input; ``lod_level`` > 0: fed sequences (a gradc.executor.LoDTensor), as paddle.static.data."""
        var = self.block.create_var(name, shape, to_var_type(dtype), need_check_feed=True,
                                    lod_level=lod_level or None)
        var.stop_gradient = True if var.dtype not in DIFFERENTIABLE_DTYPES else stop_gradient
        return name

    def parameter(self, name: str, shape, dtype="float32", init: str = "uniform", scale: float = 0.1) -> str:
        """A persistable parameter, initialised by the startup program."""
        self.block.create_var(name, shape, to_var_type(dtype), persistable=True, is_parameter=True,
                              stop_gradient=False)
        self.startup.global_block.create_var(name, shape, to_var_type(dtype), persistable=True)
        attrs = {"shape": list(shape), "dtype": to_var_type(dtype), "seed": self.seed + self.unique("seed") + 1}
        if init == "uniform":
            self.startup.global_block.append_op("uniform_random", {}, {"Out": [name]},
                                                {**attrs, "min": -scale, "max": scale})
        elif init == "zeros":
            self.startup.global_block.append_op("fill_constant", {}, {"Out": [name]},
                                                {"shape": list(shape), "dtype": to_var_type(dtype), "value": 0.0})
        else:
            raise ValueError(f"unknown initialiser '{init}'")
        return name

    def op(self, type: str, inputs: dict, attrs: dict | None = None, prefix: str | None = None,
           outputs=None, names: list[str] | None = None) -> list[str]:
        """Append an op whose output vars are declared from its shape inference, named ``names``
        or ``{prefix}_{n}.tmp_{k}``; returns the names of the first output slot (or of ``outputs``)."""
        opdef = registry.get(type)
        if opdef is None or opdef.infer is None:
            raise ProgramError(f"op '{type}' has no shape inference; declare its outputs by hand")
        inputs = {slot: [v] if isinstance(v, str) else list(v) for slot, v in inputs.items()}
        op = self.block.append_op(type, inputs, {}, attrs)
        ctx = InferContext(op, self.block, len(self.block.ops) - 1)
        try:
            inferred = opdef.infer(ctx)
        except Exception as exc:   # the op goes again: the program stays as it was
            self.block.ops.pop()
            unshaped = next((slot for slot in inputs if None in ctx.shapes(slot)), None)
            if isinstance(exc, ProgramError) or unshaped is None:
                raise
            where = op_location(self.block.idx, ctx.op_idx, type)
            raise ProgramError(f"{where}: the shape of {unshaped} is unknown (its var is declared without one), "
                               f"and its outputs' shapes are inferred from it") from None
        check_complex_inputs(self.block, ctx.op_idx, op)
        stem = self._free_stem(prefix or type, ".tmp_0")
        tmp = 0
        for slot, result in inferred.items():
            results = result if isinstance(result, list) else [result]
            op.outputs[slot] = []
            for shape, dtype in results:
                name = names[tmp] if names else f"{stem}.tmp_{tmp}"
                tmp += 1
                if names and name in self.block.vars:   # written in place (paddle.assign(x, output=var)): kept
                    self._check_in_place(op, name, shape, dtype)
                else:
                    self.block.create_var(name, shape, dtype)
                op.outputs[slot].append(name)
        for slot, level in lod_levels(ctx).items():   # sequences (gradc.executor.lod) only: others stay unset
            for name in op.outputs.get(slot, []) if level > 0 else ():
                self.block.var(name).lod_level = level
        wanted = outputs or [opdef.outputs[0]]
        return [name for slot in wanted for name in op.outputs[slot]]

    def _check_in_place(self, op, name: str, shape, dtype) -> None:
        """An output named after a declared var (a MoCo key weight, a queue) keeps that var, persistable and all,
        when the op's result fits it; otherwise the op goes again and the error names both."""
        var = self.block.vars[name]
        differs = var.shape is not None and shape is not None and (
            len(var.shape) != len(shape) or not all(map(dims_match, var.shape, shape)))
        if not dtype_fits(var.dtype, dtype) or differs:
            self.block.ops.pop()
            raise ProgramError(f"{op_location(self.block.idx, len(self.block.ops), op.type)}: its output '{name}' "
                               f"is declared {dtype_name(var.dtype)}{list(var.shape or [])}, and the op gives "
                               f"{dtype_name(dtype)}{list(shape or [])}")

    def fc(self, x: str, size: int, act: str | None = None) -> str:
        stem = self._free_stem("fc", ".w_0")
        in_features = self.block.var(x).shape[-1]
        w = self.parameter(f"{stem}.w_0", [in_features, size])
        b = self.parameter(f"{stem}.b_0", [size], init="zeros")
        out = self.op("mul", {"X": x, "Y": w}, names=[f"{stem}.tmp_0"])[0]
        out = self.op("elementwise_add", {"X": out, "Y": b}, {"axis": -1}, names=[f"{stem}.tmp_1"])[0]
        if act:
            out = self.op(act, {"X": out}, names=[f"{stem}.tmp_2"])[0]
        return out

    def mean(self, x: str) -> str:
        return self.op("reduce_mean", {"X": x}, {"reduce_all": True, "dim": []}, prefix="mean")[0]

    def cross_entropy_loss(self, logits: str, label: str) -> str:
        """Mean softmax cross entropy of integer labels, as paddle.nn.functional.cross_entropy."""
        loss = self.op("softmax_with_cross_entropy", {"Logits": logits, "Label": label}, outputs=["Loss"])[0]
        return self.mean(loss)
