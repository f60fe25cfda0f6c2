"""Rows: ops of Paddle 1.x and 2.x programs that Paddle 3.3.1's Python API no longer writes (v1 expand, flatten2,
top_k, reshape, transpose, crop, fill_constant_batch_size_like, the v1 interpolations, fc, hinge_loss, l1_norm);
saved models still hold them. Each row appends the op itself (legacy_shim.append), as those versions' layers did."""

from .spec import table

SHAPE = table("legacy_v1")

NN = table("legacy_v1")

ROWS = SHAPE + NN
