"""Rows: the PIR ops of the tensor_api family."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
