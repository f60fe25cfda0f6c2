"""Runs programs with numpy kernels. Each block is prepared once (kernels resolved, attributes
merged with defaults, each var's last use found) so the per-op loop is only calls."""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from weakref import WeakKeyDictionary

import numpy as np

from .. import registry
from ..errors import ExecutionError, GradcError, ProgramError, op_location
from ..ir import EMPTY_VAR, Block, OpDesc, Program, VarType
from ..ir.types import NUMPY_DTYPE_NAMES
from ..verify import check_inputs, check_vars
from .context import KernelContext
from .failures import check_finite, kernel_failure
from .feeding import feed_values
from .kernels import KERNELS, load_all
from .scope import MISSING, Scope, global_scope
from .tensor_array import TensorArray

load_all()


@dataclass
class Step:
    kernel: object
    ctx: KernelContext
    writes: list[tuple[str, list[tuple[str, object, bool]]]]  # (slot, [(name, dtype, persistable)])
    frees: tuple[str, ...]
    checked: bool = False   # the kernel's result slots were checked against the op's definition


@dataclass
class Plan:
    revision: int             # the program's revision it was made for
    op_ids: tuple[int, ...]   # and its ops: a plan is reused only for the very same program and ops
    steps: list[Step]


def referenced_names(program: Program, op: OpDesc) -> set[str]:
    """Names an op touches, including everything its sub-blocks (recursively) touch."""
    names = set(op.input_names()) | set(op.output_names())
    for _, sub in op.block_refs():
        for inner in program.blocks[sub].ops:
            names |= referenced_names(program, inner)
    return names


class Executor:
    def __init__(self):
        # block -> {vars to keep: plan}; weak, so a long-lived executor does not keep programs alive
        self._plans: WeakKeyDictionary[Block, dict[frozenset[str] | None, Plan]] = WeakKeyDictionary()
        self.plans_built = 0   # how many times a block was planned (plans are reused until the program changes)
        self.check_finite = False   # stop at the first op that writes NaN or Inf (gradc train --check-nan)

    # ------------------------------------------------------------------ public
    def run(self, program: Program, feed: Mapping[str, object] | None = None,
            fetch_list: Iterable[str] | None = None, scope: Scope | None = None) -> list[np.ndarray]:
        """Run block 0 of ``program``; return the values of ``fetch_list``.

        Persistable vars (parameters) are written to ``scope`` and survive the run; temporaries
        live in a child scope dropped at the end.
        """
        scope = global_scope() if scope is None else scope
        fetch_list = [fetch_list] if isinstance(fetch_list, str) else list(fetch_list or [])
        block = program.global_block
        local = scope.child()
        feed_values(block, feed or {}, local)
        plan = self._plan(block, keep=frozenset(fetch_list))
        self._execute(plan, local, scope)
        if not fetch_list and "fetch" in local:
            return list(local["fetch"])
        return [self._fetch(local, name) for name in fetch_list]

    def run_block(self, block: Block, scope: Scope, run_scope: Scope) -> None:
        """Run a sub-block in ``scope``; nothing is freed, so grad blocks can read its values."""
        self._execute(self._plan(block, keep=None), scope, run_scope)

    # ------------------------------------------------------------------ fetch
    def _fetch(self, scope: Scope, name: str):
        value = scope.find(name, MISSING)
        if value is MISSING:
            raise ExecutionError(f"fetch var '{name}' has no value after the run: no op wrote it and "
                                 f"it was not fed")
        return value

    # ------------------------------------------------------------------ planning
    def _plan(self, block: Block, keep: frozenset[str] | None) -> Plan:
        plans = self._plans.setdefault(block, {})
        op_ids = tuple(map(id, block.ops))   # also catches ops replaced without mark_changed()
        plan = plans.get(keep)
        revision = block.program.revision
        if plan is None or plan.revision != revision or plan.op_ids != op_ids:
            if block.idx == 0:   # every block it may run: each var an op reads or writes is declared
                check_vars(block.program)
            plan = plans[keep] = Plan(revision, op_ids, self._prepare(block, keep))
            self.plans_built += 1
        return plan

    def _prepare(self, block: Block, keep: frozenset[str] | None) -> list[Step]:
        missing = [(i, op.type) for i, op in enumerate(block.ops) if op.type not in KERNELS]
        if missing:
            listing = "; ".join(op_location(block.idx, i, t) for i, t in missing)
            raise ExecutionError(f"no kernel for {len(missing)} op(s): {listing}")
        for idx, op in enumerate(block.ops):
            problem = registry.slot_problem(op) or registry.unsupported_setting(op) or registry.attr_type_problem(op)
            if problem:
                raise ExecutionError(f"{op_location(block.idx, idx, op.type)}: {problem}")
            try:
                check_inputs(block, idx, op)
            except ProgramError as exc:
                raise ExecutionError(str(exc)) from None
        last_use: dict[str, int] = {}
        if keep is not None:
            for idx, op in enumerate(block.ops):
                for name in referenced_names(block.program, op):
                    last_use[name] = idx
        frees: list[list[str]] = [[] for _ in block.ops]
        for name, idx in last_use.items():
            var = block.find_var(name)
            if name not in keep and name != EMPTY_VAR and not (var is not None and var.persistable):
                frees[idx].append(name)
        steps = []
        for idx, op in enumerate(block.ops):
            opdef = registry.get(op.type)
            attrs = ChainMap(op.attrs, opdef.attrs) if opdef is not None else op.attrs  # live: edits show
            ctx = KernelContext(op, block, idx, attrs, self, opdef)
            writes = [(slot, [self._write_spec(block, name) for name in args])
                      for slot, args in op.outputs.items()]
            steps.append(Step(KERNELS[op.type], ctx, writes, tuple(sorted(frees[idx]))))
        return steps

    @staticmethod
    def _write_spec(block: Block, name: str) -> tuple[str, object, bool]:
        var = block.find_var(name)
        if var is None or var.type not in (VarType.DENSE_TENSOR, VarType.SELECTED_ROWS):
            return name, None, bool(var and var.persistable)
        dtype = NUMPY_DTYPE_NAMES.get(var.dtype)
        return name, np.dtype(dtype) if dtype else None, bool(var.persistable)

    # ------------------------------------------------------------------ the hot loop
    def _execute(self, plan: Plan, scope: Scope, run_scope: Scope) -> None:
        for step in plan.steps:
            ctx = step.ctx
            ctx.scope = scope
            ctx.run_scope = run_scope
            try:
                results = step.kernel(ctx)
            except GradcError:
                raise
            except Exception as exc:  # bad data or a kernel bug: say which op, what it read and why
                raise kernel_failure(ctx, exc) from exc
            if results:
                if not step.checked:
                    ctx.check_results(results)
                    step.checked = True
                _write(ctx, step.writes, results, scope, run_scope)
                if self.check_finite:
                    check_finite(ctx, results)
            for name in step.frees:
                scope.vars.pop(name, None)


def _write(ctx: KernelContext, writes, results: dict, scope: Scope, run_scope: Scope) -> None:
    for slot, specs in writes:
        value = results.get(slot)
        if value is None or not specs:
            continue
        values = value if type(value) is list else [value]   # a TensorArray is one value
        if len(values) != len(specs):
            raise ExecutionError(f"{ctx.where}: kernel returned {len(values)} value(s) for output slot "
                                 f"{slot}, which names {len(specs)} var(s)")
        for (name, dtype, persistable), array in zip(specs, values):
            if array is None or name == EMPTY_VAR:
                continue
            if dtype is not None:
                array = _as_declared(ctx, name, array, dtype)
            if persistable and scope.owner(name) is None:
                run_scope.vars[name] = array
            else:
                scope.assign(name, array)


def _as_declared(ctx: KernelContext, name: str, array, dtype: np.dtype) -> np.ndarray:
    """The value in the var's declared dtype. A float kernel result wider than declared is a kernel
    bug (float32 silently computed in float64), reported rather than cast away."""
    if isinstance(array, TensorArray):
        raise ExecutionError(f"{ctx.where}: the kernel wrote a tensor array into '{name}', which the program "
                             f"declares a tensor")
    array = np.asarray(array)
    if array.dtype == dtype:
        return array
    if array.dtype.kind == "f" and dtype.kind == "f" and array.dtype.itemsize > dtype.itemsize:
        raise ExecutionError(f"{ctx.where}: the kernel computed '{name}' as {array.dtype}, but the program "
                             f"declares {dtype}")
    return array.astype(dtype)
