"""A block's plan, made once per (program revision, fetch set) and run many times: a Step per op (its kernel
resolved, slots bound, each output's declared dtype and destination, the vars it is the last reader of), and the
checks a block passes before its first plan (kernels, slots, attribute types, input shapes)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import registry
from ..errors import ExecutionError, ProgramError, op_location
from ..ir import Block, OpDesc
from ..ops.complex_inputs import declares_complex
from ..verify_shapes import check_complex_inputs, check_inputs
from .context import KernelContext
from .direct import direct_step
from .failures import no_kernel_error
from .feeding import feed_ops
from .kernels import KERNELS
from .liveness import deaths
from .lod import sharing
from .stores import write_spec


class Step:
    """One op of a plan. ``writes``: (slot, [(name, dtype, persistable)]); ``single``: the one
    (slot, name, dtype, persistable) of an op that writes one var (most ops), else None."""

    __slots__ = ("kernel", "ctx", "writes", "single", "fast", "pairs", "frees", "shrinks", "checked", "direct")

    def __init__(self, kernel, ctx: KernelContext, writes: tuple, frees: tuple[str, ...], shrinks: tuple[str, ...],
                 direct=None):
        self.kernel = kernel
        self.ctx = ctx
        self.writes = writes
        self.single = (writes[0][0], *writes[0][1][0]) if len(writes) == 1 and len(writes[0][1]) == 1 else None
        self.frees = frees
        self.shrinks = shrinks   # values only read for their shape from here on: kept as shape stubs
        self.checked = False   # the kernel's result slots were checked against the op's definition
        self.fast = None       # ``single`` once checked: the hot loop's one-value store
        # once checked, for an op of several slots each naming one var (most grad ops): their (slot, name, ...)
        self.pairs = None
        self.direct = direct   # the op's direct step (gradc.executor.direct), if it has one


@dataclass
class Plan:
    revision: int             # the program's revision it was made for
    ops: list[OpDesc]    # and its ops: a plan is reused only for the very same program and ops
    steps: list[Step]

    def __post_init__(self):
        self.rows = [(step.kernel, step.ctx, step, None) for step in self.steps]   # unpacked faster than attributes
        self.feeds = feed_ops(self.ops)
        self.direct_rows = [(step.kernel, step.ctx, step, step.direct) for step in self.steps]
        # the vars direct steps write into the run's own values: a run may use them only if no outer scope has one
        self.direct_outputs = frozenset(name for step in self.steps if step.direct for _, specs in step.writes
                                        for name, _, _ in specs)
        self.runs = 0           # runs that could have used the straight-line code before it was built
        self.straight = None    # the plan as straight-line code (gradc.executor.straight), once it has run enough
        self.makes_lod = False  # whether the block itself can make LoD (gradc.executor.lod.declares_lod)
        self._lod_rows = None

    @property
    def lod_rows(self) -> list:
        """The rows of a run with LoD: each kernel followed by its LoD propagation, no direct steps."""
        if self._lod_rows is None:
            self._lod_rows = [(sharing(step.kernel, step.ctx.op), step.ctx, step, None) for step in self.steps]
        return self._lod_rows


def prepare(block: Block, keep: frozenset[str] | None, executor, checked: bool = False) -> list[Step]:
    """The steps of ``block``'s plan (``keep``: the vars kept to the end of a run; ``checked``: the block has
    passed check_block for another plan of the same ops)."""
    if not checked:
        check_block(block)
    frees, shrinks = deaths(block, keep)
    # a sub-block may write any scope: only a block without them knows where every direct output lives
    direct = not any(True for op in block.ops for _ in op.block_refs())
    steps = []
    for idx, op in enumerate(block.ops):
        opdef = registry.get(op.type)
        ctx = KernelContext(op, block, idx, executor, opdef)
        kept = opdef.kernel_dtype_outputs if opdef is not None else ()
        writes = tuple((slot, [write_spec(block, name, slot not in kept) for name in args])
                       for slot, args in op.outputs.items() if args)
        kernel = KERNELS[op.type]
        steps.append(Step(kernel, ctx, writes, tuple(frees[idx]), tuple(shrinks[idx]),
                          direct_step(kernel, ctx, writes) if direct else None))
    return steps


def check_block(block: Block) -> None:
    """Every op has a kernel, its declared slots, attributes of their types and inputs of shapes it takes."""
    missing = [(i, op.type) for i, op in enumerate(block.ops) if op.type not in KERNELS]
    if missing:
        raise no_kernel_error(block.idx, missing)
    complex_values = declares_complex(block)
    for idx, op in enumerate(block.ops):
        problem = registry.slot_problem(op) or registry.unsupported_setting(op) or registry.attr_type_problem(op)
        if problem:
            raise ExecutionError(f"{op_location(block.idx, idx, op.type)}: {problem}")
        try:
            check_inputs(block, idx, op)
            if complex_values:
                check_complex_inputs(block, idx, op)
        except ProgramError as exc:
            raise ExecutionError(str(exc)) from None
