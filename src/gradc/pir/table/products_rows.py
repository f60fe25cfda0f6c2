"""Rows: the products ops of the tensor API (gradc.ops.products)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
