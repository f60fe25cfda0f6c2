"""Rows: the linalg ops of the tensor API (gradc.ops.linalg)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
