"""The PIR graph as read from a file: regions of blocks of ops over SSA values, with decoded types and
attributes. gradc.pir.reader builds it, gradc.pir.translate turns it into a Program, gradc.pir.writer
writes one."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Attr:
    """A PIR attribute: its kind without the dialect prefix ("a_i32", "a_array", ...) and its value
    (a list of Attr for a_array; a list of ints for a_intarray; [dtype name, number] for a_scalar)."""

    kind: str
    value: object

    def plain(self):
        """The value as plain Python data, arrays unwrapped."""
        if self.kind == "a_array":
            return [item.plain() for item in self.value]
        if self.kind == "a_scalar":
            return self.value[1]
        return self.value

    def holds_double(self) -> bool:
        """A double, or an array holding one: Paddle's kernel reads it as a double, not a legacy FLOAT's float32."""
        return self.kind == "a_f64" or (self.kind == "a_array" and any(item.kind == "a_f64" for item in self.value))


@dataclass(frozen=True)
class TensorType:
    """t_dtensor (and the tensor array / selected rows types): element type as a legacy VarType."""

    kind: str
    dtype: int
    dims: tuple[int, ...]
    layout: str = "NCHW"
    lod: tuple = ()
    offset: int = 0
    dist: tuple = ()   # an auto-parallel value (dist_op t_dist_dtensor): (global dims, its tensor_dist JSON text)


@dataclass(frozen=True)
class VectorType:
    """t_vec: the type of a builtin.combine result, a list of tensors."""

    items: tuple


@dataclass(frozen=True)
class OtherType:
    """A type gradc carries but does not compute with (cf stack types, ...)."""

    kind: str
    data: object = None


@dataclass(eq=False)
class Value:
    id: int
    type: object              # TensorType, VectorType, OtherType or None (Paddle's NULL type)
    op: Op | None = None      # the producer; None for a block argument
    index: int = 0
    stop_gradient: bool | None = None
    persistable: bool | None = None

    def __repr__(self) -> str:
        return f"%{self.id}"


@dataclass(eq=False)
class Op:
    name: str                              # "pd_op.matmul", "builtin.parameter", "cf.yield", ...
    operands: list[Value | None] = field(default_factory=list)   # None: Paddle's null value
    results: list[Value] = field(default_factory=list)
    attrs: dict[str, Attr] = field(default_factory=dict)
    regions: list[Region] = field(default_factory=list)
    where: str = ""                        # "region 0, block 0, op 5" for error messages

    def attr(self, name: str, default=None):
        attr = self.attrs.get(name)
        return default if attr is None else attr.plain()


@dataclass(eq=False)
class Block:
    args: list[Value] = field(default_factory=list)
    kwargs: dict[str, Value] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)


@dataclass(eq=False)
class Region:
    blocks: list[Block] = field(default_factory=list)


@dataclass(eq=False)
class Module:
    """A whole file: the top-level region (one block) and the base code it declared."""

    body: Block
    version: int
    trainable: bool


def walk_ops(block: Block):
    """Every op of ``block`` and of the regions nested in it, outer ops before their nested ones;
    iterative, so nesting depth costs no stack."""
    stack = [iter(block.ops)]
    while stack:
        op = next(stack[-1], None)
        if op is None:
            stack.pop()
            continue
        yield op
        for region in reversed(op.regions):
            for inner in reversed(region.blocks):
                stack.append(iter(inner.ops))


def release(module: Module) -> None:
    """Unlink each op from its results (a Value names its op, the op lists its Values: a cycle per op), once no one
    reads the module again: reference counting then frees it, not a full pass of the collector."""
    for op in walk_ops(module.body):
        op.results = []
