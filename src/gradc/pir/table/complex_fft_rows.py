"""Rows: complex tensors and paddle.fft (gradc.ops.complex_fft)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
