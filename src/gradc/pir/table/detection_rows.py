"""Rows: the inference ops of detection models (gradc.ops.detection)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
