"""`gradc run --per-example`: one run for each example of the feed, a batch of one, each fetch's values stacked along
a new first axis: per-example gradients (EWC's empirical Fisher diagonal, the mean of their squares; a per-example
clipping's norms) and per-example values of a program whose loss averages its batch."""

from __future__ import annotations

import numpy as np

from ..errors import GradcError
from ..executor.lod import LoDTensor


def per_example_feeds(prog, feeds: dict) -> list[dict]:
    """The feed of each example: row i (kept as a batch of one) of every array fed to a var with a batch axis (a
    first dim of -1, or of 1 where the array has more rows: a program saved for one example); the others (an input
    the same for every batch, Deep SVDD's center) fed whole to each."""
    from ..training.programs import updates_parameters  # with the optimizers: a plain run imports neither
    if updates_parameters(prog):
        raise GradcError("--per-example: the program updates its parameters (optimizer ops), so each example's run "
                         "would move them for the next: run the program compiled without --optimizer")
    block, rows = prog.global_block, {}
    for name, value in feeds.items():
        if isinstance(value, LoDTensor):
            raise GradcError(f"--per-example: '{name}' is a LoD tensor, whose sequences are not rows of one axis")
        declared = list(getattr(block.find_var(name), "shape", None) or [])
        array = np.asarray(value)
        if declared and array.ndim and (declared[0] < 0 or declared[0] == 1 != array.shape[0]):
            rows[name] = array.shape[0]
    if not rows:
        raise GradcError("--per-example: no fed array has a batch axis (a var declared [-1, ...]) to take the "
                         "examples of")
    if len(set(rows.values())) > 1:
        raise GradcError("--per-example: the fed arrays hold different numbers of examples (" +
                         ", ".join(f"{name} {count}" for name, count in rows.items()) + ")")
    count = next(iter(rows.values()))
    if not count:   # no run: nothing to stack
        raise GradcError(f"--per-example: the feed holds no example ({', '.join(rows)}: 0 rows)")
    return [{name: value[index:index + 1] if name in rows else value for name, value in feeds.items()}
            for index in range(count)]
