"""Kernel of gradc.ops.correlation: one strided product of the two inputs per displacement and window offset, over
inputs zero-padded by pad_size and by the window's radius (the reads Paddle's kernel makes before its buffer)."""

from __future__ import annotations

import numpy as np

from ...limits import check_shape
from . import kernel


class _Geometry:
    """Where each output position's windows lie in the inputs padded by pad_size + radius."""

    def __init__(self, k, x: np.ndarray):
        pad, size, self.reach = k.attr("pad_size"), k.attr("kernel_size"), k.attr("max_displacement")
        self.stride, stride2 = k.attr("stride1"), k.attr("stride2")
        self.radius, steps = (size - 1) // 2, self.reach // max(stride2, 1)
        self.sides = [-(-(d + 2 * pad - 2 * (self.radius + self.reach)) // max(self.stride, 1)) for d in x.shape[2:]]
        if x.ndim != 4 or size < 1 or size % 2 == 0 or min(self.stride, stride2) < 1 or min(self.sides) < 1:
            raise ValueError(f"correlation of {list(x.shape)}: kernel_size {size}, strides {self.stride}, {stride2}, "
                             f"max_displacement {self.reach} and pad_size {pad} give no output")
        self.margin = pad + self.radius
        self.displacements = [(dy * stride2, dx * stride2) for dy in range(-steps, steps + 1)
                              for dx in range(-steps, steps + 1)]
        span = range(-self.radius, self.radius + 1)
        self.window = [(j, i) for j in span for i in span]
        self.count = size * size * x.shape[1]   # the products each output averages

    def padded(self, x: np.ndarray) -> np.ndarray:
        m = self.margin
        return np.pad(x, ((0, 0), (0, 0), (m, m), (m, m)))

    def view(self, down: int, right: int):
        """The strided rows and columns at (down, right) from each output position's centre."""
        start = self.reach + self.radius
        rows, cols = (slice(start + shift, start + shift + (n - 1) * self.stride + 1, self.stride)
                      for shift, n in ((down, self.sides[0]), (right, self.sides[1])))
        return np.s_[:, :, rows, cols]

    def pairs(self):
        """(output channel, Input1's view, Input2's view) for every displacement and window offset."""
        for channel, (dy, dx) in enumerate(self.displacements):
            for j, i in self.window:
                yield channel, self.view(j, i), self.view(dy + j, dx + i)

    def unpadded(self, x: np.ndarray) -> np.ndarray:
        m = self.margin
        return x[:, :, m:x.shape[2] - m, m:x.shape[3] - m]


@kernel("correlation")
def correlation(k):
    x1, x2 = k.x("Input1"), k.x("Input2")
    geometry = _Geometry(k, x1)
    p1, p2 = geometry.padded(x1), geometry.padded(x2)
    out = np.zeros(check_shape((x1.shape[0], len(geometry.displacements), *geometry.sides), x1.dtype,
                               "correlation's Output"), x1.dtype)
    for channel, first, second in geometry.pairs():
        out[:, channel] += np.einsum("nchw,nchw->nhw", p1[first], p2[second])
    return {"Output": out / out.dtype.type(geometry.count)}


@kernel("correlation_grad")
def correlation_grad(k):
    x1, x2, dout = k.x("Input1"), k.x("Input2"), k.x("Output@GRAD")
    geometry = _Geometry(k, x1)
    p1, p2 = geometry.padded(x1), geometry.padded(x2)
    d1, d2 = np.zeros_like(p1), np.zeros_like(p2)
    scaled = dout / dout.dtype.type(geometry.count)
    for channel, first, second in geometry.pairs():
        weight = scaled[:, channel, None]
        d1[first] += p2[second] * weight   # one view's positions are distinct: += adds each once
        d2[second] += p1[first] * weight
    return k.grads({"Input1@GRAD": lambda: geometry.unpadded(d1), "Input2@GRAD": lambda: geometry.unpadded(d2)})
