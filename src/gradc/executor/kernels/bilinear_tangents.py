"""Derivatives of a bilinear weight along any number of directions, for the sampling ops' grad-of-grad kernels
(grid_sampler 2-D, deformable convolution, multi-scale deformable attention). Inside a cell the weight is
f_a(p_a) f_b(p_b), each factor linear, so along directions v_1..v_k (tangents of the position, per axis) its
derivative assigns each direction its own axis: k = 0 the weight, 1 slope_a v_a + slope_b v_b, 2 the cross
derivative twist (v1_a v2_b + v1_b v2_a), more 0. No module of ops: these are helpers of the kernels."""

from __future__ import annotations

import numpy as np


def cell_tangents(weight, slope_a, slope_b, twist, moves: list) -> tuple:
    """(the weight's derivative along ``moves`` [(v_a, v_b) per direction], its derivatives along a and along b)."""
    if not moves:
        return weight, slope_a, slope_b
    if len(moves) == 1:
        (along_a, along_b), = moves
        return slope_a * along_a + slope_b * along_b, twist * along_b, twist * along_a
    zero = np.zeros_like(weight)
    if len(moves) == 2:
        (first_a, first_b), (second_a, second_b) = moves
        return twist * (first_a * second_b + first_b * second_a), zero, zero
    return zero, zero, zero
