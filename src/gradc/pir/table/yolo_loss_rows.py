"""Rows: YOLOv3's loss (gradc.ops.yolo_loss)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
