"""Rows: eigen decompositions, matrix rank, lu_solve, svdvals, tril/triu indices."""

from .spec import table

ROWS = table(
    "linalg_extra",
)
