"""Which ops to differentiate: those on a path from a differentiable var to the loss.

Two linear sweeps over the block: backward from the loss (what the loss depends on) and
forward from the differentiable leaves (what depends on something that wants a gradient).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from typing import NamedTuple

from .. import registry
from ..errors import GradError
from ..ir import COMPLEX_DTYPES, DIFFERENTIABLE_DTYPES, Block, OpDesc


@dataclass
class OpPath:
    op_indices: list[int]   # forward ops to differentiate, in program order
    wants_grad: set[str]    # vars whose gradient is computed
    no_grad: set[str] = field(default_factory=set)   # the user's no-grad set, for sub-blocks
    sub_paths: dict = field(default_factory=dict)    # sub-block paths found so far, shared by a whole pass
    carrying: dict[str, bool] = field(default_factory=dict)   # var -> whether its value at the end depends on a leaf
    # an op a leaf's value reaches writes a first output that takes no gradient: as Paddle marks a frozen layer's
    stops: bool = False
    # whether an op writes a name it or an earlier op used (Versions.rewritten for a path over a whole block), or None
    # (leaves given: a sub-block's)
    rewrites: bool | None = None
    # wants_grad's names in the order the reverse sweep met them (again where met again), the order emit reads them in
    met: list[str] = field(default_factory=list)

    def __contains__(self, name: str) -> bool:
        return name in self.wants_grad


def is_differentiable_var(block: Block, name: str, no_grad: set[str]) -> bool:
    var = block.find_var(name)
    return (var is not None and name not in no_grad and not var.stop_gradient
            and var.dtype in DIFFERENTIABLE_DTYPES)


class _DifferentiableVars(dict):
    """name -> is_differentiable_var: the block's own vars in one sweep, others (an enclosing block's) when asked."""

    def __init__(self, block: Block, no_grad: set[str]):
        super().__init__({name: name not in no_grad and not var.stop_gradient and var.dtype in DIFFERENTIABLE_DTYPES
                          for name, var in block.vars.items()})
        self.block, self.no_grad = block, no_grad

    def __missing__(self, name: str) -> bool:
        result = self[name] = is_differentiable_var(self.block, name, self.no_grad)
        return result


class _TypeFacts(NamedTuple):
    """What the path needs of an op type, looked up once per type rather than once per op."""

    skip: frozenset[str]   # input slots that never get a gradient
    has_grad: bool         # False: NO_GRAD, no gradient flows through the op
    overwrites: bool       # it replaces the values of all its outputs
    control: bool          # it runs a sub-block and is no grad op: its path goes through the block


def _type_facts(type: str) -> _TypeFacts:
    opdef = registry.get(type)
    if opdef is None:
        return _TypeFacts(frozenset(), True, True, False)
    return _TypeFacts(opdef.no_grad_inputs, opdef.grad is not registry.NO_GRAD,
                      not (opdef.partial_write or opdef.sub_block_attr),
                      opdef.sub_block_attr is not None and not opdef.grad_op_of)


class _Facts(dict):
    """op type -> its _TypeFacts as a plain tuple, each type asked once: find_path unpacks them per op, which a
    NamedTuple's field reads cost more than."""

    def __missing__(self, type: str) -> tuple[frozenset[str], bool, bool, bool]:
        facts = self[type] = tuple(_type_facts(type))
        return facts


def find_path(block: Block, ops: list[OpDesc], targets: set[str], no_grad: set[str],
              leaves: set[str] | None = None, sub_paths: dict | None = None,
              inputs: frozenset[str] = frozenset()) -> OpPath:
    """Ops among ``ops`` (the block's ops up to the loss) on a path from a leaf to ``targets``.
    Leaves are the differentiable vars read before any op writes them, unless given (a sub-block:
    the outer vars that want a gradient). A name an op overwrites starts a new value: it depends on
    a leaf only if that op carries one, or if it is one of ``inputs`` (gradients()' inputs, where Paddle's path
    starts: a mask computed from constants alone)."""
    sub_paths = {} if sub_paths is None else sub_paths
    differentiable = _DifferentiableVars(block, no_grad)
    facts_of = _Facts()
    op_facts = [facts_of[op.type] for op in ops]
    # an op's one output slot Out (most ops) is read as it is, found by a lookup rather than through a view and its
    # iterator (find_path changes no list of names); the others' names listed
    outputs_of = [op.outputs["Out"] if len(op.outputs) == 1 and "Out" in op.outputs else op.output_names()
                  for op in ops]
    writes = [*chain.from_iterable(outputs_of)]
    written = set(writes)
    carrying = _Carrying(differentiable, leaves, written, writes)
    carried_inputs = []   # per op: its differentiable inputs that carry when it runs
    stops = False
    # per op, plain loops: no comprehension (a frame of its own in Python 3.11), no filter objects for an op's few names
    is_carrying, is_differentiable, keep = carrying.__getitem__, differentiable.__getitem__, carrying.setdefault
    for op, outputs, (skip, has_grad, overwrites, _) in zip(ops, outputs_of, op_facts):
        carried = []
        if skip:
            for slot, args in op.inputs.items():
                if slot not in skip:
                    carried += filter(is_carrying, args)
                else:   # read, not looked up: a name not written yet that an op writes is read first all the same
                    carrying.read_first = carrying.read_first or any(
                        name in written and name not in carrying for name in args)
        else:
            for args in op.inputs.values():
                for name in args:
                    if carrying[name]:
                        carried.append(name)
        if op.var_attrs:   # read by its attributes, not looked up: as a slot that gets no gradient
            carrying.read_first = carrying.read_first or any(
                name in written and name not in carrying for name in op.attr_var_names())
        if not has_grad:   # read all the same: a leaf's first read counts
            carried = []
        carried_inputs.append(carried)
        if overwrites and carried:
            taken = True
            for name in outputs:
                carrying[name] = taken = is_differentiable(name)
            if not taken:   # its (last) output takes no gradient though a leaf's value reaches it
                stops = True
        elif overwrites:
            for name in outputs:
                carrying[name] = is_differentiable(name) if name in inputs else False
        else:
            if carried and outputs and not is_differentiable(outputs[-1]):
                stops = True
            for name in outputs:
                if (carried or name in inputs) and is_differentiable(name):
                    carrying[name] = True
                else:
                    keep(name, False)

    needed = set(targets)   # vars whose current value's gradient reaches the targets
    wants = targets & leaves if leaves else set()   # a block that may not run passes their grads through
    # a name enters needed differentiable, unless a target or a given leaf is not: then outputs are checked
    checked = all(map(is_differentiable, targets | (leaves or set())))
    # an op's outputs are needed, so targets or inputs of a later op on the path, which wants has: only a target is new
    fresh = set(targets) - wants
    on_path, met = [], []
    for idx, inputs, all_outputs, (_, _, overwrites, control) in zip(range(len(ops) - 1, -1, -1),
                                                                     reversed(carried_inputs), reversed(outputs_of),
                                                                     reversed(op_facts)):
        if len(all_outputs) == 1:   # most ops: one output, tested without filter's objects
            outputs = all_outputs if all_outputs[0] in needed else ()
            if overwrites:   # discard: difference_update rebuilds the set whenever a quarter of it is removed names
                needed.discard(all_outputs[0])
        else:
            outputs = list(filter(needed.__contains__, all_outputs))
            if overwrites:
                needed.difference_update(all_outputs)
        if outputs and not checked:
            outputs = list(filter(is_differentiable, outputs))
        if inputs and outputs:
            if control and registry.sub_block(ops[idx]) is not None:   # only what its body uses
                inner = sub_block_path(block.program, ops[idx], set(outputs), set(inputs), no_grad, sub_paths)[0]
                inputs = [name for name in inputs if name in inner.wants_grad]
            if inputs:
                needed.update(inputs)
                if fresh and not fresh.isdisjoint(outputs):
                    wants.update(outputs, inputs)
                    fresh.difference_update(outputs)
                    met += outputs
                else:
                    wants.update(inputs)
                met += inputs
                on_path.append(idx)
    on_path.reverse()
    rewrites = None if leaves is not None else carrying.read_first or len(written) < len(writes)
    return OpPath(on_path, wants, no_grad, sub_paths, carrying, stops, rewrites, met)


class _Carrying(dict):
    """name -> whether its current value depends on a leaf, as a sweep over the ops goes. Without ``leaves`` given,
    every differentiable var counts until an op writes it (a leaf if read first); a name an op writes is only entered
    when first read or written, as is a var of an enclosing block, so that a write alone leaves it carrying nothing
    (a partial write, a control-flow op), and a read before an op writes it (``read_first``) shows."""

    def __init__(self, differentiable: _DifferentiableVars, leaves: set[str] | None, written: set[str],
                 writes: list[str]):
        self.read_first = False   # whether a name some op writes was read before its first write (or by that op)
        if leaves is not None:
            super().__init__(dict.fromkeys(leaves, True))
            self.first_read, self.written = None, frozenset()
            return
        super().__init__(differentiable)
        pop = self.pop
        for name in writes:   # in program order, near the order of the copy's entries; a set's order is its hashes'
            pop(name, None)
        self.first_read, self.written = differentiable, written

    def __missing__(self, name: str) -> bool:
        if name in self.written:
            self.read_first = True
        result = self[name] = self.first_read is not None and self.first_read[name]
        return result


def sub_block_path(program, op: OpDesc, targets: set[str], leaves: set[str], no_grad: set[str],
                   sub_paths: dict) -> tuple[OpPath, set[str]]:
    """The path through a control-flow op's sub-block from ``leaves`` (outer vars it reads) to
    ``targets`` (vars it writes whose grads are not zero); returns it with the targets, which in a
    loop grow by the loop vars needed at the start of an iteration (so at the end of the previous one)."""
    key = (id(op), frozenset(targets), frozenset(leaves))   # computed once, here or by the backward of op
    if key not in sub_paths:
        body = program.blocks[registry.sub_block(op)]
        path = find_path(body, body.ops, targets, no_grad, leaves, sub_paths)
        outputs = set(op.output_names())
        loop_vars = outputs & set(op.input_names()) if registry.get(op.type).loop_carried else set()
        # a loop var the body writes from a leaf is one at the next iteration's start too: DIEN's state array, read
        # before the write of an iteration, carried the gradient of none of the steps before
        while loop_vars:
            more = (path.wants_grad & outputs) - targets
            fed = {name for name in loop_vars if path.carrying.get(name)} - leaves
            if not more and not fed:
                break
            targets, leaves = targets | more, leaves | fed
            path = find_path(body, body.ops, targets, no_grad, leaves, sub_paths)
        sub_paths[key] = path, targets
    return sub_paths[key]


# Op types whose grads follow Paddle's convention on complex values (z@GRAD = dL/dRe + i dL/dIm), each checked
# along both axes of its complex inputs (tests/gradcheck_cases/complex_fft.py); the others differentiate real vars only.
COMPLEX_DIFFERENTIABLE = frozenset({
    "complex", "real", "imag", "angle", "as_complex", "as_real", "abs", "conj", "fft_c2c", "fft_r2c", "fft_c2r",
    "complex_grad", "real_grad", "imag_grad", "angle_grad", "abs_grad", "fft_c2c_grad", "fft_r2c_grad", "fft_c2r_grad",
    "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "scale", "sum", "mean", "reduce_sum",
    "reduce_mean", "transpose2", "reshape2", "squeeze2", "unsqueeze2", "concat", "split", "slice", "assign",
    "roll", "pad", "set_value", "cast", "matmul_v2", "kron", "trace", "eig_grad",
    # grad ops linear in dOut with real coefficients (moves, sums, picks): their makers apply the forward op to ddX
    "elementwise_add_grad", "elementwise_sub_grad", "mean_grad", "reduce_sum_grad", "reduce_mean_grad",
    "transpose2_grad", "reshape2_grad", "squeeze2_grad", "unsqueeze2_grad", "concat_grad", "slice_grad", "pad_grad",
    "roll_grad", "trace_grad", "set_value_grad",
    # bilinear grad ops (dX = dOut conj(Y), ...): their makers' forward ops on ddX, ddY conjugate as the first order
    "elementwise_mul_grad", "matmul_v2_grad", "kron_grad",
    # the quotient rule with the kernel's conjugates, differentiated as a whole
    "elementwise_div_grad",
    # holomorphic unary math: dOut conj(f'(z)), and their grad ops (gradc.ops.activation_double's complex branch)
    "exp", "log", "sqrt", "square", "sin", "cos", "tanh", "sigmoid", "silu",
    "exp_grad", "log_grad", "sqrt_grad", "square_grad", "sin_grad", "cos_grad", "tanh_grad", "sigmoid_grad",
    "silu_grad",
    # not holomorphic: the gradient of Re(conj(dOut) f(z)); its grad op differentiated as written with complex ops
    "softsign", "softsign_grad",
    # polynomials whose grad kernels conjugate (cumprod's as Paddle's); at a complex X their grads' makers take exact
    # tangents (gradc.ops.product_directions)
    "cumprod", "cumprod_grad", "reduce_prod", "reduce_prod_grad",
    # the exact tangents themselves, along any number of directions: each order that op along one more
    # (gradc.ops.directional_double)
    "cumprod_grad_grad", "reduce_prod_grad_grad",
})


def check_complex(block: Block, path: OpPath) -> None:
    """Every op on the path that reads a complex var is one whose grad handles complex values, else one error
    listing all that are not. Also a complex input that wants no grad counts: the grad of a real W in W @ z needs
    conj(z), which the real grad kernels do not take."""
    dtypes = {var.dtype for each in block.program.blocks for var in each.vars.values()}
    if COMPLEX_DTYPES.isdisjoint(dtypes):   # one sweep of the vars: most programs stop here
        return
    complex_vars = {name for each in block.program.blocks for name, var in each.vars.items()
                    if var.dtype in COMPLEX_DTYPES}
    offenders = []
    for i in path.op_indices:
        op = block.ops[i]
        if op.type in COMPLEX_DIFFERENTIABLE:
            continue
        names = [name for name in op.input_names() if name in complex_vars]
        if names:
            offenders.append(f"block {block.idx}, op {i} ({op.type}) reads complex {', '.join(names)}")
    if offenders:
        raise GradError(f"{len(offenders)} op(s) on the path to the loss have no gradient of complex values in gradc: "
                        + "; ".join(offenders))


def check_makers(block: Block, path: OpPath) -> None:
    """Every op on the path has a grad maker; else one error listing all that lack one."""
    ops = block.ops
    types = {ops[idx].type for idx in path.op_indices}   # asked once a type
    if all(getattr(registry.get(type), "grad", None) is not None for type in types):
        return
    raise registry.missing_grad_error([(block.idx, i, block.ops[i].type) for i in path.op_indices
                                       if getattr(registry.get(block.ops[i].type), "grad", None) is None])
