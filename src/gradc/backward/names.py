"""The name of each var's gradient in one backward pass.

The grad of ``v`` is ``v@GRAD`` (Paddle's convention), unless the program already declares a var of that
name: a program differentiated before (a gradient penalty, a Hessian-vector product) keeps its first
backward's grads, and the new pass names its own ``v@GRAD@2`` (the first free of @2, @3, ...). The names
depend only on the vars declared when the pass starts, so every block of the pass agrees on them. A pylayer's
backward block declares ``x@GRAD`` by Paddle's protocol (the grad it hands to input ``x``): no name is taken there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import chain

from ..ir import EMPTY_VAR, GRAD_SUFFIX, Program
from ..ops.pylayer import user_backward_blocks

_NUMBERED = re.compile(r"(.*)@GRAD@\d+")


class GradNames(dict):
    """var -> the name of its grad; called as ``names(var)``, a dict lookup once a var's name is made."""

    def __init__(self, program: Program):
        super().__init__()
        protocol = user_backward_blocks(program)
        # the declared names, and EMPTY_VAR (no grad's name either), which GradAccumulator skips with them
        self.taken = set(chain.from_iterable(block.vars for block in program.blocks if block.idx not in protocol))
        self.taken.add(EMPTY_VAR)
        self.sources: dict[str, str] = {}   # grad name -> its var: declare_grad_vars reads it, no string cut per grad

    def __missing__(self, var: str) -> str:
        name, count = var + GRAD_SUFFIX, 2
        while name in self.taken:
            name, count = f"{var}{GRAD_SUFFIX}@{count}", count + 1
        self[var] = name
        self.sources[name] = var
        return name

    def name_all(self, variables: Iterable[str]) -> None:
        """Name the grads of ``variables`` in one comprehension rather than a __missing__ call each (a backward names
        thousands); a name already taken is left to __missing__. A var named before gets the name __missing__ gave it:
        the same, as it was not taken."""
        grads = {var + GRAD_SUFFIX: var for var in variables}   # grad name -> var, as sources keeps them
        if not self.taken.isdisjoint(grads):   # a program differentiated before: most programs, no filter
            grads = {name: var for name, var in grads.items() if name not in self.taken}
        self.sources.update(grads)
        self.update(zip(grads.values(), grads))

    __call__ = dict.__getitem__   # the backward names grads per op: no Python-level call once a name is made

    def source(self, name: str) -> str | None:
        """The var whose grad in this pass ``name`` is, or None (a forward value, a temporary)."""
        if name.endswith(GRAD_SUFFIX):
            var = name[: -len(GRAD_SUFFIX)]
        elif "@GRAD@" in name and (match := _NUMBERED.fullmatch(name)):
            var = match.group(1)
        else:
            return None
        return var if self(var) == name else None
