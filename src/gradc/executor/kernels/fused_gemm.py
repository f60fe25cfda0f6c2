"""Kernels of gradc.ops.fused_gemm: fused_gemm_epilogue (a linear layer and its activation, cuBLASLt's GELU the tanh
approximation) and its grad."""

from __future__ import annotations

import numpy as np

from . import kernel
from .activation import _gelu, _gelu_grad
from .matmul import _matmul, _matmul_grads

ACTIVATE = {"none": lambda pre: pre, "relu": lambda pre: np.maximum(pre, 0), "gelu": lambda pre: _gelu(pre, True)}
DERIVE = {"none": lambda pre, d: d, "relu_grad": lambda pre, d: d * (pre > 0),
          "gelu_grad": lambda pre, d: _gelu_grad(pre, d, True)}


@kernel("fused_gemm_epilogue")
def fused_gemm_epilogue(k):
    pre = _matmul(k.x("X"), k.x("Y"), k.attr("trans_x"), k.attr("trans_y")) + k.x("Bias")
    return {"Out": ACTIVATE[k.attr("activation")](pre), **({"ReserveSpace": pre} if k.wants("ReserveSpace") else {})}


class _Both:
    """Stands for the kernel context when asking _matmul_grads for both of a matmul's grads."""

    @staticmethod
    def grads(makers: dict) -> dict:
        return {slot: make() for slot, make in makers.items()}


@kernel("fused_gemm_epilogue_grad")
def fused_gemm_epilogue_grad(k):
    dout, x, y, pre = k.x("DOut"), k.x("X"), k.x("Y"), k.optional("ReserveSpace")
    dpre = DERIVE[k.attr("activation_grad")](pre, dout)   # inference refuses an activation without ReserveSpace
    grads = _matmul_grads(_Both, x, y, dpre, k.attr("trans_x"), k.attr("trans_y"))
    return k.grads({"DX": lambda: grads["X@GRAD"], "DY": lambda: grads["Y@GRAD"],
                    "DBias": lambda: dpre.reshape(-1, dpre.shape[-1]).sum(axis=0)})
