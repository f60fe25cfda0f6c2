"""The conv/pool geometry and kernels work in any number of spatial dims: 1-D and 3-D against direct
loops (2-D is checked against Paddle in test_conv_ops_vs_paddle)."""

import itertools

import numpy as np
import pytest

import gradc
from gradc.executor.kernels.conv import Geometry, conv, conv_filter_grad, conv_input_grad
from gradc.ops.conv import conv_out_sizes, pool_attrs, pool_geometry, resolve_padding


def direct_conv(x, w, strides, pads, dilations, groups):
    """Cross-correlation by loops over every output position (x [N, C, *S], w [O, C/g, *K])."""
    dims = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[2 * i], pads[2 * i + 1]) for i in range(dims)])
    out_sizes = conv_out_sizes(x.shape[2:], w.shape[2:], strides, pads, dilations)
    out = np.zeros((x.shape[0], w.shape[0], *out_sizes))
    cg, og = w.shape[1], w.shape[0] // groups
    for o in range(w.shape[0]):
        channels = slice(o // og * cg, o // og * cg + cg)
        for pos in itertools.product(*map(range, out_sizes)):
            window = tuple(slice(p * s, p * s + (k - 1) * d + 1, d)
                           for p, s, k, d in zip(pos, strides, w.shape[2:], dilations))
            patch = xp[(slice(None), channels, *window)]
            out[(slice(None), o, *pos)] = (patch * w[o]).sum(axis=tuple(range(1, dims + 2)))
    return out


@pytest.mark.parametrize("x_shape, w_shape, strides, paddings, dilations, groups", [
    ((2, 3, 9), (4, 3, 3), [2], [1], [1], 1),                  # 1-D
    ((1, 4, 7), (2, 2, 2), [1], [0, 2], [3], 2),               # 1-D, asymmetric pads, dilated, grouped
    ((1, 2, 4, 5, 3), (3, 2, 2, 3, 2), [1, 2, 1], [1, 0, 1], [1, 1, 2], 1),   # 3-D
])
def test_nd_convolution_and_its_adjoints(x_shape, w_shape, strides, paddings, dilations, groups):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    pads, dils = resolve_padding(x_shape[2:], w_shape[2:], strides, paddings, dilations, "EXPLICIT")
    geo = Geometry(tuple(strides), tuple(pads), tuple(dils), groups)
    y = conv(x, w, geo)
    np.testing.assert_allclose(y, direct_conv(x, w, strides, pads, dils, groups), rtol=1e-12, atol=1e-12)
    # adjoints: <conv(x, w), dy> = <x, input_grad(dy)> = <w, filter_grad(dy)>
    dy = rng.standard_normal(y.shape)
    inner = np.sum(y * dy)
    np.testing.assert_allclose(np.sum(x * conv_input_grad(dy, w, x_shape[2:], geo)), inner, rtol=1e-12)
    np.testing.assert_allclose(np.sum(w * conv_filter_grad(x, dy, w_shape, geo)), inner, rtol=1e-12)


def direct_pool(x, ksize, strides, pads, kind):
    sizes = x.shape[2:]
    out_sizes = [(n + pads[2 * i] + pads[2 * i + 1] - k) // s + 1
                 for i, (n, k, s) in enumerate(zip(sizes, ksize, strides))]
    out = np.zeros(x.shape[:2] + tuple(out_sizes))
    for pos in itertools.product(*map(range, out_sizes)):
        window = tuple(slice(max(p * s - pads[2 * i], 0), min(p * s - pads[2 * i] + k, n))
                       for i, (p, s, k, n) in enumerate(zip(pos, strides, ksize, sizes)))
        cells = x[(slice(None), slice(None), *window)].reshape(*x.shape[:2], -1)
        out[(slice(None), slice(None), *pos)] = cells.max(-1) if kind == "max" else cells.mean(-1)
    return out


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool3d_against_direct_loops(kind):
    x = np.random.default_rng(1).standard_normal((2, 3, 5, 4, 6))
    attrs = {"pooling_type": kind, "ksize": [3, 2, 3], "strides": [2, 1, 2], "paddings": [1, 0, 1]}
    program = gradc.Program()
    block = program.global_block
    block.create_var("x", list(x.shape), gradc.VarType.FP64)
    block.create_var("y", None, None)
    block.append_op("pool3d", {"X": ["x"]}, {"Out": ["y"]}, attrs)
    (y,) = gradc.Executor().run(program, {"x": x}, ["y"], gradc.Scope())
    pads = resolve_padding(x.shape[2:], attrs["ksize"], attrs["strides"], attrs["paddings"], [1] * 3, "EXPLICIT")[0]
    np.testing.assert_allclose(y, direct_pool(x, attrs["ksize"], attrs["strides"], pads, kind), rtol=1e-12)
    assert list(y.shape[2:]) == pool_geometry(x.shape[2:], {**pool_attrs(3), **attrs})[2]
