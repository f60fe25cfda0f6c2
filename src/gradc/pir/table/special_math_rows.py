"""Rows: the special math ops of the tensor API (gradc.ops.special_math)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
