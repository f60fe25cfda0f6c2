"""Runs programs with numpy kernels. Each block is planned once per (program revision, fetch set): kernels
resolved, slots bound, attributes merged with their defaults, each output's declared dtype and destination
and each var's last reader found, so the per-op loop is a kernel call, a store per output and the frees. A plan
run many times becomes straight-line code (straight.py) that makes the hot ops' numpy calls itself."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from weakref import WeakKeyDictionary

import numpy as np

from ..errors import GradcError
from ..gcpause import gc_paused
from ..ir import EMPTY_VAR, Block, Program
from ..verify import check_vars
from . import malloc, straight
from .declared import check_scope_values
from .failures import check_finite, kernel_failure
from .feeding import as_feed, check_fetches, feed_values, fetch_names, unwritten_fetch
from .liveness import shape_stub
from .lod import LoDTensor, declares_lod, has_lod, lod_of
from .plan import Plan, prepare
from .scope import MISSING, Scope, global_scope
from .stores import place, store_slots

# a plan's runs through the loop before its straight-line code is built: building costs ~0.17 ms an op, what 40
# (a 603-op MLP step) to 130 (10,000 scale ops) runs save, so a program run fewer times never pays for it
STRAIGHT_AFTER_RUNS = 50


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
                plan = plans[keep] = Plan(revision, list(block.ops), prepare(block, keep, self, checked))
                plan.makes_lod = declares_lod(block)
            self.plans_built += 1
        return plan

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
