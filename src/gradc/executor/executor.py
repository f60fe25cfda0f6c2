"""Runs programs with numpy kernels. Each block is planned once per (program revision, fetch set): kernels
resolved, slots bound, attributes merged with their defaults, each output's declared dtype and destination
and each var's last reader found, so the per-op loop is a kernel call, a store per output and the frees."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from weakref import WeakKeyDictionary

import numpy as np

from .. import registry
from ..errors import ExecutionError, GradcError, ProgramError, op_location
from ..ir import EMPTY_VAR, Block, Program, VarType
from ..ir.types import NUMPY_DTYPE_NAMES
from ..verify import check_inputs, check_vars
from .context import KernelContext
from .failures import check_finite, kernel_failure
from .feeding import feed_values
from .kernels import KERNELS, load_all
from .liveness import deaths, shape_stub
from .scope import MISSING, Scope, global_scope
from .selected_rows import SelectedRows
from .tensor_array import TensorArray

load_all()


class Step:
    """One op of a plan. ``writes``: (slot, [(name, dtype, persistable)]); ``single``: the one
    (slot, name, dtype, persistable) of an op that writes one var (most ops), else None."""

    __slots__ = ("kernel", "ctx", "writes", "single", "frees", "shrinks", "checked")

    def __init__(self, kernel, ctx: KernelContext, writes: tuple, frees: tuple[str, ...], shrinks: tuple[str, ...]):
        self.kernel = kernel
        self.ctx = ctx
        self.writes = writes
        self.single = (writes[0][0], *writes[0][1][0]) if len(writes) == 1 and len(writes[0][1]) == 1 else None
        self.frees = frees
        self.shrinks = shrinks   # values only read for their shape from here on: kept as shape stubs
        self.checked = False   # the kernel's result slots were checked against the op's definition


@dataclass
class Plan:
    revision: int             # the program's revision it was made for
    op_ids: tuple[int, ...]   # and its ops: a plan is reused only for the very same program and ops
    steps: list[Step]


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
        frees, shrinks = deaths(block, keep)
        steps = []
        for idx, op in enumerate(block.ops):
            opdef = registry.get(op.type)
            ctx = KernelContext(op, block, idx, self, opdef)
            writes = tuple((slot, [self._write_spec(block, name) for name in args])
                           for slot, args in op.outputs.items() if args)
            steps.append(Step(KERNELS[op.type], ctx, writes, tuple(frees[idx]), tuple(shrinks[idx])))
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
        local, ndarray = scope.vars, np.ndarray
        outer = _outer_vars(scope)
        finite = self.check_finite
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
            if not results:
                pass
            elif step.single and step.checked:   # most ops: one value of the declared dtype
                slot, name, dtype, persistable = step.single
                value = results.get(slot)
                if type(value) is not ndarray or value.dtype is not dtype:
                    _store_slots(ctx, step.writes, results, scope, outer, run_scope)
                elif name in local:
                    local[name] = value
                elif outer is not None and not persistable:   # _place, inlined: a new value lives here
                    for values in outer:
                        if name in values:
                            values[name] = value
                            break
                    else:
                        local[name] = value
                else:
                    _place(name, value, persistable, scope, outer, run_scope)
            else:
                if not step.checked:
                    ctx.check_results(results)
                    step.checked = True
                _store_slots(ctx, step.writes, results, scope, outer, run_scope)
            if finite and results:
                check_finite(ctx, results)
            for name in step.frees:
                local.pop(name, None)
            for name in step.shrinks:
                value = local.get(name)
                if type(value) is ndarray:
                    local[name] = shape_stub(value)


def _outer_vars(scope: Scope) -> list[dict] | None:
    """The vars of the scopes above ``scope``, nearest first; None when ``scope`` decides where writes go
    itself (a subclass with its own ``assign``, like the backward replay scope)."""
    if type(scope) is not Scope:
        return None
    outer, parent = [], scope.parent
    while parent is not None:
        outer.append(parent.vars)
        parent = parent.parent
    return outer


def _place(name: str, value, persistable: bool, scope: Scope, outer: list[dict] | None, run_scope: Scope) -> None:
    """Write where the name lives, this scope or an outer one; a new var here, a new persistable one in
    the run's persistent scope (parameters outlive the run)."""
    if outer is None:
        if persistable and scope.owner(name) is None:
            run_scope.vars[name] = value
        else:
            scope.assign(name, value)
        return
    local = scope.vars
    if name in local:
        local[name] = value
        return
    for values in outer:
        if name in values:
            values[name] = value
            return
    (run_scope.vars if persistable else local)[name] = value


def _store_slots(ctx: KernelContext, writes: tuple, results: dict, scope: Scope, outer: list[dict] | None,
                 run_scope: Scope) -> None:
    for slot, specs in writes:
        value = results.get(slot)
        if value is None:
            continue
        values = value if type(value) is list else [value]   # a TensorArray is one value
        if len(values) != len(specs):
            raise ExecutionError(f"{ctx.where}: kernel returned {len(values)} value(s) for output slot "
                                 f"{slot}, which names {len(specs)} var(s)")
        for (name, dtype, persistable), array in zip(specs, values):
            if array is None or name == EMPTY_VAR:
                continue
            if dtype is not None and (type(array) is not np.ndarray or array.dtype is not dtype):
                array = _as_declared(ctx, name, array, dtype)
            _place(name, array, persistable, scope, outer, run_scope)


def _as_declared(ctx: KernelContext, name: str, array, dtype: np.dtype) -> np.ndarray:
    """The value in the var's declared dtype. A float kernel result wider than declared is a kernel
    bug (float32 silently computed in float64), reported rather than cast away."""
    if isinstance(array, TensorArray):
        raise ExecutionError(f"{ctx.where}: the kernel wrote a tensor array into '{name}', which the program "
                             f"declares a tensor")
    if isinstance(array, SelectedRows):   # sparse grads stay sparse, whatever the var declares (as in Paddle)
        return array
    array = np.asarray(array)
    if array.dtype == dtype:
        return array
    if array.dtype.kind == "f" and dtype.kind == "f" and array.dtype.itemsize > dtype.itemsize:
        raise ExecutionError(f"{ctx.where}: the kernel computed '{name}' as {array.dtype}, but the program "
                             f"declares {dtype}")
    return array.astype(dtype)
