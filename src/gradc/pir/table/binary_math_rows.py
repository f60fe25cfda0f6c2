"""Rows: the binary math ops of the tensor API (gradc.ops.binary_math)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
