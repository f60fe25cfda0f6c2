"""Rows: the scans ops of the tensor API (gradc.ops.scans)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
