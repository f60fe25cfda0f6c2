"""Second derivative of lp_pool2d (out = (window sums of x^p)^(1/p)), composite (gradc.ops.composite) so third
derivatives follow: its grad x^(p-1) S(dOut out^(1-p)), S spreading each window's value over its cells, is
written again from x, the window sums and S as average pooling (zero padding counted) and its grad.
"""

from __future__ import annotations

from math import prod

from ..errors import GradError
from ..registry import defgrad
from . import pool  # noqa: F401  (registers lp_pool2d_grad)
from .composite import expansion, first
from .pool import KERNEL_SIZE_SLOTS

WINDOW_ATTRS = ("global_pooling", "strides", "paddings", "ceil_mode", "data_format", "padding_algorithm")


@expansion
def _lp_pool2d_grad(f, g):
    if g.I("KernelSizeTensor") or g.I("KernelSizeTensorList") or g.attr("adaptive"):
        raise GradError("lp_pool2d_grad: gradc differentiates it only with a kernel_size attribute, not adaptive")
    x, dout, p = first(g.I("x")), first(g.I("out@GRAD")), g.attr("norm_type")
    kernel = list(g.attr("kernel_size"))
    if g.attr("global_pooling"):
        spatial = g.shape(x)[1:3] if g.attr("data_format") == "NHWC" else g.shape(x)[2:]
        kernel = list(spatial)
    area = float(prod(kernel))
    window = {"pooling_type": "avg", "ksize": kernel, "exclusive": False, "adaptive": False,
              **{name: g.attr(name) for name in WINDOW_ATTRS}}
    sums = f.scale(f.op("pool2d", {"X": f.unary("pow", x, {"factor": p})}, dout, window), area)
    per_window = f.mul(dout, f.unary("pow", f.unary("pow", sums, {"factor": 1.0 / p}), {"factor": 1.0 - p}), dout)
    spread = f.op("pool2d_grad", {"X": x, "Out": sums, "Out@GRAD": f.scale(per_window, area)}, x, window,
                  slot="X@GRAD")
    return {"x@GRAD": f.mul(f.unary("pow", x, {"factor": p - 1.0}), spread, x)}


defgrad("lp_pool2d_grad", grad=_lp_pool2d_grad, no_grad_inputs=["out", *KERNEL_SIZE_SLOTS])
