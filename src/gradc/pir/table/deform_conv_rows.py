"""Rows: deformable convolution (gradc.ops.deform_conv)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
