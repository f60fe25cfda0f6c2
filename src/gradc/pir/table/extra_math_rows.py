"""Rows: the PIR ops of the extra_math family."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
