"""Rows: special functions and small tensor ops (gammaln, gammaincc, nextafter, multiplex, reduce_as, is_empty,
equal_all, swiglu, norm, margin_cross_entropy)."""

from .spec import table

ROWS = table(
    "extra_math",
)
