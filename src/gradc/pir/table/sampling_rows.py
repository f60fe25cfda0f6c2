"""Rows: the sampling ops of the tensor API (gradc.ops.sampling)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
