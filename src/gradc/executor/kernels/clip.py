"""Kernels of gradc.ops.clip (the numpy rules live in optimizer_math)."""

from __future__ import annotations

from . import kernel
from . import optimizer_math as M

kernel("squared_l2_norm")(lambda k: {"Out": M.squared_l2_norm(k.x("X"))[0]})
# d(sum x^2)/dx = 2 x, times the [1] output grad
kernel("squared_l2_norm_grad")(lambda k: {"X@GRAD": 2 * k.x("X") * k.x("Out@GRAD").reshape(())})
kernel("clip_by_norm")(lambda k: {"Out": M.clip_by_norm(k.x("X"), k.attr("max_norm"))[0]})
