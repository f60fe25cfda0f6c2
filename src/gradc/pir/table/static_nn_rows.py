"""Rows: the ops of paddle.static.nn's layers, paddle.text and the auc metric (gradc.ops.static_nn, text, metric)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
