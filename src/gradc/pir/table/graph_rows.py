"""Rows: paddle.geometric's message passing and segment reductions (gradc.ops.graph)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
