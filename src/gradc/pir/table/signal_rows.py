"""Rows: paddle.signal's frame and overlap_add (gradc.ops.signal)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
