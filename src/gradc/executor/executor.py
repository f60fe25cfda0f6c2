"""Runs programs with numpy kernels. Each block is planned once per (program revision, fetch set): kernels
resolved, slots bound, attributes merged with their defaults, each output's declared dtype and destination
and each var's last reader found, so the per-op loop is a kernel call, a store per output and the frees. A plan
run many times becomes straight-line code (straight.py) that makes the hot ops' numpy calls itself."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from weakref import WeakKeyDictionary

import numpy as np

from .. import registry
from ..errors import ExecutionError, GradcError, ProgramError, op_location
from ..gcpause import gc_paused
from ..ir import EMPTY_VAR, Block, OpDesc, Program
from ..ops.complex_inputs import declares_complex
from ..verify import check_vars
from ..verify_shapes import check_complex_inputs, check_inputs
from . import malloc, straight
from .context import KernelContext
from .declared import check_scope_values
from .direct import direct_step
from .failures import check_finite, kernel_failure, no_kernel_error
from .feeding import as_feed, check_fetches, feed_ops, feed_values, fetch_names, unwritten_fetch
from .kernels import KERNELS
from .liveness import deaths, shape_stub
from .lod import LoDTensor, declares_lod, has_lod, lod_of, sharing
from .scope import MISSING, Scope, global_scope
from .stores import place, store_slots, write_spec

# a plan's runs through the loop before its straight-line code is built: building costs ~0.17 ms an op, what 40
# (a 603-op MLP step) to 130 (10,000 scale ops) runs save, so a program run fewer times never pays for it
STRAIGHT_AFTER_RUNS = 50


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


class Executor:
    def __init__(self):
        malloc.keep_freed_memory()   # once per process: a step's freed arrays stay for the next (malloc.py)
        self.plans_built = 0   # how many times a block was planned (plans are reused until the program changes)
        self.check_finite = False   # stop at the first op that writes NaN or Inf (gradc train --check-nan)

    # ------------------------------------------------------------------ public
    def run(self, program: Program, feed: Mapping[str, object] | str | None = None,
            fetch_list: Iterable[str] | None = None, scope: Scope | None = None,
            return_lod: bool = False) -> list[np.ndarray]:
        """Run block 0 of ``program``; return the values of ``fetch_list``.

        Persistable vars (parameters) are written to ``scope`` and survive the run; temporaries
        live in a child scope dropped at the end. A feed value may be a gradc.executor.LoDTensor (an
        array with its sequences' offsets); with ``return_lod`` a fetched var that has a LoD comes back
        as a LoDTensor.
        """
        scope = global_scope() if scope is None else scope
        fetch_list = fetch_names(fetch_list)
        block = program.global_block
        check_fetches(block, fetch_list, scope)
        local = scope.child()
        plan = self._plan(block, keep=frozenset(fetch_list))
        check_scope_values(block, scope)
        feed_values(block, as_feed(feed), local, plan.feeds)
        self._execute(plan, local, scope)
        if not fetch_list and "fetch" in local:   # a saved inference program's fetch ops fill holder[col]
            values = list(local["fetch"])
            fetch_list = _fetched_names(block, len(values)) if return_lod else []
        else:
            values = [self._fetch(local, name, block) for name in fetch_list]
        if return_lod:
            lods = [lod_of(local, name) for name in fetch_list]
            values = [value if lod is None else LoDTensor(value, lod) for value, lod in zip(values, lods)]
        return values

    def plans(self, block: Block) -> dict:
        """This executor's plans of ``block``, by the vars each keeps to the end of a run (for inspection)."""
        return {} if block.derived is None else block.derived.get(self, {})

    def run_block(self, block: Block, scope: Scope, run_scope: Scope) -> None:
        """Run a sub-block in ``scope``; nothing is freed, so grad blocks can read its values."""
        self._execute(self._plan(block, keep=None), scope, run_scope)

    # ------------------------------------------------------------------ fetch
    def _fetch(self, scope: Scope, name: str, block: Block):
        value = scope.find(name, MISSING)
        if value is MISSING:
            raise unwritten_fetch(block, name)
        return value

    # ------------------------------------------------------------------ planning
    def _plan(self, block: Block, keep: frozenset[str] | None) -> Plan:
        # {vars to keep: plan} on the block, by executor: a program dropped takes its plans along (an executor holding
        # them kept every program it ran alive), and an executor dropped leaves the block's
        if block.derived is None:
            block.derived = WeakKeyDictionary()
        plans = block.derived.setdefault(self, {})
        plan = plans.get(keep)
        revision = block.program.revision
        # the op list compared by identity (OpDesc has no __eq__): also catches ops replaced without mark_changed()
        if plan is None or plan.revision != revision or plan.ops != block.ops:
            # the checks depend on the program alone: one passed for another fetch set of the same ops holds
            checked = any(other.revision == revision and other.ops == block.ops for other in plans.values())
            if block.idx == 0 and not checked:   # every block it may run: each var an op reads or writes is declared
                check_vars(block.program)
            with gc_paused():
                plan = plans[keep] = Plan(revision, list(block.ops), self._prepare(block, keep, checked))
                plan.makes_lod = declares_lod(block)
            self.plans_built += 1
        return plan

    def _prepare(self, block: Block, keep: frozenset[str] | None, checked: bool = False) -> list[Step]:
        if not checked:
            self._check(block)
        frees, shrinks = deaths(block, keep)
        # a sub-block may write any scope: only a block without them knows where every direct output lives
        direct = not any(True for op in block.ops for _ in op.block_refs())
        steps = []
        for idx, op in enumerate(block.ops):
            opdef = registry.get(op.type)
            ctx = KernelContext(op, block, idx, self, opdef)
            kept = opdef.kernel_dtype_outputs if opdef is not None else ()
            writes = tuple((slot, [write_spec(block, name, slot not in kept) for name in args])
                           for slot, args in op.outputs.items() if args)
            kernel = KERNELS[op.type]
            steps.append(Step(kernel, ctx, writes, tuple(frees[idx]), tuple(shrinks[idx]),
                              direct_step(kernel, ctx, writes) if direct else None))
        return steps

    @staticmethod
    def _check(block: Block) -> None:
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

    # ------------------------------------------------------------------ the hot loop
    def _execute(self, plan: Plan, scope: Scope, run_scope: Scope) -> None:
        outer = _outer_vars(scope)
        if plan.makes_lod or has_lod(scope):   # LoD is propagated op by op: the plain kernel loop
            self._loop(plan.lod_rows, scope, run_scope, outer)
            return
        if plan.direct_outputs and not self.check_finite and outer is not None \
                and _all_disjoint(plan.direct_outputs, outer):
            run = plan.straight
            if run is None and plan.runs >= STRAIGHT_AFTER_RUNS:
                run = plan.straight = straight.build(plan)
            if run is not None:
                run(scope.vars, outer[0] if outer else {}, scope,
                    lambda rows: self._loop(rows, scope, run_scope, outer))
                return
            plan.runs += 1
            self._loop(plan.direct_rows, scope, run_scope, outer)
        else:
            self._loop(plan.rows, scope, run_scope, outer)

    def _loop(self, rows: list, scope: Scope, run_scope: Scope, outer: list[dict] | None) -> None:
        """Each op through its direct step or its kernel."""
        local, ndarray = scope.vars, np.ndarray
        drop = local.pop
        nearest, farther = (outer[0], outer[1:]) if outer else (None, None)   # usually the caller's scope alone
        finite = self.check_finite
        params = {} if nearest is None else nearest
        for kernel, ctx, step, direct in rows:
            if direct is not None:   # a hot op's direct step: it stores its outputs itself, returning None
                try:
                    done = direct(local, params, scope) is None
                except Exception:  # noqa: BLE001 - the kernel runs the op again and reports the failure
                    done = False
                if done:
                    for name in step.frees:
                        drop(name, None)
                    if step.shrinks:
                        _shrink(local, step.shrinks)
                    continue
            ctx.scope = scope
            ctx.run_scope = run_scope
            try:
                results = kernel(ctx)
            except GradcError:
                raise
            except Exception as exc:  # bad data or a kernel bug: say which op, what it read and why
                raise kernel_failure(ctx, exc) from exc
            fast = step.fast
            if not results:
                pass
            elif fast is not None:   # most ops: one value of the declared dtype
                slot, name, dtype, persistable = fast
                value = results.get(slot)
                if type(value) is not ndarray or value.dtype is not dtype:
                    store_slots(ctx, step.writes, results, scope, outer, run_scope)
                elif name in local:
                    local[name] = value
                elif nearest is not None and not persistable:   # _place, inlined: a new value lives here
                    if name in nearest:
                        nearest[name] = value
                    elif farther and any(name in values for values in farther):
                        place(name, value, persistable, scope, outer, run_scope)
                    else:
                        local[name] = value
                else:
                    place(name, value, persistable, scope, outer, run_scope)
            elif step.pairs is not None:
                for slot, name, dtype, persistable in step.pairs:
                    value = results.get(slot)
                    if type(value) is ndarray and value.dtype is dtype:
                        place(name, value, persistable, scope, outer, run_scope)
                    elif value is not None:
                        store_slots(ctx, ((slot, [(name, dtype, persistable)]),), results, scope, outer, run_scope)
            else:
                if not step.checked:
                    ctx.check_results(results)
                    step.checked = True
                    step.fast = step.single
                    if len(step.writes) > 1 and all(len(specs) == 1 and specs[0][0] != EMPTY_VAR
                                                    for _, specs in step.writes):
                        step.pairs = tuple((slot, *specs[0]) for slot, specs in step.writes)
                store_slots(ctx, step.writes, results, scope, outer, run_scope)
            if finite and results:
                check_finite(ctx, results)
            for name in step.frees:
                drop(name, None)
            if step.shrinks:
                _shrink(local, step.shrinks)


def _fetched_names(block: Block, columns: int) -> list[str | None]:
    """The var each column of the fetch holder holds (its fetch op's X), None for a column no fetch op fills."""
    names = {op.attrs.get("col"): op.input("X")[0] for op in block.ops if op.type == "fetch"}
    return [names.get(col) for col in range(columns)]


def _shrink(values: dict, names: tuple[str, ...]) -> None:
    """Keep only shape stubs of ``names``: later ops read no more than their shapes."""
    for name in names:
        value = values.get(name)
        if type(value) is np.ndarray:
            values[name] = shape_stub(value)


def _all_disjoint(names: frozenset[str], scopes: list[dict]) -> bool:
    """Whether no scope holds any of ``names`` (each test walks the smaller side)."""
    return all(values.keys().isdisjoint(names) for values in scopes)


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
