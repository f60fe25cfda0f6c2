"""Shape/dtype inference: ``infer(ctx) -> {output slot: (shape, dtype) or [(shape, dtype), ...]}``.

Dims are ints, -1 for unknown (a batch dim). Used by gradc.layers to declare output vars and by
check_shapes to catch mismatched programs before they run.
"""

from __future__ import annotations

from .. import registry
from ..errors import ProgramError, op_location
from ..ir import Block, OpDesc


class InferContext:
    __slots__ = ("op", "block", "op_idx")

    def __init__(self, op: OpDesc, block: Block, op_idx: int = -1):
        self.op = op
        self.block = block
        self.op_idx = op_idx

    def _var(self, slot: str, i: int):
        args = self.op.input(slot)
        if i >= len(args):
            return None
        return self.block.find_var(args[i])

    def has(self, slot: str) -> bool:
        return bool(self.op.input(slot))

    def shape(self, slot: str, i: int = 0) -> list[int] | None:
        var = self._var(slot, i)
        return list(var.shape) if var is not None and var.shape is not None else None

    def shapes(self, slot: str) -> list[list[int] | None]:
        return [self.shape(slot, i) for i in range(len(self.op.input(slot)))]

    def dtype(self, slot: str, i: int = 0):
        var = self._var(slot, i)
        return var.dtype if var is not None else None

    def attr(self, name: str):
        return registry.attr_default(self.op, name)

    def axis(self, axis: int, rank: int) -> int:
        """``axis`` of a rank-``rank`` input as an index >= 0; fails naming the op if it is out of range."""
        return normalize_axis(axis, rank, self.fail)

    def fail(self, message: str):
        names = ", ".join(f"{slot}={args[0]}{self.shapes(slot)[0]}" for slot, args in self.op.inputs.items() if args)
        raise ProgramError(f"{op_location(self.block.idx, self.op_idx, self.op.type)}: {message} "
                           f"[inputs: {names}]")


def same_as(slot: str, out: str = "Out"):
    return lambda ctx: {out: (ctx.shape(slot), ctx.dtype(slot))}


def numel(dims) -> int:
    """The element count of a shape, -1 if any dim is unknown."""
    total = 1
    for d in dims:
        if d < 0:
            return -1
        total *= d
    return total


def dims_match(a: int, b: int) -> bool:
    return a < 0 or b < 0 or a == b


def raise_value_error(message: str):
    """The ``fail`` of shape helpers called from kernels: the executor reports a ValueError with the op."""
    raise ValueError(message)


def normalize_axis(axis: int, rank: int, fail=raise_value_error) -> int:
    """``axis`` in [-rank, rank) as an index >= 0, else ``fail(message)``. A 0-d tensor takes axis 0 or
    -1, as in Paddle: callers read that as "the whole tensor" (a reduce over it is the identity)."""
    size = max(rank, 1)
    if not -size <= axis < size:
        fail(f"axis {axis} is out of range for rank {rank}")
    return axis % size


def broadcast_shapes(ctx: InferContext, x: list[int], y: list[int], axis: int = -1) -> list[int]:
    """Paddle's elementwise broadcast: Y's dims line up with X's from ``axis`` (-1: trailing)."""
    if len(x) < len(y):
        x, y = y, x
    if len(x) != len(y) and axis != -1 and not 0 <= axis <= len(x) - len(y):
        ctx.fail(f"axis {axis} is out of range for broadcasting {y} against {x}")
    if axis == -1 or len(x) == len(y):
        y = [1] * (len(x) - len(y)) + list(y)
    else:
        y = [1] * axis + list(y) + [1] * (len(x) - axis - len(y))
    out = []
    for a, b in zip(x, y):
        if a == 1:
            out.append(b)
        elif b == 1 or dims_match(a, b):
            out.append(a if a >= 0 else b)
        else:
            ctx.fail(f"cannot broadcast shapes {x} and {y} (axis {axis})")
    return out


def check_shapes(program) -> None:
    """Run every registered inference over the program; raise on the first mismatch."""
    for block in program.blocks:
        for idx, op in enumerate(block.ops):
            opdef = registry.get(op.type)
            if opdef is None or opdef.infer is None:
                continue
            ctx = InferContext(op, block, idx)
            if any(shape is None for slot in op.inputs for shape in ctx.shapes(slot)):
                continue
            for slot, result in opdef.infer(ctx).items():
                results = result if isinstance(result, list) else [result]
                for name, (shape, _) in zip(op.output(slot), results):
                    var = block.find_var(name)
                    if var is None or var.shape is None or shape is None:
                        continue
                    if len(var.shape) != len(shape) or not all(map(dims_match, var.shape, shape)):
                        ctx.fail(f"output '{name}' is declared with shape {var.shape}, "
                                 f"but the inputs give {shape}")
