"""Rows: the PIR ops of the detection_v1 family."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
