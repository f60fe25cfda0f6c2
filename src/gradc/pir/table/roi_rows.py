"""Rows: the RoI pooling ops of paddle.vision.ops (gradc.ops.roi)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
