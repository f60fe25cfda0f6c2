"""Shape/dtype inference: ``infer(ctx) -> {output slot: (shape, dtype) or [(shape, dtype), ...]}``.

Dims are ints, -1 for unknown (a batch dim); the rules over dims live in gradc.shapes. Used by
gradc.layers to declare output vars and by gradc.verify_shapes.check_shapes to catch mismatched programs.
"""

from __future__ import annotations

from .. import registry
from ..errors import ProgramError, op_location
from ..ir import FLOAT_DTYPES, Block, OpDesc, dtype_name
from ..shapes import broadcast_dims, normalize_axis


class InferContext:
    __slots__ = ("op", "block", "op_idx", "reshaped")

    def __init__(self, op: OpDesc, block: Block, op_idx: int = -1, reshaped: dict | None = None):
        self.op = op
        self.block = block
        self.op_idx = op_idx
        self.reshaped = reshaped   # a var an earlier op rewrote in place with another shape: that shape

    def _var(self, slot: str, i: int):
        args = self.op.inputs.get(slot, ())
        if i >= len(args):
            return None
        block = self.block   # most vars are the block's own: a dict lookup before the walk up the ancestors
        return block.vars.get(args[i]) or block.find_var(args[i])

    def has(self, slot: str) -> bool:
        return bool(self.op.input(slot))

    def shape(self, slot: str, i: int = 0) -> list[int] | None:
        args = self.op.inputs.get(slot, ())   # _var inlined: the rules of every op of a program ask for shapes
        if i >= len(args):
            return None
        name, reshaped = args[i], self.reshaped
        if reshaped and name in reshaped:
            return list(reshaped[name])
        block = self.block
        var = block.vars.get(name) or block.find_var(name)
        return None if var is None or var.shape is None else list(var.shape)

    def shapes(self, slot: str) -> list[list[int] | None]:
        return [self.shape(slot, i) for i in range(len(self.op.input(slot)))]

    def dtype(self, slot: str, i: int = 0):
        var = self._var(slot, i)
        return var.dtype if var is not None else None

    def attr(self, name: str):
        attrs = self.op.attrs   # most attributes the rules read are the op's own: the definition's default else
        return attrs[name] if name in attrs else registry.attr_default(self.op, name)

    def var_type(self, slot: str, i: int = 0):
        """The VarType.Type of the slot's var (a sparse op's layout), None when absent."""
        var = self._var(slot, i)
        return var.type if var is not None else None

    def lod_level(self, slot: str, i: int = 0) -> int:
        """The declared lod_level of the slot's var (0 when unset or absent)."""
        var = self._var(slot, i)
        return (var.lod_level or 0) if var is not None else 0

    def axis(self, axis: int, rank: int) -> int:
        """``axis`` of a rank-``rank`` input as an index >= 0; fails naming the op if it is out of range."""
        return normalize_axis(axis, rank, self.fail)

    def fail(self, message: str):
        names = ", ".join(f"{slot}={name}{shape}" for slot, args in self.op.inputs.items()
                          for name, shape in zip(args, self.shapes(slot)))
        raise ProgramError(f"{op_location(self.block.idx, self.op_idx, self.op.type)}: {message} "
                           f"[inputs: {names}]")


def lod_levels(ctx: InferContext) -> dict[str, int]:
    """The lod_level of each output slot as Paddle's compile-time InferShape sets it: the op's own rule
    (OpDef.lod_levels), else ShareLoD: the level of its first input that has one (0: none)."""
    opdef = registry.get(ctx.op.type)
    if opdef is not None and opdef.lod_levels is not None:
        return opdef.lod_levels(ctx)
    shared = next((level for slot, args in ctx.op.inputs.items() for i in range(len(args))
                   if (level := ctx.lod_level(slot, i)) > 0), 0)
    return dict.fromkeys(ctx.op.outputs, shared)


def same_as(slot: str, out: str = "Out"):
    return lambda ctx: {out: (ctx.shape(slot), ctx.dtype(slot))}


def check_float(ctx: InferContext, slot: str) -> None:
    """Fails unless ``slot`` is a float tensor (or of a dtype not declared yet): the op has float kernels only."""
    dtype = ctx.dtype(slot)
    if dtype is not None and dtype not in FLOAT_DTYPES:
        ctx.fail(f"{ctx.op.type} needs a float {slot}, got {dtype_name(dtype)}")


def float_like(slot: str = "X", out: str = "Out"):
    """Inference of an op with float kernels only whose output is shaped and typed like its input ``slot``."""
    def infer(ctx):
        check_float(ctx, slot)
        return same_as(slot, out)(ctx)
    return infer


def one_dtype(ctx: InferContext, *slots: str):
    """The dtype of the operand ``slots[0]``; fails naming the operands if those declared differ in dtype."""
    declared = [(slot, ctx.dtype(slot)) for slot in slots if ctx.dtype(slot) is not None]
    if len({dtype for _, dtype in declared}) > 1:
        names, dtypes = zip(*declared)
        ctx.fail(f"{ctx.op.type} needs {_listed(names)} of one dtype, got {_listed(map(dtype_name, dtypes))}")
    return ctx.dtype(slots[0])


def _listed(words) -> str:
    """"a, b and c"."""
    *rest, last = words
    return f"{', '.join(rest)} and {last}" if rest else last


def broadcast_shapes(ctx: InferContext, x: list[int], y: list[int], axis: int = -1) -> list[int]:
    """Paddle's elementwise broadcast of X and Y, failing with the op's location."""
    return broadcast_dims(x, y, axis, ctx.fail)


def check_choice(ctx: InferContext, name: str, allowed: tuple[str, ...]) -> str:
    """A string attribute that must be one of ``allowed``."""
    value = ctx.attr(name)
    if value not in allowed:
        ctx.fail(f"attribute {name}={value!r} must be one of {', '.join(map(repr, allowed))}")
    return value
