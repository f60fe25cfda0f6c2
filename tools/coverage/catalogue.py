"""Every coverage row, family by family."""

from . import activations

ROWS = [*activations.ROWS]

assert len({row.id for row in ROWS}) == len(ROWS), "row ids must be unique"
