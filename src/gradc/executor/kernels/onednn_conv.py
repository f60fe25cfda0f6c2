"""Kernels of gradc.ops.onednn_conv: the unfused convolution's kernel, then the bias (and for fused_conv3d the
residual and the activation) as fused_conv2d's kernel adds them."""

from __future__ import annotations

from . import kernel
from .inference_fused import fused_conv


@kernel("fused_conv3d")
def fused_conv3d(k):
    return fused_conv(k, "conv3d")


@kernel("conv2d_transpose_bias")
def conv2d_transpose_bias(k):
    return fused_conv(k, "conv2d_transpose", bias_only=True)


