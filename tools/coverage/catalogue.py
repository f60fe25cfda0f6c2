"""Every coverage row, family by family."""

from . import activations, conv, misc, norms, shape

ROWS = [*activations.ROWS, *conv.ROWS, *norms.ROWS, *shape.ROWS, *misc.ROWS]

assert len({row.id for row in ROWS}) == len(ROWS), "row ids must be unique"
