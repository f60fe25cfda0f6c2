"""Rows: fake quantization and the quantize/dequantize ops of quantized models (gradc.ops.quant)."""

from __future__ import annotations

from . import row  # noqa: F401

ROWS = []
