"""Rows: paddle.nn.quant's fake-quantization layers and the quantize/dequantize ops of quantized (QAT, int8) models."""

ROWS = []
