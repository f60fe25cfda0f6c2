"""Kernels of conv2d / depthwise_conv2d / conv2d_transpose / pool2d (im2col through strided views)."""
