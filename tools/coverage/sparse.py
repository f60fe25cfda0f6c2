"""Rows: paddle.sparse and paddle.sparse.nn as Paddle 3.3.1's legacy static mode builds them (docs/sparse.md): each a
COO tensor made of fed values (val) at fixed sites (idx, sorted), a layer or function, and to_dense (or values()).
Paddle's append_backward writes no grad op for the sparse ops, so its numbers are the forward's: the loss, and the
gradients of whatever dense part follows; gradc's gradients of val and of the layers' weights are checked by
central differences (tests/gradcheck_cases/sparse.py) and against Paddle's dygraph run (tests/test_sparse.py)."""

import numpy as np
import paddle.sparse as sp

from .spec import f, given, table

# 10 sites of a [2, 4, 4, 4] grid (and of a [2, 4, 4] one for the 2-D layers), sorted
SITES_3D = np.stack(np.unravel_index(np.sort(np.random.default_rng(41).choice(128, 10, replace=False)), (2, 4, 4, 4)))
SITES_2D = np.stack(np.unravel_index(np.sort(np.random.default_rng(43).choice(32, 10, replace=False)), (2, 4, 4)))
SITES_MATRIX = np.array([[0, 0, 1, 2, 2, 3], [1, 4, 0, 2, 3, 1]])   # 6 entries of a [4, 5] matrix


def _coo(val, idx, shape):
    return sp.sparse_coo_tensor(idx, val, shape=shape)


def _grid(val, idx):
    return _coo(val, idx, [2, 4, 4, 4, 2])


def _plane(val, idx):
    return _coo(val, idx, [2, 4, 4, 2])


def _matrix(val, idx):
    return _coo(val, idx, [4, 5])


V3, I3 = f(10, 2), given(SITES_3D, "int64")
V2, I2 = f(10, 2), given(SITES_2D, "int64")
VM, IM = f(6), given(SITES_MATRIX, "int64")

ROWS = table(
    "sparse",
    ("sparse_subm_conv3d", lambda val, idx: sp.nn.SubmConv3D(2, 3, 3, padding=1)(_grid(val, idx)).to_dense(), V3, I3),
    ("sparse_conv3d_strided", lambda val, idx: sp.nn.Conv3D(2, 3, 2, stride=2, bias_attr=False)(
        _grid(val, idx)).to_dense(), V3, I3),
    ("sparse_subm_conv2d", lambda val, idx: sp.nn.SubmConv2D(2, 3, 3, padding=1)(_plane(val, idx)).to_dense(), V2, I2),
    ("sparse_conv2d_strided", lambda val, idx: sp.nn.Conv2D(2, 4, 2, stride=2, padding=1)(_plane(val, idx)).to_dense(),
     V2, I2),
    ("sparse_batch_norm_relu", lambda val, idx: sp.nn.ReLU()(sp.nn.BatchNorm(2)(_grid(val, idx))).to_dense(), V3, I3),
    ("sparse_softmax_channels", lambda val, idx: sp.nn.Softmax()(_grid(val, idx)).to_dense(), V3, I3),
    ("sparse_relu_values", lambda val, idx: sp.nn.ReLU()(_coo(val, idx, [4, 5, 2])).values(), f(6, 2), IM),
    ("sparse_reshape", lambda val, idx: sp.reshape(_matrix(val, idx), [2, 10]).to_dense(), VM, IM),
    ("sparse_sum_rows", lambda val, idx: sp.sum(_matrix(val, idx), axis=1).to_dense(), VM, IM),
    # Paddle declares slice's output with x's dims ([4, 5] for [2, 3]): its own loss weight does not fit
    ("sparse_slice", lambda val, idx: sp.slice(_matrix(val, idx), [0, 1], [1, 1], [3, 4]).to_dense(), VM, IM),
    ("sparse_add_self", lambda val, idx: sp.add(_matrix(val, idx), _matrix(val * 2.0, idx)).to_dense(), VM, IM),
)
