"""Rows: the PIR ops of the linalg_extra family."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
