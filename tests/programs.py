"""Build small control-flow programs by hand, the way Paddle's cond / while_loop lay them out.

    net = Net()
    x, w = net.data("x", [2, 3]), net.param("w", [3, 3])
    h = net.while_loop(lambda i, h: net.less_than(i, n), lambda i, h: [net.increment(i), net.tanh(net.matmul(h, w))],
                       [i, h])
    loss = net.mean(h)

A cond is two conditional_block ops (pred, not pred) whose branches assign their result to a var of
the parent block, merged by select_input; a while loop's body ends by assigning the new values to the
loop vars and recomputing the condition. Both list as inputs every outer var their blocks read.
"""

from __future__ import annotations

from contextlib import contextmanager

import gradc
from gradc import registry
from gradc.ir import AttrType, VarType
from gradc.ops.infer import InferContext


class Net:
    def __init__(self, dtype: str = "float64"):
        self.program = gradc.Program()
        self.block = self.program.global_block
        self.dtype = gradc.ir.to_var_type(dtype)
        self.count = 0

    # ------------------------------------------------------------------ vars
    def tmp(self, shape, dtype=None, block=None, prefix: str = "tmp") -> str:
        self.count += 1
        name = f"{prefix}_{self.count}"
        (block or self.block).create_var(name, shape, self.dtype if dtype is None else dtype)
        return name

    def scopes(self) -> str:
        """A STEP_SCOPES var: the scopes a control-flow op keeps for its grad op."""
        name = self.tmp(None, prefix="scopes")
        self.block.var(name).type, self.block.var(name).dtype = VarType.STEP_SCOPES, None
        return name

    def data(self, name: str, shape, dtype=None) -> str:
        self.program.global_block.create_var(name, shape, self.dtype if dtype is None else dtype)
        return name

    def param(self, name: str, shape) -> str:
        self.program.global_block.create_var(name, shape, self.dtype, persistable=True, is_parameter=True)
        return name

    def shape(self, name: str) -> list[int]:
        return self.block.var(name).shape

    # ------------------------------------------------------------------ ops
    def op(self, type: str, inputs: dict, attrs: dict | None = None, out: str = "Out") -> str:
        """Append an op whose outputs are declared from its shape inference; returns slot ``out``'s var."""
        inputs = {slot: [v] if isinstance(v, str) else list(v) for slot, v in inputs.items()}
        op = self.block.append_op(type, inputs, {}, attrs)
        for slot, (shape, dtype) in registry.get(type).infer(InferContext(op, self.block)).items():
            op.outputs[slot] = [self.tmp(shape, dtype, prefix=type)]
        return op.outputs[out][0]

    def __getattr__(self, type: str):
        """net.tanh(x), net.elementwise_mul(x, y, axis=-1), ...: ops with slots X (and Y)."""
        if registry.get(type) is None:
            raise AttributeError(type)
        return lambda x, y=None, **attrs: self.op(type, {"X": x, **({"Y": y} if y else {})}, attrs)

    def matmul(self, x: str, y: str) -> str:
        return self.op("matmul_v2", {"X": x, "Y": y})

    def mean(self, x: str) -> str:
        return self.op("reduce_mean", {"X": x}, {"reduce_all": True, "dim": []})

    def constant(self, value, shape=(1,), dtype=VarType.INT64) -> str:
        return self.op("fill_constant", {}, {"shape": list(shape), "value": float(value), "dtype": int(dtype)})

    def copy(self, x: str) -> str:
        return self.op("assign", {"X": x})

    def assign(self, x: str, out: str) -> None:
        self.block.append_op("assign", {"X": [x]}, {"Out": [out]})

    def increment(self, x: str, step: float = 1.0) -> str:
        self.block.append_op("increment", {"X": [x]}, {"Out": [x]}, {"step": step})
        return x

    # ------------------------------------------------------------------ control flow
    @contextmanager
    def sub_block(self):
        outer, self.block = self.block, self.program.append_block(self.block.idx)
        try:
            yield self.block
        finally:
            self.block = outer

    def cond(self, pred: str, true_fn, false_fn) -> str:
        """select_input(pred, true_fn(), false_fn()): each branch runs only when chosen."""
        return self.cond_outputs(pred, lambda: [true_fn()], lambda: [false_fn()])[0]

    def cond_outputs(self, pred: str, true_fn, false_fn) -> list[str]:
        """cond with several results (each fn returns a list, in the same order): one select_input per result."""
        outs, preds = [], [pred, self.logical_not(pred)]
        for branch_pred, fn in zip(preds, (true_fn, false_fn)):
            with self.sub_block() as body:
                results = []
                for result in fn():
                    var = body.var(result)
                    results.append(self.tmp(var.shape, var.dtype, block=self.block.parent))
                    self.assign(result, results[-1])
            op = self.block.append_op("conditional_block", {"Cond": [branch_pred], "Input": _reads(body)},
                                      {"Out": results, "Scope": [self.scopes()]}, {"is_scalar_condition": True})
            op.set_attr("sub_block", body.idx, AttrType.BLOCK)
            outs.append(results)
        mask = self.op("cast", {"X": pred}, {"in_dtype": int(VarType.BOOL), "out_dtype": int(VarType.INT32)})
        return [self.op("select_input", {"X": [false, true], "Mask": mask}) for true, false in zip(*outs)]

    def while_loop(self, cond_fn, body_fn, loop_vars: list[str]) -> list[str]:
        """Run ``loop_vars = body_fn(*loop_vars)`` while ``cond_fn(*loop_vars)``; the loop vars are
        updated in place, as Paddle's while_loop does."""
        condition = cond_fn(*loop_vars)
        with self.sub_block() as body:
            for var, new in zip(loop_vars, body_fn(*loop_vars)):
                if new != var:
                    self.assign(new, var)
            self.assign(cond_fn(*loop_vars), condition)
        op = self.block.append_op("while", {"Condition": [condition], "X": _reads(body)},
                                  {"Out": _writes(body), "StepScopes": [self.scopes()]}, {"is_test": False})
        op.set_attr("sub_block", body.idx, AttrType.BLOCK)
        return loop_vars

    def pylayer(self, forward_fn, inputs: list[str], backward_fn=None) -> list[str]:
        """paddle.static.nn.static_pylayer's layout: a forward block assigning its results to vars of this
        block, and a backward block (forward_block_idx: the forward block) reading ``out@GRAD`` through a copy and
        leaving the grad of input ``x`` in its own var ``x@GRAD``; ``backward_fn`` gets the grads' copies."""
        with self.sub_block() as forward:
            results = forward_fn(*inputs)
            outs = []
            for result in [results] if isinstance(results, str) else results:
                outs.append(self.tmp(forward.var(result).shape, forward.var(result).dtype, block=forward.parent))
                self.assign(result, outs[-1])
        blocks = [forward.idx]
        if backward_fn is not None:
            outer = self.block
            given = [outer.create_var(out + "@GRAD", outer.var(out).shape, outer.var(out).dtype).name for out in outs]
            with self.sub_block() as backward:
                backward.forward_block_idx = forward.idx
                saved = [backward.add_var(var.copy(name)).name for name, var in forward.vars.items()]
                grads = backward_fn(*[self.copy(grad) for grad in given])
                for x, grad in zip(inputs, [grads] if isinstance(grads, str) else grads):
                    backward.create_var(x + "@GRAD", outer.var(x).shape, outer.var(x).dtype)
                    self.assign(grad, x + "@GRAD")
            for block, names in ((outer, given), (backward, saved)):   # Paddle declares them for building only:
                for name in names:                                      # the block reads the forward scope's values
                    del block.vars[name]
            blocks.append(backward.idx)
        op = self.block.append_op("pylayer", {"Input": list(inputs)}, {"Out": outs, "Scope": [self.scopes()]})
        op.set_attr("blocks", blocks, AttrType.BLOCKS)
        return outs


def _tree(block) -> list:
    """The block and every block nested in it, through the ops' sub_block attributes."""
    blocks = [block]
    for op in block.ops:
        if op.attr_types.get("sub_block") == AttrType.BLOCK:
            blocks.extend(_tree(block.program.blocks[op.attrs["sub_block"]]))
    return blocks


def _reads(block) -> list[str]:
    tree = _tree(block)
    local = {name for b in tree for name in b.vars}
    names = [n for b in tree for op in b.ops for n in op.input_names() if n not in local]
    return list(dict.fromkeys(names))


def _writes(block) -> list[str]:
    tree = _tree(block)
    local = {name for b in tree for name in b.vars}
    names = [n for b in tree for op in b.ops for n in op.output_names() if n not in local]
    return list(dict.fromkeys(names))
