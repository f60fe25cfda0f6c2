"""Rows: the PIR ops of the random_dist family."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
