"""Rows: the unary math ops of the tensor API (gradc.ops.unary_math)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
