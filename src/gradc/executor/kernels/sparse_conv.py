"""sparse_conv3d (paddle.sparse.nn.Conv3D and SubmConv3D) by Paddle's rulebook: a rule (k, i, o) says kernel
offset k carries input site i to output site o, where o * stride = i - k * dilation + padding in every spatial dim
(one batch item). A plain conv's output sites are every o some rule reaches; a submanifold conv's are the input's
own sites, which rules may reach only there; it centres the kernel on each site and ignores paddings, as Paddle's
does (with dilation it keeps the input's sites and dims, where Paddle's loses both: docs/sparse.md). Either way the
output sites come sorted, row-major over (batch, depth, height, width), as Paddle writes them. The rulebook output
is int32 [3, rules] (offset, input row, output row), grouped by offset, and counter int32 [kernel volume] counts
the rules of each offset: the grad kernel reads them instead of searching again."""

from __future__ import annotations

import numpy as np

from ..sparse_value import SparseCoo
from . import kernel
from .sparse import coo


def _rules(k, x: SparseCoo, kernel_dims, subm: bool) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """(rulebook [3, rules] as (offset, input row, output row), the output sites as linear numbers, sorted, the
    output's batch and spatial dims)."""
    strides, paddings, dilations = (np.array(k.attr(name)) for name in ("strides", "paddings", "dilations"))
    last = 1 + len(kernel_dims)   # after the spatial dims: 3 of a 3-D conv, 2 of a 2-D one (Conv2D, SubmConv2D)
    batch, spatial = x.shape[0], np.array(x.shape[1:last])
    if subm:   # the kernel centred on each site, whatever the paddings say (as Paddle's)
        out_spatial, paddings = spatial, (np.array(kernel_dims) - 1) // 2 * dilations
    else:
        out_spatial = (spatial + 2 * paddings - dilations * (np.array(kernel_dims) - 1) - 1) // strides + 1
    offsets = np.stack(np.unravel_index(np.arange(int(np.prod(kernel_dims))), kernel_dims), 1)   # [K, dims]
    shifted = x.indices[1:last].T[None] + paddings - offsets[:, None] * dilations             # [K, nnz, dims]
    out_pos = shifted // strides
    valid = ((shifted % strides == 0) & (out_pos >= 0) & (out_pos < out_spatial)).all(-1)
    offset, row = np.nonzero(valid)                                                              # by offset
    dims = (batch, *out_spatial.tolist())
    out_linear = np.ravel_multi_index((x.indices[0, row], *out_pos[offset, row].T), dims)
    if subm:
        sites = np.unique(x.linear_sites())
        hit = np.isin(out_linear, sites)
        offset, row, out_linear = offset[hit], row[hit], out_linear[hit]
    else:
        sites = np.unique(out_linear)
    rulebook = np.stack([offset, row, np.searchsorted(sites, out_linear)]).astype(np.int32)
    return rulebook, sites, dims


@kernel("sparse_conv3d")
def conv3d(k):
    x, weight = coo(k, "x"), k.x("kernel")
    if x.sparse_dim not in (3, 4) or x.values.ndim != 2 or weight.ndim != x.sparse_dim + 1 or \
            weight.shape[-2] != x.values.shape[1]:
        raise ValueError(f"sparse_conv3d needs x [N, D, H, W, C] (or [N, H, W, C]) with all but C sparse and kernel "
                         f"[kd, kh, kw, C, out channels] (or [kh, kw, C, out channels]): x {list(x.shape)} (sparse "
                         f"dims {x.sparse_dim}), kernel {list(weight.shape)}")
    rulebook, sites, dims = _rules(k, x, weight.shape[:-2], k.attr("subm"))
    flat = weight.reshape(-1, *weight.shape[-2:])
    out = np.zeros((sites.size, weight.shape[-1]), np.result_type(x.dtype, weight.dtype))
    counter = np.bincount(rulebook[0], minlength=len(flat)).astype(np.int32)
    for offset, (start, end) in _groups(counter):
        np.add.at(out, rulebook[2, start:end], x.values[rulebook[1, start:end]] @ flat[offset])
    indices = np.stack(np.unravel_index(sites, dims)).astype(np.int64)
    return {"out": SparseCoo(indices, out.astype(x.dtype), (*dims, weight.shape[-1])), "rulebook": rulebook,
            "counter": counter}


def _groups(counter: np.ndarray):
    """(kernel offset, (first rule, end)) of each offset that has rules."""
    ends = np.cumsum(counter)
    for offset in np.nonzero(counter)[0]:
        yield int(offset), (int(ends[offset] - counter[offset]), int(ends[offset]))


@kernel("sparse_conv3d_grad")
def conv3d_grad(k):
    x, weight, dout = coo(k, "x"), k.x("kernel"), coo(k, "out@GRAD")
    rulebook, counter = k.x("rulebook"), k.x("counter")
    flat = weight.reshape(-1, *weight.shape[-2:])

    def dx():
        grad = np.zeros_like(x.values)
        for offset, (start, end) in _groups(counter):
            np.add.at(grad, rulebook[1, start:end], dout.values[rulebook[2, start:end]] @ flat[offset].T)
        return x.with_values(grad)

    def dkernel():
        grad = np.zeros_like(flat)
        for offset, (start, end) in _groups(counter):
            grad[offset] = x.values[rulebook[1, start:end]].T @ dout.values[rulebook[2, start:end]]
        return grad.reshape(weight.shape)

    return k.grads({"x@GRAD": dx, "kernel@GRAD": dkernel})


@kernel("sparse_maxpool")
def maxpool(k):
    """Each output site's channels the maximum over the input entries its pooling window's rules bring (the rules
    of a plain conv with kernel_sizes: Paddle's MaxPoolCooKernel)."""
    x = coo(k, "x")
    if x.sparse_dim != 4 or x.values.ndim != 2:
        raise ValueError(f"sparse_maxpool needs x [N, D, H, W, C] with 4 sparse dims, got {list(x.shape)} "
                         f"(sparse dims {x.sparse_dim})")
    rulebook, sites, dims = _rules(k, x, tuple(k.attr("kernel_sizes")), False)
    out = np.full((sites.size, x.values.shape[1]), -np.inf, x.dtype)
    np.maximum.at(out, rulebook[2], x.values[rulebook[1]])
    counter = np.bincount(rulebook[0], minlength=int(np.prod(k.attr("kernel_sizes")))).astype(np.int32)
    indices = np.stack(np.unravel_index(sites, dims)).astype(np.int64)
    return {"out": SparseCoo(indices, out, (*dims, x.shape[4])), "rulebook": rulebook, "counter": counter}


@kernel("sparse_maxpool_grad")
def maxpool_grad(k):
    """dx[i] += dout[o] for each rule (k, i, o) where x[i] is out[o]'s maximum (every tied entry, as Paddle's)."""
    x, out, dout, rulebook = coo(k, "x"), coo(k, "out"), coo(k, "out@GRAD"), k.x("rulebook")
    held = x.values[rulebook[1]] == out.values[rulebook[2]]
    grad = np.zeros_like(x.values)
    np.add.at(grad, rulebook[1], np.where(held, dout.values[rulebook[2]], 0).astype(x.dtype))
    return {"x@GRAD": x.with_values(grad)}


@kernel("sparse_maxpool_grad_grad")
def maxpool_grad_grad(k):
    """grad_out_grad[o] += grad_x_grad[i] for each rule (k, i, o) where x[i] is out[o]'s maximum: maxpool_grad's
    adjoint."""
    x, out, ddx, rulebook = coo(k, "x"), coo(k, "out"), coo(k, "grad_x_grad"), k.x("rulebook")
    held = x.values[rulebook[1]] == out.values[rulebook[2]]
    grad = np.zeros_like(out.values)
    np.add.at(grad, rulebook[2], np.where(held, ddx.values[rulebook[1]], 0).astype(out.dtype))
    return {"grad_out_grad": out.with_values(grad)}
