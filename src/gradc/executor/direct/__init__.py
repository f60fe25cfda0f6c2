"""Direct steps: ops bound once per plan to code that reads its inputs from the run's dicts, makes its
kernel's numpy calls and stores its outputs itself, with no kernel context, results dict or generic store
between. Those cost ~1.5 µs an op, as much as a 64x64 op's arithmetic, and several times that for an op run
once a step (its code is out of the caches by then). Direct steps exist for the hottest ops only: an fc
layer's and scale (inline.py: source rows the plan's straight-line code pastes in) and a classifier's loss
(loss.py: closures it calls).

A step tests what its kernel's fast path tests and returns FALLBACK for any other case (another rank,
attribute or result dtype); an exception (a value missing, of another kind) falls back too. The op's kernel
then runs as always, and reports whatever is wrong. A step reads ``values`` (the run's own), then ``params``
(the caller's scope), then the scopes above; it writes ``values`` only: the executor uses direct steps in a
run only when no outer scope holds a var they write."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ir import EMPTY_VAR
from ..context import KernelContext
from ..kernels import KERNELS

FALLBACK = object()
_BINDERS: dict[Callable, Callable] = {}   # kernel -> binder(op, ins, outs, defaults) -> step or None


def binds(op_type: str):
    """Register a binder for the op type's kernel as it is now: a kernel replaced later has none."""
    def register(binder: Callable) -> Callable:
        _BINDERS[KERNELS[op_type]] = binder
        return binder
    return register


def direct_step(kernel: Callable, ctx: KernelContext, writes: tuple):
    """The op's inline step, or its step(values, params, scope) -> None (done) or FALLBACK; None when its kernel
    has no binder, a slot names several vars, an attribute is a var's value, or an output is persistable or has
    no declared dtype (the executor stores those)."""
    binder = _BINDERS.get(kernel)
    if binder is None or ctx.var_attrs or any(len(args) > 1 for args in ctx.ins.values()):
        return None
    outs = {}
    for slot, specs in writes:
        if len(specs) != 1:
            return None
        name, dtype, persistable = specs[0]
        if persistable or not isinstance(dtype, np.dtype) or name == EMPTY_VAR:   # None, or bfloat16's rounding
            return None
        outs[slot] = (name, dtype)
    ins = {slot: args[0] for slot, args in ctx.ins.items() if args}
    return binder(ctx.op, ins, outs, ctx.defaults)


def fits(ins: dict, outs: dict, inputs: set[str], outputs: set[str], all_outputs: bool = True) -> bool:
    """The op fills exactly the kernel's input slots and writes its output slots: all of them, or at least one."""
    return ins.keys() == inputs and bool(outs) and (outs.keys() == outputs if all_outputs else outs.keys() <= outputs)


from . import inline, loss  # noqa: E402,F401 - registers their binders
