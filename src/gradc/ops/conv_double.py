"""Paddle's legacy conv second-derivative ops, <conv>_grad_grad (a WGAN-GP critic's gradient penalty through
paddle.static.gradients), composite (gradc.ops.composite) so third derivatives follow; kernels in
gradc.executor.kernels.conv_double."""

from __future__ import annotations

from ..registry import defgrad, grads_like_inputs
from . import nn_double  # noqa: F401  (defines the conv grad ops these differentiate)
from .composite import first
from .conv import CONV_OPS, conv_attrs, conv_transpose_attrs
from .double_grad import _zeros_where_unreached

# the slot of ddI, the grad of the first grad op's Input@GRAD: Paddle names it after X for the transpose
DDI_SLOTS = {"conv2d_transpose": "grad_x@GRAD"}


def ddi_slot(forward: str) -> str:
    return DDI_SLOTS.get(forward, "grad_input@GRAD")


def _conv_again(forward: str):
    """Paddle's <conv>_grad_grad (a WGAN-GP critic's gradient penalty): with ddI, ddW the grads of Input@GRAD and
    Filter@GRAD, grad_out@GRAD = F(ddI, W) + F(I, ddW), Input@GRAD = G_I(ddW, dOut), Filter@GRAD = G_W(ddI, dOut)."""

    def expand(f, g):
        x, w, dout, ddx, ddw = (first(g.I(slot)) for slot in ("Input", "Filter", "grad_out", ddi_slot(forward),
                                                                  "grad_filter@GRAD"))
        terms = [f.op(forward, {"Input": a, "Filter": b}, dout, slot="Output", same=True)
                 for a, b in ((ddx, w), (x, ddw)) if a is not None and b is not None]
        outputs = {"grad_out@GRAD": terms[0] if len(terms) == 1 else f.add(*terms, dout)} if terms else {}
        for slot, args in (("Input@GRAD", {"Filter": ddw}), ("Filter@GRAD", {"Input": ddx})):
            if None not in args.values():
                point = {"Input": x, "Filter": w, "Output@GRAD": dout, **args}
                outputs[slot] = f.op(f"{forward}_grad", point, x if slot == "Input@GRAD" else w, slot=slot, same=True)
        return outputs

    return _zeros_where_unreached(expand)   # without ddW (ddI), Input@GRAD (Filter@GRAD) is zero


for _name, _attrs in ((*((n, conv_attrs(d)) for n, d in CONV_OPS.items()),
                       ("conv2d_transpose", conv_transpose_attrs(2)))):
    defgrad(f"{_name}_grad_grad", inputs=["Input", "Filter", "grad_out", f"{ddi_slot(_name)}?", "grad_filter@GRAD?"],
            outputs=["Input@GRAD?", "Filter@GRAD?", "grad_out@GRAD?"], attrs=_attrs, infer=grads_like_inputs,
            grad=_conv_again(_name), of=f"{_name}_grad")
